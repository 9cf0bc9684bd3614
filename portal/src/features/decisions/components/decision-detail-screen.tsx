/**
 * One decision explained: what the API answered, the audit record (inputs with personal data
 * masked, features, partial scores with the points below each characteristic's maximum, reasons
 * with their wording, scorecard and policy versions, timings), every event it caused and every
 * webhook delivery of those events with each attempt.
 */
import { Badge, ErrorNotice, Loading } from '../../../components/feedback';
import { CopyableId } from '../../../components/copy';
import { Card, DetailList, PageHeader } from '../../../components/page';
import { DataTable } from '../../../components/table';
import { useEnvironment } from '../../../lib/environment';
import { formatDateTime, titleCase } from '../../../lib/format';
import { Link } from '../../../lib/router';
import { useSignedIn } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { decisionsApi, type DecisionDelivery, type DecisionDetail } from '../api/decisions-api';
import { OutcomeBadge, productLabel } from './outcome-badge';

function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <pre className="code-block" aria-label={label} tabIndex={0}>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}

function money(amount: string | null, currency: string): string {
  return amount === null ? '—' : `${amount} ${currency}`;
}

function ms(value: unknown): string {
  return typeof value === 'number' ? `${value} ms` : '—';
}

function DeliveryState({ d }: { d: DecisionDelivery }) {
  const tone = d.state === 'delivered' ? 'success' : d.state === 'failed' ? 'danger' : d.state === 'pending' ? 'info' : 'neutral';
  return <Badge tone={tone}>{titleCase(d.state)}</Badge>;
}

function Summary({ detail }: { detail: DecisionDetail }) {
  const s = detail.summary;
  const x = detail.explanation;
  return (
    <Card title="Summary">
      <DetailList
        items={[
          ['Decision ID', <CopyableId key="d" value={s.decision_id} label="Decision ID" />],
          ['Application ID', <code key="a">{s.application_id}</code>],
          ['Consumer ID', <CopyableId key="c" value={s.consumer_id} label="Consumer ID" />],
          ['Product', productLabel(s.product)],
          ['Outcome', <OutcomeBadge key="o" outcome={s.outcome} />],
          ['Identity verification', `${titleCase(s.kyc_tier)} · ${titleCase(s.kyc_status)}`],
          ['Requested', money(s.requested_amount, s.currency)],
          ['Approved', money(s.approved_amount, s.currency)],
          ['Plan', s.plan ? `${titleCase(s.plan)}${s.term_months ? `, ${s.term_months} months` : ''}` : '—'],
          ['APR', s.apr ? `${s.apr}%` : '—'],
          ['Score', s.score === null ? '—' : `${s.score}${x.risk_grade ? ` (grade ${x.risk_grade})` : ''}`],
          ['Created', formatDateTime(s.created_at)],
          ['Completed', formatDateTime(s.completed_at)],
          ['Decision latency', s.latency_ms === null ? '—' : `${s.latency_ms} ms`],
        ]}
      />
    </Card>
  );
}

/**
 * FCRA 615(a) (15 U.S.C. 1681m(a)): when a credit score was used in adverse action, the notice
 * gives the score, its range, its date, who provided the credit file and up to four key factors
 * (inquiries as a fifth when they lowered the score but are not in the four). These are the
 * score's factors, a list of their own beside the ECOA reasons above.
 */
function CreditScoreDisclosureCard({ disclosure: c }: { disclosure: NonNullable<DecisionDetail['explanation']['credit_score_disclosure']> }) {
  return (
    <Card title="Credit score disclosure (FCRA)">
      <p className="muted small">
        Owed with an adverse-action notice when this score was used: a decline, or a counteroffer the consumer does not take (FCRA 615(a)). The key factors are the score&rsquo;s own, most important first; they can differ from the reasons above, which put knock-out rules first.
      </p>
      <DetailList
        items={[
          ['Credit score', String(c.score)],
          ['Range of possible scores', c.range ? `${c.range.min} to ${c.range.max}` : '—'],
          ['Date', c.scored_at ? formatDateTime(c.scored_at) : '—'],
          ['Scored by', c.scorecard ? `the lender's scorecard ${c.scorecard}` : '—'],
          ['Credit file from', c.credit_file_source ?? '—'],
        ]}
      />
      {c.key_factors.length === 0 ? (
        <p className="muted">No factor lowered this score.</p>
      ) : (
        <ol className="reason-list" aria-label="Key factors that adversely affected the credit score, most important first">
          {c.key_factors.map((f) => (
            <li key={f.code}>
              <code>{f.code}</code> {f.reason ?? ''}
            </li>
          ))}
        </ol>
      )}
    </Card>
  );
}

export function DecisionDetailScreen({ id }: { id: string }) {
  const environment = useEnvironment();
  const session = useSignedIn();
  const detail = useAsync(() => decisionsApi.get(environment, id), [environment, id]);
  const d = detail.data;
  return (
    <>
      <PageHeader
        eyebrow={<Link to={`/${environment}/decisions`}>Decisions</Link>}
        title="Decision"
        description={<code className="break">{id}</code>}
        actions={
          // The notice names the applicant, so only those who may reveal applicants are offered it.
          // The service says whether one is owed (a decline, or an approval that is a counteroffer).
          d && session.can('pii:reveal') && d.summary.adverse_action !== null ? (
            <Link className="btn btn-secondary" to={`/${environment}/decisions/${id}/notice`}>
              Adverse-action notice
            </Link>
          ) : undefined
        }
      />
      <ErrorNotice error={detail.error} title="Could not load the decision" />
      {detail.loading && !d ? <Loading /> : null}
      {d ? (
        <>
          <Summary detail={d} />
          <Card title="Reasons">
            {d.explanation.counteroffer_reasons.length > 0 ? (
              <>
                <p>
                  Approved for less than requested or on other terms (a counteroffer). The principal reasons, for the adverse-action notice owed if the consumer does not take the offer (12 CFR 1002.9(a)(1)(iv)); <code>decision.finalized</code> carries them as <code>reason_codes</code>, or <code>decision.adjusted</code> when an underwriter approved:
                </p>
                <ol className="reason-list" aria-label="Counteroffer reasons, most important first">
                  {d.explanation.counteroffer_reasons.map((r) => (
                    <li key={r.code}>
                      <code>{r.code}</code> {r.reason}
                    </li>
                  ))}
                </ol>
              </>
            ) : d.explanation.reasons.length === 0 ? (
              <p className="muted">No adverse-action reasons (approved in full).</p>
            ) : (
              <ol className="reason-list" aria-label="Reasons, most important first">
                {d.explanation.reasons.map((r) => (
                  <li key={r.code}>
                    <code>{r.code}</code> {r.reason}
                  </li>
                ))}
              </ol>
            )}
          </Card>
          {d.explanation.credit_score_disclosure ? <CreditScoreDisclosureCard disclosure={d.explanation.credit_score_disclosure} /> : null}
          <Card title="Partial scores">
            <DataTable
              caption="Partial scores per characteristic, with the points below its maximum"
              rows={d.explanation.partial_scores}
              rowKey={(p) => p.characteristic}
              empty="Nothing was scored (pending, or decided by policy without the scorecard)."
              columns={[
                { header: 'Characteristic', cell: (p) => p.characteristic },
                { header: 'Value', cell: (p) => (p.data_present ? String(p.value) : <span className="muted">missing</span>) },
                { header: 'Attribute', cell: (p) => p.attribute },
                { header: 'Points', className: 'num', cell: (p) => p.points },
                { header: 'Maximum', className: 'num', cell: (p) => p.max_points },
                { header: 'Below maximum', className: 'num', cell: (p) => (p.points_below_maximum > 0 ? <strong>{p.points_below_maximum}</strong> : 0) },
                { header: 'Reason', cell: (p) => (p.points_below_maximum > 0 ? `${p.reason_code}${p.reason ? ` ${p.reason}` : ''}` : '—') },
              ]}
            />
          </Card>
          <Card title="Versions and timings">
            <DetailList
              items={[
                ['Engine version', <code key="v">{d.explanation.versions.engine_version ?? '—'}</code>],
                ['Scorecard', d.explanation.versions.scorecard ?? '—'],
                ['Policy', d.explanation.versions.policy ?? '—'],
                ['Engine code', d.explanation.versions.engine ?? '—'],
                ['Confidence', d.explanation.confidence ?? '—'],
                ['Credit data', ms(d.explanation.timings.creditDataMs)],
                ['Engine', ms(d.explanation.timings.engineMs)],
                ['Total before writing', ms(d.explanation.timings.preparedMs)],
              ]}
            />
          </Card>
          <Card title="Inputs (personal data masked) and features">
            <details>
              <summary>Inputs</summary>
              <Json value={d.explanation.inputs} label="Inputs" />
            </details>
            <details>
              <summary>Features</summary>
              <Json value={d.explanation.features} label="Features" />
            </details>
            <details>
              <summary>What the API answered</summary>
              <Json value={d.decision} label="API response" />
            </details>
          </Card>
          <Card title="Events">
            <DataTable
              caption="Events this decision caused, oldest first"
              rows={d.events}
              rowKey={(e) => e.id}
              empty="No events."
              columns={[
                { header: 'Time', cell: (e) => formatDateTime(e.created_at) },
                { header: 'Type', cell: (e) => <code>{e.type}</code> },
                { header: 'Event ID', cell: (e) => <code className="small">{e.id}</code> },
              ]}
            />
          </Card>
          <Card title="Webhook deliveries">
            {d.deliveries.length === 0 ? <p className="muted">No webhook endpoint was subscribed to these events.</p> : null}
            <ul className="delivery-list" aria-label="Webhook deliveries">
              {d.deliveries.map((w) => (
                <li key={w.id} className="attempt" data-testid="decision-delivery">
                  <div className="attempt-head">
                    <code>{w.event_type}</code>
                    <DeliveryState d={w} />
                    <span className="muted small break">
                      to {w.endpoint_url ? <Link to={`/${environment}/webhooks/${w.endpoint_id}`}>{w.endpoint_url}</Link> : 'a deleted endpoint'} · {w.attempts === 1 ? '1 attempt' : `${w.attempts} attempts`}
                    </span>
                  </div>
                  <ol className="attempt-list">
                    {w.attempt_history.map((a) => (
                      <li key={a.id}>
                        Attempt {a.attempt}: {a.error_kind === null ? <Badge tone="success">{a.response_status}</Badge> : <Badge tone="danger">{a.response_status ?? titleCase(a.error_kind)}</Badge>}{' '}
                        <span className="muted small">
                          {formatDateTime(a.created_at)} · {a.duration_ms} ms{a.error_detail ? ` · ${a.error_detail}` : ''}
                        </span>
                      </li>
                    ))}
                  </ol>
                </li>
              ))}
            </ul>
          </Card>
        </>
      ) : null}
    </>
  );
}
