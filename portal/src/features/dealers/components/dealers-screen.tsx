/**
 * Dealers: the dealerships of this environment's network that indirect auto loans may name (by
 * dealer ID), with their status; Add dealer, Edit, Disable (confirmation) and Re-enable for roles
 * with `dealers:write`. Disabling is soft: the dealer stays listed and its past decisions keep
 * naming it, but new indirect applications naming it are refused (422). Every add and disable is
 * announced to webhook endpoints (`dealer.added`, `dealer.removed`), so a re-enable is an add.
 * Edit sends the version it loaded: if someone else edited the dealer since, the service answers
 * 409 and the dialog says so and offers to reload the dealer as it now is.
 */
import { useState } from 'react';
import { Button } from '../../../components/button';
import { CopyableId } from '../../../components/copy';
import { ConfirmDialog, Dialog } from '../../../components/dialog';
import { Badge, ConflictNotice, ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { SelectField } from '../../../components/form';
import { Card, PageHeader } from '../../../components/page';
import { DataTable } from '../../../components/table';
import type { ApiError } from '../../../lib/api-client';
import { useEnvironment } from '../../../lib/environment';
import { formatDateTime } from '../../../lib/format';
import { setQuery, useLocation } from '../../../lib/router';
import { useSignedIn } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { useVersionedSave } from '../../../lib/use-versioned-save';
import { dealersApi, type Dealer } from '../api/dealers-api';
import { DealerFields, useDealerForm } from './dealer-form';
import { US_STATES } from './us-states';

const stateName = new Map(US_STATES);

export function DealerStatusBadge({ dealer }: { dealer: Dealer }) {
  return dealer.status === 'active' ? <Badge tone="success">Active</Badge> : <Badge tone="neutral">Disabled</Badge>;
}

/**
 * Add (no `dealer`) or Edit (`dealer` given). Mounted only while open, so each opening starts fresh.
 * `onReloaded`: the dialog fetched the dealer again after a conflict (the list should too).
 */
function DealerDialog({ dealer, onClose, onSaved, onReloaded }: { dealer?: Dealer; onClose(): void; onSaved(saved: Dealer, message: string): void; onReloaded?(fresh: Dealer): void }) {
  const environment = useEnvironment();
  // The dealer as last loaded: what the form compares with, and the version an edit sends.
  const [loaded, setLoaded] = useState(dealer);
  const form = useDealerForm(loaded);
  // `conflict`: someone else edited it since it was loaded; nothing was saved, and Reload offers the dealer as it now is.
  const edit = useVersionedSave('dealer_version_conflict');
  const { busy, error, conflict } = edit;

  const submit = async () => {
    form.touch();
    if (!form.valid) return;
    const changes = form.changes();
    if (loaded && Object.keys(changes).length === 0) {
      onClose();
      return;
    }
    await edit.save(async () => {
      const saved = loaded ? await dealersApi.update(environment, loaded.id, changes, loaded.version) : await dealersApi.create(environment, form.value);
      onSaved(saved, loaded ? `${saved.name} was updated.` : `${saved.name} was added. Indirect auto loans can name it by its dealer ID.`);
    });
  };

  const reload = async () => {
    if (!loaded) return;
    await edit.reload(async () => {
      const fresh = await dealersApi.get(environment, loaded.id);
      setLoaded(fresh);
      form.reset(fresh);
      onReloaded?.(fresh);
    });
  };

  const title = dealer ? 'Edit dealer' : `Add ${environment} dealer`;
  return (
    <Dialog
      open
      title={title}
      onClose={onClose}
      footer={
        <>
          <Button onClick={onClose}>Cancel</Button>
          {/* Not while a conflict is shown: the same save would be refused again. */}
          <Button variant="primary" onClick={() => void submit()} disabled={busy || conflict !== null}>
            {busy ? 'Saving…' : dealer ? 'Save changes' : 'Add dealer'}
          </Button>
        </>
      }
    >
      <ConflictNotice message={conflict} what="dealer" onReload={() => void reload()} busy={busy} />
      <ErrorNotice error={error} title={dealer ? 'Could not save the dealer' : 'Could not add the dealer'} />
      <DealerFields form={form} />
    </Dialog>
  );
}

type StatusFilter = 'all' | 'active' | 'disabled';

export function DealersScreen() {
  const environment = useEnvironment();
  const session = useSignedIn();
  const { query } = useLocation();
  const raw = query.get('status');
  const status: StatusFilter = raw === 'active' || raw === 'disabled' ? raw : 'all';
  const dealers = useAsync(() => dealersApi.list(environment), [environment]);
  const [adding, setAdding] = useState(false);
  const [editing, setEditing] = useState<Dealer | null>(null);
  const [disabling, setDisabling] = useState<Dealer | null>(null);
  const [busyId, setBusyId] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const canWrite = session.can('dealers:write');

  const saved = (_dealer: Dealer, text: string) => {
    setAdding(false);
    setEditing(null);
    setError(null);
    setMessage(text);
    dealers.reload();
  };

  const changeStatus = async (dealer: Dealer, to: 'active' | 'disabled') => {
    setBusyId(dealer.id);
    setError(null);
    setMessage(null);
    try {
      const updated = to === 'disabled' ? await dealersApi.disable(environment, dealer.id) : await dealersApi.enable(environment, dealer.id);
      setMessage(
        to === 'disabled'
          ? `${updated.name} was disabled. New indirect auto-loan applications naming it are refused; decisions already made are unchanged.`
          : `${updated.name} is active again. Indirect auto loans can name it.`,
      );
      setDisabling(null);
      dealers.reload();
    } catch (err) {
      setError(err as ApiError);
      setDisabling(null);
    } finally {
      setBusyId(null);
    }
  };

  const all = dealers.data?.data ?? [];
  const rows = status === 'all' ? all : all.filter((d) => d.status === status);
  const counts = { active: all.filter((d) => d.status === 'active').length, disabled: all.filter((d) => d.status === 'disabled').length };

  return (
    <>
      <PageHeader
        eyebrow="Auto loans"
        title="Dealers"
        description={
          <>
            The dealerships in your {environment} network. An indirect auto-loan application names one by its dealer ID (<code>dealer.dealer_id</code>); a disabled or unknown dealer is refused with 422.
          </>
        }
        actions={
          canWrite ? (
            <Button variant="primary" onClick={() => setAdding(true)}>
              Add dealer
            </Button>
          ) : null
        }
      />
      {!canWrite ? <Notice tone="info">Your role can view dealers but not add, edit, disable or re-enable them. Ask an admin or developer.</Notice> : null}
      {message ? <Notice tone="success">{message}</Notice> : null}
      <ErrorNotice error={error} />
      <Card
        title={`${environment === 'live' ? 'Live' : 'Sandbox'} dealers`}
        actions={
          <SelectField label="Status" value={status} onChange={(e) => setQuery({ status: e.target.value === 'all' ? null : e.target.value })} className="inline-field">
            <option value="all">All ({all.length})</option>
            <option value="active">Active ({counts.active})</option>
            <option value="disabled">Disabled ({counts.disabled})</option>
          </SelectField>
        }
      >
        {dealers.loading && !dealers.data ? <Loading /> : null}
        <ErrorNotice error={dealers.error} title="Could not load dealers" />
        {dealers.data ? (
          <DataTable
            caption="Dealers"
            rows={rows}
            rowKey={(d) => d.id}
            empty={all.length === 0 ? `No ${environment} dealers yet.${canWrite ? ' Add the dealerships that send you indirect applications.' : ''}` : 'No dealers match.'}
            columns={[
              { header: 'Name', cell: (d) => <strong>{d.name}</strong> },
              { header: 'Dealer ID', cell: (d) => <CopyableId value={d.id} label={`Dealer ID of ${d.name}`} /> },
              { header: 'License number', cell: (d) => d.license_number ?? '—' },
              { header: 'State', cell: (d) => (d.state ? <span title={stateName.get(d.state)}>{d.state}</span> : '—') },
              {
                header: 'Status',
                cell: (d) => (
                  <>
                    <DealerStatusBadge dealer={d} />
                    {d.status === 'disabled' && d.disabled_at ? <span className="muted small status-note" title={formatDateTime(d.disabled_at)}>since {formatDateTime(d.disabled_at).slice(0, 10)}</span> : null}
                  </>
                ),
              },
              // Viewers get no empty Actions column: the table stays readable on a tablet.
              ...(canWrite
                ? [
                    {
                      header: 'Actions',
                      className: 'col-actions',
                      cell: (d: Dealer) => (
                        <span className="row-actions">
                          {/* Not while the list reloads after a save: the dialog would start from the version before it. */}
                          <Button size="small" onClick={() => setEditing(d)} aria-label={`Edit ${d.name}`} disabled={dealers.loading}>
                            Edit
                          </Button>
                          {d.status === 'active' ? (
                            <Button size="small" variant="danger" onClick={() => setDisabling(d)} aria-label={`Disable ${d.name}`}>
                              Disable
                            </Button>
                          ) : (
                            <Button size="small" disabled={busyId === d.id} onClick={() => void changeStatus(d, 'active')} aria-label={`Re-enable ${d.name}`}>
                              {busyId === d.id ? 'Re-enabling…' : 'Re-enable'}
                            </Button>
                          )}
                        </span>
                      ),
                    },
                  ]
                : []),
            ]}
          />
        ) : null}
      </Card>
      {canWrite && adding ? <DealerDialog onClose={() => setAdding(false)} onSaved={saved} /> : null}
      {canWrite && editing ? <DealerDialog key={editing.id} dealer={editing} onClose={() => setEditing(null)} onSaved={saved} onReloaded={dealers.reload} /> : null}
      <ConfirmDialog
        open={disabling !== null}
        title="Disable this dealer?"
        confirmLabel="Disable dealer"
        danger
        busy={busyId !== null}
        onConfirm={() => disabling && void changeStatus(disabling, 'disabled')}
        onClose={() => setDisabling(null)}
      >
        <p>
          New indirect auto-loan applications naming <strong>{disabling?.name}</strong> will be refused with 422. Decisions already made stay as they are, and your webhook endpoints receive <code>dealer.removed</code>.
        </p>
        <p className="muted small">You can re-enable the dealer at any time.</p>
      </ConfirmDialog>
    </>
  );
}
