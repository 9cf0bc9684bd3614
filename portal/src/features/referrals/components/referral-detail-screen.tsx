/**
 * One referred decision, as an underwriter works it: the applicant (masked; Reveal shows the full
 * identity and is recorded), the reasons with their wording, score, grade and pricing, the actions
 * (approve with amount and plan, or for an auto loan amount financed and term with the buy,
 * contract rate and markup cap of the term previewed, and a counteroffer's reasons: required below
 * the requested amount or on another plan or term (ADR 0046); decline with one to four
 * reasons, request documents, add a condition: shown only to roles that may act), what was requested and attached, the action history
 * and the engine's audit record. Every action sends the version shown; if someone else acted first
 * the service answers 409 and the screen says who and when, and offers to reload.
 */
import { useState } from 'react';
import { Button } from '../../../components/button';
import { CopyableId } from '../../../components/copy';
import { Dialog } from '../../../components/dialog';
import { Badge, ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { Checkbox, SelectField, TextField } from '../../../components/form';
import { Card, DetailList, PageHeader } from '../../../components/page';
import { DataTable } from '../../../components/table';
import type { ApiError } from '../../../lib/api-client';
import { useEnvironment } from '../../../lib/environment';
import { formatDateTime, titleCase, toCents } from '../../../lib/format';
import { Link } from '../../../lib/router';
import { useSignedIn } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { referralsApi, type AutoLoanReferral, type Catalogue, type ReferralAction, type ReferralDetail, type RevealedApplicant } from '../api/referrals-api';

type ActionDialog = 'approve' | 'decline' | 'documents' | 'condition' | null;

const ACTION_LABELS: Record<ReferralAction['kind'], string> = {
  approved: 'Approved',
  declined: 'Declined',
  documents_requested: 'Documents requested',
  condition_added: 'Condition added',
  pii_revealed: 'Applicant details revealed',
  document_viewed: 'Document viewed',
  verification_reviewed: 'Verification reviewed',
};

function describeAction(a: ReferralAction): string {
  const d = a.details;
  switch (a.kind) {
    case 'approved': {
      const codes = Array.isArray(d.reason_codes) ? (d.reason_codes as string[]) : [];
      const why = codes.length > 0 ? `; counteroffer reasons ${codes.join(', ')}` : '';
      return d.plan === null || d.plan === undefined
        ? `${String(d.amount)} USD financed, ${String(d.term_months)} months, buy rate ${String(d.buy_rate)}%, contract rate ${String(d.contract_rate)}%, APR ${String(d.apr)}%${why}`
        : `${String(d.amount)} USD, ${String(d.plan)}, ${String(d.term_months)} months, APR ${String(d.apr)}%${why}`;
    }
    case 'declined':
      return (d.reason_codes as string[]).join(', ');
    case 'documents_requested':
      return (d.document_types as string[]).map(titleCase).join(', ');
    case 'condition_added':
      return `${titleCase(String(d.code))}${d.note ? `: ${String(d.note)}` : ''}`;
    case 'verification_reviewed':
      return titleCase(String(d.result));
    default:
      return '';
  }
}

function OutcomeBadge({ outcome }: { outcome: ReferralDetail['outcome'] }) {
  const tone = outcome === 'approved' ? 'success' : outcome === 'declined' ? 'danger' : outcome === 'referred' ? 'warning' : 'neutral';
  return <Badge tone={tone}>{titleCase(outcome ?? 'pending')}</Badge>;
}

/** Percent strings with two decimals ("6.99") added exactly, in basis points. */
function addRates(a: string, b: string): string {
  const bps = Math.round(Number(a) * 100) + Math.round(Number(b) * 100);
  return (bps / 100).toFixed(2);
}

/**
 * One to four catalogue reasons, most important first (the order they are ticked in): a decline's,
 * or a counteroffer's. AA-25 explains a referral only and is not offered.
 */
function ReasonPicker({ catalogue, legend, codes, onChange }: { catalogue: Catalogue; legend: string; codes: string[]; onChange(codes: string[]): void }) {
  const full = codes.length >= catalogue.max_decline_reasons;
  return (
    <>
      <fieldset className="field">
        <legend>{legend}</legend>
        {catalogue.reasons
          .filter((r) => r.allowed_on_decline)
          .map((r) => (
            <Checkbox
              key={r.code}
              label={`${r.code} ${r.reason}`}
              checked={codes.includes(r.code)}
              disabled={full && !codes.includes(r.code)}
              onChange={(e) => onChange(e.target.checked ? [...codes, r.code] : codes.filter((c) => c !== r.code))}
            />
          ))}
      </fieldset>
      <p className="muted small">{codes.length === 0 ? 'No reason chosen.' : `Chosen: ${codes.join(', ')}`}</p>
    </>
  );
}

/**
 * The reasons of an approval (ADR 0046): below the requested amount, or on another plan or term
 * than asked, it is a counteroffer and the picker is required (the notice owed if the consumer
 * does not take it names them); an approval as asked has none. `reasonCodes` is what to send:
 * undefined when the picker is hidden.
 */
function useCounterofferReasons(catalogue: Catalogue, requestedAmount: string, amount: string, otherTerms: boolean) {
  const [codes, setCodes] = useState<string[]>([]);
  const cents = toCents(amount.trim());
  const lower = cents !== null && cents < (toCents(requestedAmount) ?? 0);
  const shown = lower || otherTerms;
  const picker = shown ? (
    <ReasonPicker
      catalogue={catalogue}
      legend={
        lower
          ? `Counteroffer reasons: why not the full ${requestedAmount} USD, most important first (1 to ${catalogue.max_decline_reasons}, required)`
          : `Counteroffer reasons: why not the plan or term asked for, most important first (1 to ${catalogue.max_decline_reasons}, required)`
      }
      codes={codes}
      onChange={setCodes}
    />
  ) : null;
  return { picker, reasonCodes: shown && codes.length > 0 ? codes : undefined, missing: shown && codes.length === 0 };
}

/**
 * Auto loans: the amount financed (up to the requested one) and the term (the requested one unless
 * changed). The preview shows the term's buy rate, the dealer markup and the contract rate; a term
 * whose markup cap the dealer's markup exceeds is marked and the service would refuse it (422).
 */
function AutoLoanApproveForm({
  referral,
  auto,
  catalogue,
  busy,
  onSubmit,
}: {
  referral: ReferralDetail;
  auto: AutoLoanReferral;
  catalogue: Catalogue;
  busy: boolean;
  onSubmit(input: { amount: string; term_months: number; reason_codes?: string[] }): void;
}) {
  const requestedTerm = referral.requested_term_months ?? auto.loan.term_months;
  const [amount, setAmount] = useState(referral.requested_amount);
  const [term, setTerm] = useState(String(requestedTerm));
  const chosen = auto.pricing.terms.find((t) => t.term_months === Number(term));
  const markup = auto.dealer?.markup_rate_pct ?? '0.00';
  const reasons = useCounterofferReasons(catalogue, referral.requested_amount, amount, Number(term) !== requestedTerm);
  return (
    <form
      id="approve-form"
      className="stack"
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit({ amount: amount.trim(), term_months: Number(term), ...(reasons.reasonCodes ? { reason_codes: reasons.reasonCodes } : {}) });
      }}
    >
      <TextField label="Amount financed (USD)" inputMode="decimal" value={amount} onChange={(e) => setAmount(e.target.value)} hint={`From 0.01 up to the requested ${referral.requested_amount} USD financed.`} required />
      <SelectField label="Term (months)" value={term} onChange={(e) => setTerm(e.target.value)}>
        {auto.pricing.terms.map((t) => (
          <option key={t.term_months} value={t.term_months}>
            {t.term_months} months{t.term_months === auto.loan.term_months ? ' (requested)' : ''}
            {t.markup_allowed ? '' : ` (markup above the ${t.markup_cap_pct} cap)`}
            {t.collateral_rules.length > 0 ? ' (too long for this vehicle)' : ''}
          </option>
        ))}
      </SelectField>
      <p className="muted small" data-testid="auto-loan-preview">
        Priced at grade {auto.pricing.risk_grade ?? '—'}
        {auto.pricing.source === 'lowest_priced_grade' ? ' (no grade on this decision: the policy’s lowest grade with a buy rate)' : ''}:{' '}
        {chosen?.buy_rate
          ? auto.channel === 'indirect'
            ? `buy rate ${chosen.buy_rate}% + dealer markup ${markup} = contract rate ${addRates(chosen.buy_rate, markup)}%; the dealer's reserve is ${auto.pricing.dealer_reserve_share_pct}% of the markup's finance charge.`
            : `buy rate ${chosen.buy_rate}% (direct loan: the contract rate, no dealer reserve).`
          : 'the policy has no buy rate for this term.'}{' '}
        The schedule, APR and TILA disclosure are computed as for an automatic approval, dated today; the offer is valid 30 days.
      </p>
      {chosen && !chosen.markup_allowed ? (
        <Notice tone="warning">The dealer markup of {markup} is above the policy’s cap of {chosen.markup_cap_pct} for {chosen.term_months} months; choose a term it fits.</Notice>
      ) : null}
      {chosen && chosen.collateral_rules.length > 0 ? (
        <Notice tone="warning">The auto-loan policy’s collateral rules refuse {chosen.term_months} months for this vehicle ({chosen.collateral_rules.map(titleCase).join(', ')}); choose a shorter term.</Notice>
      ) : null}
      {reasons.picker}
      <Button type="submit" variant="primary" disabled={busy || reasons.missing || (chosen !== undefined && (!chosen.markup_allowed || chosen.collateral_rules.length > 0))}>
        {busy ? 'Approving…' : 'Approve'}
      </Button>
    </form>
  );
}

/** The vehicle, loan, LTV, channel, dealer and markup of an auto loan. */
function AutoLoanCard({ auto }: { auto: AutoLoanReferral }) {
  const v = auto.vehicle;
  return (
    <Card title="Auto loan">
      <DetailList
        items={[
          ['Vehicle', `${v.year} ${v.make} ${v.model} (${v.condition}), ${v.mileage.toLocaleString('en-US')} miles`],
          ['VIN', <span key="vin" className="mono">{v.vin}</span>],
          ['Vehicle value', `${v.value} USD`],
          ['Loan', `${auto.loan.amount} USD − ${auto.loan.down_payment} down − ${auto.loan.trade_in_value} trade-in = ${auto.loan.amount_financed} USD financed`],
          ['Term requested', `${auto.loan.term_months} months`],
          ['Loan-to-value', `${auto.ltv}%`],
          ['Channel', auto.channel === 'indirect' ? `Indirect, dealer ${auto.dealer?.name ?? '—'}` : 'Direct'],
          ...(auto.dealer ? ([['Dealer markup', `${auto.dealer.markup_rate_pct} percentage points`]] as Array<[string, string]>) : []),
          ['Pricing', `Grade ${auto.pricing.risk_grade ?? '—'} (${auto.pricing.source === 'decision' ? 'this decision' : 'lowest grade with a buy rate'}), policy ${auto.pricing.policy_version}`],
        ]}
      />
      <DataTable
        caption="Buy rate and markup cap by term"
        rows={auto.pricing.terms}
        rowKey={(t) => String(t.term_months)}
        empty="No terms."
        columns={[
          { header: 'Term', cell: (t) => `${t.term_months} months` },
          { header: 'Buy rate', cell: (t) => (t.buy_rate ? `${t.buy_rate}%` : 'Not priced') },
          { header: 'Markup cap', cell: (t) => `${t.markup_cap_pct}` },
          { header: 'Markup fits', cell: (t) => (auto.channel === 'direct' ? '—' : t.markup_allowed ? 'Yes' : 'No') },
          { header: 'Collateral', cell: (t) => (t.collateral_rules.length > 0 ? t.collateral_rules.map(titleCase).join(', ') : 'OK') },
        ]}
      />
    </Card>
  );
}

/** The first plan (in the catalogue's order) whose range holds the amount: the ranges come from the service, never from here. */
function defaultPlan(amount: string, plans: Catalogue['plans']): string {
  const cents = toCents(amount);
  const fits = plans.find((p) => cents !== null && cents >= (toCents(p.min_amount) ?? Infinity) && cents <= (toCents(p.max_amount) ?? -Infinity));
  return (fits ?? plans[plans.length - 1])?.plan ?? '';
}

function ApproveForm({
  referral,
  catalogue,
  busy,
  onSubmit,
}: {
  referral: ReferralDetail;
  catalogue: Catalogue;
  busy: boolean;
  onSubmit(input: { amount: string; plan: string; term_months: number | null; reason_codes?: string[] }): void;
}) {
  const start = referral.recommended_amount ?? referral.requested_amount;
  const [amount, setAmount] = useState(start);
  const [plan, setPlan] = useState(referral.requested_plan ?? defaultPlan(start, catalogue.plans));
  const [term, setTerm] = useState<string>('');
  const rate = referral.pricing?.rates_bps[plan];
  // "By amount" keeps the requested term when there was one (the service's default).
  const otherTerms = (referral.requested_plan !== null && plan !== referral.requested_plan) || (referral.requested_term_months !== null && plan === 'monthly' && term !== '' && Number(term) !== referral.requested_term_months);
  const reasons = useCounterofferReasons(catalogue, referral.requested_amount, amount, otherTerms);
  return (
    <form
      id="approve-form"
      className="stack"
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit({ amount: amount.trim(), plan, term_months: plan === 'monthly' && term ? Number(term) : null, ...(reasons.reasonCodes ? { reason_codes: reasons.reasonCodes } : {}) });
      }}
    >
      <TextField label="Approved amount (USD)" inputMode="decimal" value={amount} onChange={(e) => setAmount(e.target.value)} hint={`From 0.01 up to the requested ${referral.requested_amount} USD.`} required />
      <SelectField label="Plan" value={plan} onChange={(e) => setPlan(e.target.value)}>
        {catalogue.plans.map((p) => (
          <option key={p.plan} value={p.plan}>
            {titleCase(p.plan)} ({p.min_amount} to {p.max_amount} USD)
          </option>
        ))}
      </SelectField>
      {plan === 'monthly' ? (
        <SelectField label="Term (months)" value={term} onChange={(e) => setTerm(e.target.value)}>
          <option value="">By amount (service default)</option>
          {catalogue.monthly_terms.map((n) => (
            <option key={n} value={n}>
              {n} months
            </option>
          ))}
        </SelectField>
      ) : null}
      <p className="muted small">
        Priced at grade {referral.pricing?.risk_grade ?? '—'}
        {referral.pricing?.source === 'lowest_priced_grade' ? ' (no grade on this decision: the policy’s lowest priced grade)' : ''}: {rate === null || rate === undefined ? 'this plan is not priced' : `${(rate / 100).toFixed(2)}% nominal`}. The schedule, APR and TILA disclosure are computed as for an automatic approval, dated today; the offer is valid 30 days.
      </p>
      {reasons.picker}
      <Button type="submit" variant="primary" disabled={busy || reasons.missing}>
        {busy ? 'Approving…' : 'Approve'}
      </Button>
    </form>
  );
}

function DeclineForm({ catalogue, busy, onSubmit }: { catalogue: Catalogue; busy: boolean; onSubmit(codes: string[]): void }) {
  const [codes, setCodes] = useState<string[]>([]);
  return (
    <form
      className="stack"
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit(codes);
      }}
    >
      <ReasonPicker catalogue={catalogue} legend={`Reasons, most important first (1 to ${catalogue.max_decline_reasons})`} codes={codes} onChange={setCodes} />
      <Button type="submit" variant="danger" disabled={busy || codes.length === 0}>
        {busy ? 'Declining…' : 'Decline'}
      </Button>
    </form>
  );
}

function DocumentsForm({ catalogue, busy, onSubmit }: { catalogue: Catalogue; busy: boolean; onSubmit(types: string[], note: string | null): void }) {
  const [types, setTypes] = useState<string[]>([]);
  const [note, setNote] = useState('');
  return (
    <form
      className="stack"
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit(types, note.trim() || null);
      }}
    >
      <fieldset className="field">
        <legend>Documents to request</legend>
        {catalogue.document_types.map((t) => (
          <Checkbox key={t} label={titleCase(t)} checked={types.includes(t)} onChange={(e) => setTypes(e.target.checked ? [...types, t] : types.filter((x) => x !== t))} />
        ))}
      </fieldset>
      <TextField label="Note for the file (optional, never sent to the applicant or in webhooks)" value={note} maxLength={1000} onChange={(e) => setNote(e.target.value)} />
      <Button type="submit" variant="primary" disabled={busy || types.length === 0}>
        {busy ? 'Requesting…' : 'Request documents'}
      </Button>
    </form>
  );
}

function ConditionForm({ catalogue, busy, onSubmit }: { catalogue: Catalogue; busy: boolean; onSubmit(code: string, note: string | null): void }) {
  const [code, setCode] = useState(catalogue.condition_codes[0] ?? 'other');
  const [note, setNote] = useState('');
  return (
    <form
      className="stack"
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit(code, note.trim() || null);
      }}
    >
      <SelectField label="Condition" value={code} onChange={(e) => setCode(e.target.value)}>
        {catalogue.condition_codes.map((c) => (
          <option key={c} value={c}>
            {titleCase(c)}
          </option>
        ))}
      </SelectField>
      <TextField label="Note (optional)" value={note} maxLength={1000} onChange={(e) => setNote(e.target.value)} />
      <Button type="submit" variant="primary" disabled={busy}>
        {busy ? 'Adding…' : 'Add condition'}
      </Button>
    </form>
  );
}

export function ReferralDetailScreen({ id }: { id: string }) {
  const environment = useEnvironment();
  const session = useSignedIn();
  const detail = useAsync(() => referralsApi.get(environment, id), [environment, id]);
  const catalogue = useAsync(() => referralsApi.catalogue(), []);
  const [dialog, setDialog] = useState<ActionDialog>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [conflict, setConflict] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [revealed, setRevealed] = useState<RevealedApplicant | null>(null);
  const r = detail.data?.referral;
  const canAct = session.can('referrals:act') && r?.outcome === 'referred';

  const run = async (action: (version: number) => Promise<string>) => {
    if (!r) return;
    setBusy(true);
    setError(null);
    setConflict(null);
    setMessage(null);
    try {
      setMessage(await action(r.version));
      setDialog(null);
      detail.reload();
    } catch (err) {
      const e = err as ApiError;
      if (e.code === 'decision_version_conflict') {
        setConflict(e.message);
        setDialog(null);
      } else setError(e);
    } finally {
      setBusy(false);
    }
  };

  if (detail.loading && !r) return <Loading />;
  if (!r) {
    return (
      <>
        <PageHeader title="Decision not found" />
        <ErrorNotice error={detail.error} title="Could not load the decision" />
        <Link to={`/${environment}/referrals`}>Back to the referral queue</Link>
      </>
    );
  }

  return (
    <>
      <p className="breadcrumb">
        <Link to={`/${environment}/referrals`}>Referral queue</Link> <span aria-hidden="true">/</span> Decision
      </p>
      <PageHeader
        title="Referred decision"
        description={
          <>
            {r.requested_amount} {r.currency} at {r.merchant_name} · <OutcomeBadge outcome={r.outcome} />
          </>
        }
        actions={
          canAct ? (
            <>
              <Button variant="primary" onClick={() => setDialog('approve')}>
                Approve
              </Button>
              <Button variant="danger" onClick={() => setDialog('decline')}>
                Decline
              </Button>
              <Button onClick={() => setDialog('documents')}>Request documents</Button>
              <Button onClick={() => setDialog('condition')}>Add condition</Button>
            </>
          ) : r.adverse_action !== null && session.can('pii:reveal') ? (
            // Worked into a decline or a counteroffer: the notice owed is one step away for whoever made it.
            <Link className="btn btn-secondary" to={`/${environment}/decisions/${r.decision_id}/notice`}>
              Adverse-action notice
            </Link>
          ) : null
        }
      />
      {conflict ? (
        <Notice tone="warning" title="Someone else acted on this decision first">
          <p>{conflict}</p>
          <Button
            size="small"
            onClick={() => {
              setConflict(null);
              detail.reload();
            }}
          >
            Reload decision
          </Button>
        </Notice>
      ) : null}
      {message ? <Notice tone="success">{message}</Notice> : null}
      <ErrorNotice error={error} />
      {r.outcome !== 'referred' ? (
        <Notice tone="info" title={`This decision is ${r.outcome ?? 'pending'}`}>
          <p>It is no longer in the queue. Its history and audit record stay below.</p>
        </Notice>
      ) : null}

      <div className="grid-2">
        <Card
          title="Applicant"
          actions={
            session.can('pii:reveal') && !revealed ? (
              <Button size="small" onClick={() => void referralsApi.reveal(environment, r.decision_id).then((x) => { setRevealed(x.applicant); detail.reload(); }, (e: unknown) => setError(e as ApiError))}>
                Reveal
              </Button>
            ) : null
          }
        >
          {revealed ? (
            <DetailList
              items={[
                ['Name', `${revealed.first_name} ${revealed.last_name}`],
                ['Email', revealed.email],
                ['Phone', revealed.phone ?? '—'],
                ['Date of birth', revealed.dob],
                ['Address', [revealed.address.line1, revealed.address.line2, `${revealed.address.city}, ${revealed.address.state} ${revealed.address.zip}`].filter(Boolean).join(', ')],
              ]}
            />
          ) : (
            <DetailList
              items={[
                ['Initials', r.applicant?.initials ?? '—'],
                ['Email', r.applicant?.email ?? '—'],
                ['Phone', r.applicant?.phone ?? '—'],
                ['State', r.applicant?.state ?? '—'],
              ]}
            />
          )}
          <p className="muted small">{revealed ? 'Revealed for you; this was recorded in the history.' : 'Masked. Revealing the full details is recorded with your name and the time.'}</p>
        </Card>
        <Card title="Decision">
          <DetailList
            items={[
              ['Decision ID', <CopyableId key="id" value={r.decision_id} label="Decision ID" />],
              ['Product', r.product === 'auto_loan' ? 'Auto loan' : 'BNPL'],
              ['Requested', `${r.requested_amount} ${r.currency}${r.product === 'auto_loan' ? ` financed, ${r.requested_term_months ?? ''} months` : r.requested_plan ? `, ${r.requested_plan}` : ''}`],
              ['Score', r.score ?? 'Not scored'],
              ['Risk grade', r.risk_grade ?? 'None'],
              ...(r.pricing
                ? ([['Pricing', `Grade ${r.pricing.risk_grade ?? '—'} (${r.pricing.source === 'decision' ? 'this decision' : 'lowest priced grade'}), policy ${r.pricing.policy_version}`]] as Array<[string, string]>)
                : []),
              ['Identity check', `${titleCase(r.kyc_tier)} tier, ${r.kyc_status}`],
              ['Referred', formatDateTime(r.referred_at)],
              ['Version', r.version],
              ...(r.outcome === 'approved'
                ? ([
                    ['Approved', `${r.approved_amount ?? ''} ${r.currency}${r.plan ? `, ${r.plan}` : r.product === 'auto_loan' ? ' financed' : ''}, ${r.term_months ?? ''} months, APR ${r.apr ?? ''}%`],
                    ['Offer expires', formatDateTime(r.expires_at)],
                  ] as Array<[string, string]>)
                : []),
            ]}
          />
        </Card>
      </div>

      {r.auto_loan ? <AutoLoanCard auto={r.auto_loan} /> : null}

      <Card title={r.outcome === 'declined' ? 'Decline reasons' : 'Reasons for referral'}>
        <ul className="plain-list">
          {r.reasons.map((x) => (
            <li key={x.code}>
              <strong className="mono">{x.code}</strong> {x.reason}
            </li>
          ))}
          {r.reasons.length === 0 ? <li className="muted">None</li> : null}
        </ul>
      </Card>

      {r.document_requests.length > 0 || r.conditions.length > 0 || r.documents.length > 0 ? (
        <Card title="Requests and conditions">
          {r.document_requests.map((d) => (
            <div key={d.id} className="stack">
              <p>
                <strong>Documents requested</strong> {formatDateTime(d.created_at)}: {d.document_types.map(titleCase).join(', ')}{' '}
                {d.fulfilled_at ? <Badge tone="success">Uploaded {formatDateTime(d.fulfilled_at)}</Badge> : <Badge tone="info">Waiting until {formatDateTime(d.expires_at)}</Badge>}
              </p>
              {d.note ? <p className="muted small">Note: {d.note}</p> : null}
              {!d.fulfilled_at && session.can('referrals:act') ? (
                <p className="small">
                  Upload link for the applicant: <CopyableId value={d.upload_url} label="Upload link" />
                </p>
              ) : null}
            </div>
          ))}
          {r.conditions.map((c) => (
            <p key={c.id}>
              <strong>Condition</strong> {titleCase(c.code)}
              {c.note ? `: ${c.note}` : ''} <span className="muted small">{formatDateTime(c.created_at)}</span>
            </p>
          ))}
          {r.documents.length > 0 ? (
            <p>
              {r.documents.length} uploaded document{r.documents.length === 1 ? '' : 's'}: review them in <Link to={`/${environment}/verification-review`}>Verification review</Link>.
            </p>
          ) : null}
        </Card>
      ) : null}

      <Card title="History">
        <DataTable
          caption="Action history"
          rows={r.actions}
          rowKey={(a) => a.id}
          empty="No one has acted on this decision yet."
          columns={[
            { header: 'When', cell: (a) => formatDateTime(a.created_at) },
            { header: 'Who', cell: (a) => a.user_name },
            { header: 'Action', cell: (a) => ACTION_LABELS[a.kind] },
            { header: 'Details', cell: (a) => describeAction(a) },
          ]}
        />
      </Card>

      <Card title="Audit record">
        <details>
          <summary>Inputs (PII redacted), features, partial scores, reasons, versions, timings and overrides</summary>
          <pre className="code-block">{JSON.stringify(r.audit_record, null, 2)}</pre>
        </details>
      </Card>

      {catalogue.data ? (
        <>
          <Dialog open={dialog === 'approve'} title="Approve this application" onClose={() => setDialog(null)}>
            <ErrorNotice error={error} />
            {r.auto_loan ? (
              <AutoLoanApproveForm
                referral={r}
                auto={r.auto_loan}
                catalogue={catalogue.data}
                busy={busy}
                onSubmit={(input) => void run(async (v) => {
                  const done = await referralsApi.approve(environment, r.decision_id, { expected_version: v, ...input });
                  return `Approved: ${String(done.decision.approved_amount)} ${r.currency} financed over ${String(done.decision.term_months)} months at ${String(done.decision.contract_rate)}% (APR ${String(done.decision.apr)}%). The next poll returns the approval and decision.adjusted was sent.`;
                })}
              />
            ) : (
              <ApproveForm
                referral={r}
                catalogue={catalogue.data}
                busy={busy}
                onSubmit={(input) => void run(async (v) => {
                  const done = await referralsApi.approve(environment, r.decision_id, { expected_version: v, ...input });
                  return `Approved: ${String(done.decision.approved_amount)} ${r.currency} at ${String(done.decision.apr)}% APR. The next poll returns the approval and decision.adjusted was sent.`;
                })}
              />
            )}
          </Dialog>
          <Dialog open={dialog === 'decline'} title="Decline this application" onClose={() => setDialog(null)}>
            <ErrorNotice error={error} />
            <DeclineForm
              catalogue={catalogue.data}
              busy={busy}
              onSubmit={(codes) => void run(async (v) => {
                await referralsApi.decline(environment, r.decision_id, { expected_version: v, reason_codes: codes });
                return `Declined with ${codes.join(', ')}. The next poll returns the decline and decision.adjusted was sent.`;
              })}
            />
          </Dialog>
          <Dialog open={dialog === 'documents'} title="Request documents" onClose={() => setDialog(null)}>
            <ErrorNotice error={error} />
            <DocumentsForm
              catalogue={catalogue.data}
              busy={busy}
              onSubmit={(types, note) => void run(async (v) => {
                const done = await referralsApi.requestDocuments(environment, r.decision_id, { expected_version: v, document_types: types, note });
                return `Documents requested. Send the applicant this upload link (also in the application.documents_requested event): ${done.document_request.upload_url}`;
              })}
            />
          </Dialog>
          <Dialog open={dialog === 'condition'} title="Add an approval condition" onClose={() => setDialog(null)}>
            <ErrorNotice error={error} />
            <ConditionForm
              catalogue={catalogue.data}
              busy={busy}
              onSubmit={(code, note) => void run(async (v) => {
                await referralsApi.addCondition(environment, r.decision_id, { expected_version: v, code, note });
                return `Condition added: ${titleCase(code)}. application.condition_added was sent.`;
              })}
            />
          </Dialog>
        </>
      ) : null}
    </>
  );
}
