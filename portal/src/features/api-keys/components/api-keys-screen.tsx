/**
 * Settings -> API keys: the environment's keys (paged and filtered by the service), Generate new
 * key (sandbox or live; the full key shown once with a copy button), Revoke with confirmation.
 */
import { useState } from 'react';
import { Button } from '../../../components/button';
import { SecretOnce } from '../../../components/copy';
import { ConfirmDialog, Dialog } from '../../../components/dialog';
import { Badge, ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { RadioGroup, SelectField, TextField } from '../../../components/form';
import { Card, PageHeader } from '../../../components/page';
import { DataTable, Pagination } from '../../../components/table';
import type { ApiError } from '../../../lib/api-client';
import { useEnvironment, type Environment } from '../../../lib/environment';
import { formatDateTime, formatRelative } from '../../../lib/format';
import { setQuery, useLocation } from '../../../lib/router';
import { useSignedIn } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { apiKeysApi, type ApiKey } from '../api/api-keys-api';

const prefix = (env: Environment) => (env === 'live' ? 'svc_live_' : 'svc_test_');

function GenerateKeyDialog({ open, onClose, onGenerated }: { open: boolean; onClose(): void; onGenerated(): void }) {
  const current = useEnvironment();
  const [environment, setEnvironment] = useState<Environment>(current);
  const [label, setLabel] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [secret, setSecret] = useState<string | null>(null);

  const close = () => {
    setSecret(null);
    setLabel('');
    setError(null);
    setEnvironment(current);
    onClose();
  };
  const generate = async () => {
    setBusy(true);
    setError(null);
    try {
      const created = await apiKeysApi.generate({ environment, ...(label.trim() ? { label: label.trim() } : {}) });
      setSecret(created.secret);
      onGenerated();
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  if (secret) {
    return (
      <Dialog open={open} title="Your new API key" onClose={close} footer={<Button variant="primary" onClick={close}>Done</Button>}>
        <SecretOnce label={`${environment === 'live' ? 'Live' : 'Sandbox'} API key`} value={secret} warning="This is the only time the full key is shown. Store it in your secrets manager now; afterwards only its last four characters are visible." />
        {environment === 'live' ? <Notice tone="warning">Never place a live key in client-side code (browsers or mobile apps).</Notice> : null}
      </Dialog>
    );
  }
  return (
    <Dialog
      open={open}
      title="Generate new key"
      onClose={close}
      footer={
        <>
          <Button onClick={close}>Cancel</Button>
          <Button variant="primary" onClick={() => void generate()} disabled={busy}>
            {busy ? 'Generating…' : 'Generate key'}
          </Button>
        </>
      }
    >
      <ErrorNotice error={error} />
      <RadioGroup
        legend="Environment"
        name="environment"
        value={environment}
        onChange={setEnvironment}
        options={[
          { value: 'sandbox', label: 'Sandbox', description: 'svc_test_… keys: test data, free, no real credit pulls.' },
          { value: 'live', label: 'Live', description: 'svc_live_… keys: real applicants and decisions.' },
        ]}
      />
      <TextField label="Name (optional)" hint="What uses this key, e.g. “checkout service”." value={label} maxLength={100} onChange={(e) => setLabel(e.target.value)} />
    </Dialog>
  );
}

export function ApiKeysScreen() {
  const environment = useEnvironment();
  const session = useSignedIn();
  const { query } = useLocation();
  const status = query.get('status') ?? 'active';
  const page = Number(query.get('page') ?? '1') || 1;
  const keys = useAsync(() => apiKeysApi.list({ environment, ...(status === 'all' ? {} : { status }), page }), [environment, status, page]);
  const [generating, setGenerating] = useState(false);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const canWrite = session.can('keys:write');

  const revoke = async () => {
    if (!revoking) return;
    setBusy(true);
    setError(null);
    try {
      await apiKeysApi.revoke(revoking.id);
      setMessage(`Key ending ${revoking.last4} was revoked. Requests using it are refused from now on.`);
      setRevoking(null);
      keys.reload();
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <PageHeader
        eyebrow="Settings"
        title="API keys"
        description={`Keys authenticate your servers' calls to the API. ${environment === 'live' ? 'Live' : 'Sandbox'} keys start with ${prefix(environment)}.`}
        actions={
          canWrite ? (
            <Button variant="primary" onClick={() => setGenerating(true)}>
              Generate new key
            </Button>
          ) : null
        }
      />
      {!canWrite ? <Notice tone="info">Your role can view keys but not generate or revoke them. Ask an admin or developer.</Notice> : null}
      {message ? <Notice tone="success">{message}</Notice> : null}
      <ErrorNotice error={error} />
      <Card
        title={`${environment === 'live' ? 'Live' : 'Sandbox'} keys`}
        actions={
          <SelectField label="Status" value={status} onChange={(e) => setQuery({ status: e.target.value, page: null })} className="inline-field">
            <option value="active">Active</option>
            <option value="revoked">Revoked</option>
            <option value="all">All</option>
          </SelectField>
        }
      >
        {keys.loading && !keys.data ? <Loading /> : null}
        <ErrorNotice error={keys.error} title="Could not load keys" />
        {keys.data ? (
          <>
            <DataTable
              caption="API keys"
              rows={keys.data.data}
              rowKey={(k) => k.id}
              empty={status === 'active' ? 'No active keys in this environment yet.' : 'No keys match.'}
              columns={[
                { header: 'Name', cell: (k) => k.label ?? '—' },
                { header: 'Key', cell: (k) => <code className="key-mask">{`${prefix(k.environment)}…${k.last4}`}</code> },
                { header: 'Created', cell: (k) => formatDateTime(k.created_at) },
                { header: 'Last used', cell: (k) => <span title={formatDateTime(k.last_used_at)}>{formatRelative(k.last_used_at)}</span> },
                { header: 'Status', cell: (k) => (k.status === 'active' ? <Badge tone="success">Active</Badge> : <Badge tone="neutral">Revoked {formatDateTime(k.revoked_at)}</Badge>) },
                {
                  header: 'Actions',
                  className: 'col-actions',
                  cell: (k) =>
                    canWrite && k.status === 'active' ? (
                      <Button size="small" variant="danger" onClick={() => setRevoking(k)} aria-label={`Revoke key ending ${k.last4}`}>
                        Revoke
                      </Button>
                    ) : null,
                },
              ]}
            />
            <Pagination page={keys.data.page} pageSize={keys.data.page_size} total={keys.data.total} count={keys.data.data.length} onPage={(p) => setQuery({ page: String(p) })} />
          </>
        ) : null}
      </Card>
      {/* Keyed by the environment: switching it (the header's switch keeps this screen mounted) starts the dialog again, preselecting the new one. */}
      {canWrite ? <GenerateKeyDialog key={environment} open={generating} onClose={() => setGenerating(false)} onGenerated={() => keys.reload()} /> : null}
      <ConfirmDialog open={revoking !== null} title="Revoke this key?" confirmLabel="Revoke key" danger busy={busy} onConfirm={() => void revoke()} onClose={() => setRevoking(null)}>
        <p>
          The key ending <code>{revoking?.last4}</code> ({revoking?.label ?? 'unnamed'}) stops working immediately: every request that uses it is refused with 401. This cannot be undone.
        </p>
      </ConfirmDialog>
    </>
  );
}
