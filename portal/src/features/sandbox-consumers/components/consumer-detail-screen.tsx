/** One sandbox consumer: identity, linked accounts, application history, and Reset consumer state. */
import { useState } from 'react';
import { Button } from '../../../components/button';
import { CopyableId } from '../../../components/copy';
import { ConfirmDialog } from '../../../components/dialog';
import { Badge, ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { Card, DetailList, PageHeader } from '../../../components/page';
import { DataTable, Pagination } from '../../../components/table';
import type { ApiError } from '../../../lib/api-client';
import { formatDateTime, titleCase } from '../../../lib/format';
import { Link } from '../../../lib/router';
import { useSignedIn } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { consumersApi } from '../api/consumers-api';
import { IdentityBadge, TierBadge } from './consumer-badges';

export function ConsumerDetailScreen({ id }: { id: string }) {
  const session = useSignedIn();
  const consumer = useAsync(() => consumersApi.get(id), [id]);
  const [page, setPage] = useState(1);
  const [refresh, setRefresh] = useState(0);
  const applications = useAsync(() => consumersApi.applications(id, page), [id, page, refresh]);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const c = consumer.data?.consumer;

  const reset = async () => {
    setBusy(true);
    setError(null);
    try {
      await consumersApi.reset(id);
      setConfirming(false);
      setMessage('Consumer state reset: identity is back to its seeded state and earlier applications no longer count as history.');
      consumer.reload();
      setPage(1);
      setRefresh((n) => n + 1);
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  if (consumer.loading && !c) return <Loading />;
  if (!c) {
    return (
      <>
        <PageHeader title="Consumer not found" />
        <ErrorNotice error={consumer.error} />
        <Link to="/sandbox/consumers">Back to sandbox consumers</Link>
      </>
    );
  }
  return (
    <>
      <p className="breadcrumb">
        <Link to="/sandbox/consumers">Sandbox consumers</Link> <span aria-hidden="true">/</span> {c.name}
      </p>
      <PageHeader
        eyebrow="Sandbox consumer"
        title={c.name}
        actions={
          session.can('consumers:reset') ? (
            <Button variant="danger" onClick={() => setConfirming(true)}>
              Reset consumer state
            </Button>
          ) : null
        }
      />
      {message ? <Notice tone="success">{message}</Notice> : null}
      <ErrorNotice error={error} />
      <div className="grid-2">
        <Card title="Identity">
          <DetailList
            items={[
              ['Consumer ID', <CopyableId key="id" value={c.id} label="Consumer ID" />],
              ['Tier', <TierBadge key="tier" tier={c.tier} />],
              ['Identity status', <IdentityBadge key="identity" status={c.identity_status} />],
              ['Email', c.email],
              ['Phone', c.phone ?? '—'],
              ['History reset', c.history_reset_at ? formatDateTime(c.history_reset_at) : 'Never'],
            ]}
          />
        </Card>
        <Card title="Linked accounts">
          {c.linked_accounts.length === 0 ? (
            <p className="muted">No linked accounts.</p>
          ) : (
            <ul className="plain-list">
              {c.linked_accounts.map((a) => (
                <li key={`${a.institution}-${a.mask}`}>
                  {titleCase(a.type)} · {a.institution} · ••••{a.mask}
                </li>
              ))}
            </ul>
          )}
        </Card>
      </div>
      <Card title="Application history">
        <ErrorNotice error={applications.error} />
        {applications.data ? (
          <>
            <DataTable
              caption="Applications"
              rows={applications.data.data}
              rowKey={(a) => a.decision_id}
              empty={c.history_reset_at ? 'No applications since the last reset.' : 'No applications yet.'}
              columns={[
                { header: 'Decision ID', cell: (a) => <code className="small">{a.decision_id}</code> },
                { header: 'Requested', cell: (a) => `${a.requested_amount} ${a.currency}` },
                { header: 'Status', cell: (a) => titleCase(a.status) },
                { header: 'Outcome', cell: (a) => (a.outcome ? <Badge tone={a.outcome === 'approved' ? 'success' : a.outcome === 'declined' ? 'danger' : 'warning'}>{titleCase(a.outcome)}</Badge> : '—') },
                { header: 'Tier', cell: (a) => titleCase(a.kyc_tier) },
                { header: 'Created', cell: (a) => formatDateTime(a.created_at) },
              ]}
            />
            <Pagination page={applications.data.page} pageSize={applications.data.page_size} total={applications.data.total} count={applications.data.data.length} onPage={setPage} />
          </>
        ) : (
          <Loading />
        )}
      </Card>
      <ConfirmDialog open={confirming} title="Reset this consumer?" confirmLabel="Reset consumer state" danger busy={busy} onConfirm={() => void reset()} onClose={() => setConfirming(false)}>
        <p>
          {c.seeded
            ? `${c.name} goes back to the seeded identity, identity status Verified and the seeded linked accounts.`
            : `${c.name}'s identity status goes back to Unverified.`}{' '}
          Earlier applications stop counting as history (for scoring and in this list); the decisions themselves are kept. Only your own sandbox is affected.
        </p>
      </ConfirmDialog>
    </>
  );
}
