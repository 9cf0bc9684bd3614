/**
 * One policy version: who made it and when, its tables (or JSON), "Test against sandbox" (the
 * fixed sandbox set decided by the version in force and by this one, side by side, nothing
 * stored) and Promote (confirmed; the previous active version is retired in the same step).
 */
import { useState } from 'react';
import { Button } from '../../../components/button';
import { ConfirmDialog } from '../../../components/dialog';
import { ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { Card, DetailList, PageHeader } from '../../../components/page';
import type { ApiError } from '../../../lib/api-client';
import { useEnvironment } from '../../../lib/environment';
import { formatDateTime } from '../../../lib/format';
import { Link, navigate, useLocation } from '../../../lib/router';
import { useSignedIn } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { creditPolicyApi, type SandboxOutcome, type SandboxTestResult, type StoredVersion } from '../api/credit-policy-api';
import { personName, StatusBadge } from './policy-screen';
import { PolicyTablesForm } from './policy-tables';

function Pair({ row, field, render }: { row: SandboxTestResult['rows'][number]; field: string; render(o: SandboxOutcome): string }) {
  const before = render(row.active);
  const after = render(row.draft);
  if (!row.changed.includes(field)) return <span>{after}</span>;
  return (
    <span className="diff">
      <del>{before}</del> <ins>{after}</ins>
    </span>
  );
}

/** BNPL rows show the plan's APR; auto-loan rows also show the pricing (buy rate, dealer markup), which is what a version changes most. */
function TestResults({ result, product }: { result: SandboxTestResult; product: string }) {
  const showPricing = product === 'auto_loan';
  const [onlyChanged, setOnlyChanged] = useState(false);
  const rows = onlyChanged ? result.rows.filter((r) => r.changed.length > 0) : result.rows;
  return (
    <Card
      title="Sandbox test"
      actions={
        <label className="checkbox">
          <input type="checkbox" checked={onlyChanged} onChange={(e) => setOnlyChanged(e.target.checked)} /> Only changed
        </label>
      }
    >
      <p>
        Where a value changes, the version in force is struck through and this version follows. {result.rows.length} sandbox applications decided by <code>{result.against}</code> (in force) and <code>{result.version.name}</code>:{' '}
        <strong>{result.changed_count === 0 ? 'no decision changes' : `${result.changed_count} ${result.changed_count === 1 ? 'application changes' : 'applications change'}`}</strong>. Nothing was stored; enhanced and hard tier
        applicants are decided as if their identity verification passed.
      </p>
      <div className="table-wrap">
        <table className="table sandbox-test">
          <caption className="visually-hidden">Sandbox applications, in force and with this version</caption>
          <thead>
            <tr>
              <th scope="col">Application</th>
              <th scope="col">Requested</th>
              <th scope="col">Outcome</th>
              <th scope="col">Grade</th>
              <th scope="col">Amount</th>
              {showPricing ? <th scope="col">Term and pricing</th> : null}
              <th scope="col">APR</th>
              <th scope="col">KYC tier</th>
              <th scope="col">Reasons</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id} className={r.changed.length > 0 ? 'is-changed' : undefined} data-case={r.id}>
                <th scope="row">{r.label}</th>
                <td className="num">{r.requested_amount}</td>
                <td className={`outcome outcome-${r.draft.outcome}`}>
                  <Pair row={r} field="outcome" render={(o) => o.outcome} />
                </td>
                <td>
                  <Pair row={r} field="risk_grade" render={(o) => o.risk_grade ?? '—'} />
                </td>
                <td className="num">
                  <Pair row={r} field="amount" render={(o) => o.amount ?? '—'} />
                </td>
                {showPricing ? (
                  <td>
                    <Pair row={r} field="plan" render={(o) => o.plan} />
                  </td>
                ) : null}
                <td className="num">
                  <Pair row={r} field="apr" render={(o) => (o.apr === null ? '—' : `${o.apr}%`)} />
                </td>
                <td>
                  <Pair row={r} field="kyc_tier" render={(o) => o.kyc_tier} />
                </td>
                <td className="reasons">
                  <Pair row={r} field="reasons" render={(o) => (o.reasons.length === 0 ? '—' : o.reasons.join(', '))} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}

export function PolicyVersionScreen({ product, id }: { product: string; id: string }) {
  const environment = useEnvironment();
  const session = useSignedIn();
  const { query } = useLocation();
  const detail = useAsync(() => creditPolicyApi.get(environment, product, id), [environment, product, id]);
  const [result, setResult] = useState<SandboxTestResult | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [promoted, setPromoted] = useState(false);
  const canWrite = session.can('policy:write');
  const version = detail.data?.version as StoredVersion | undefined;

  const runTest = async () => {
    setBusy(true);
    setError(null);
    try {
      setResult(await creditPolicyApi.test(environment, product, id));
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };
  const promote = async () => {
    setBusy(true);
    setError(null);
    try {
      await creditPolicyApi.promote(environment, product, id);
      setConfirming(false);
      setPromoted(true);
      setResult(null);
      detail.reload();
    } catch (err) {
      setConfirming(false);
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <nav className="breadcrumb" aria-label="Breadcrumb">
        <Link to={`/${environment}/credit-policy`}>Credit policy</Link> / {version?.name ?? 'Version'}
      </nav>
      <ErrorNotice error={detail.error} title="Could not load the version" />
      {detail.loading && !detail.data ? <Loading /> : null}
      {version && detail.data ? (
        <>
          <PageHeader
            title={version.name}
            description={version.note ?? undefined}
            actions={
              canWrite ? (
                <>
                  <Button onClick={() => navigate(`/${environment}/credit-policy/${product}/new?base=${version.id}`)}>Edit as new version</Button>
                  {version.status !== 'active' ? (
                    <>
                      <Button onClick={() => void runTest()} disabled={busy}>
                        {busy && !confirming ? 'Testing…' : 'Test against sandbox'}
                      </Button>
                      <Button variant="primary" onClick={() => setConfirming(true)} disabled={busy}>
                        Promote
                      </Button>
                    </>
                  ) : null}
                </>
              ) : null
            }
          />
          {query.get('saved') && version.status === 'draft' && !promoted ? <Notice tone="success" title="Draft saved">Test it against the sandbox, then promote it to make it decide.</Notice> : null}
          {promoted ? <Notice tone="success" title="Promoted">{`${version.name} now decides every ${environment} application. The next decision names it in engine_version.`}</Notice> : null}
          <ErrorNotice error={error} title="That did not work" />
          <Card title="Version">
            <DetailList
              items={[
                ['Status', <StatusBadge key="s" version={version} />],
                ['engine_version', <code key="e" className="break">{version.engine_version}</code>],
                ['Scorecard', <code key="c">{version.scorecard_version}</code>],
                ['Based on', version.based_on ? <code key="b">{version.based_on}</code> : 'An uploaded document'],
                ['Created', `${formatDateTime(version.created_at)} by ${personName(version.created_by)}`],
                ['Promoted', version.promoted_at ? `${formatDateTime(version.promoted_at)} by ${personName(version.promoted_by)}` : 'Not yet'],
                ['Retired', version.retired_at ? formatDateTime(version.retired_at) : '—'],
              ]}
            />
          </Card>
          {result ? <TestResults result={result} product={product} /> : null}
          <Card title="Policy">
            {detail.data.tables ? <PolicyTablesForm tables={detail.data.tables} readOnly /> : <Notice tone="info">{`No structured view: ${detail.data.tables_unavailable_reason ?? ''}`}</Notice>}
            <details className="json-details">
              <summary>JDM document (JSON)</summary>
              <pre className="code-block">{JSON.stringify(detail.data.document, null, 2)}</pre>
            </details>
          </Card>
          <ConfirmDialog
            open={confirming}
            title={`Promote ${version.name}?`}
            confirmLabel="Promote"
            busy={busy}
            onConfirm={() => void promote()}
            onClose={() => setConfirming(false)}
          >
            <p>
              From the next decision on, every <strong>{environment}</strong> application is decided by <code>{version.name}</code>. The version in force now is retired and kept; you can promote it
              again to roll back.
            </p>
            {environment === 'live' ? <Notice tone="warning">This is the live environment: real applicants are affected at once.</Notice> : null}
          </ConfirmDialog>
        </>
      ) : null}
    </>
  );
}
