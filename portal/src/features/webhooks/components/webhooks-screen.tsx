/** Webhooks: the environment's endpoints, their state at a glance, and Add endpoint. */
import { useState } from 'react';
import { Button } from '../../../components/button';
import { SecretOnce } from '../../../components/copy';
import { Dialog } from '../../../components/dialog';
import { Badge, EmptyState, ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { Card, PageHeader } from '../../../components/page';
import type { ApiError } from '../../../lib/api-client';
import { useEnvironment } from '../../../lib/environment';
import { formatDateTime } from '../../../lib/format';
import { Link, navigate } from '../../../lib/router';
import { useSignedIn } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { webhooksApi, type WebhookEndpoint } from '../api/webhooks-api';
import { EndpointFields, useEndpointForm } from './endpoint-form';

export function EndpointStateBadge({ endpoint }: { endpoint: WebhookEndpoint }) {
  return endpoint.state === 'active' ? <Badge tone="success">Active</Badge> : <Badge tone="danger">Auto-disabled</Badge>;
}

export function eventsSummary(events: string[]): string {
  return events.includes('*') ? 'All events' : events.length === 1 ? events[0]! : `${events.length} event types`;
}

function AddEndpointDialog({ open, onClose }: { open: boolean; onClose(): void }) {
  const environment = useEnvironment();
  const form = useEndpointForm();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [created, setCreated] = useState<{ endpoint: WebhookEndpoint; secret: string } | null>(null);

  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      setCreated(await webhooksApi.create(environment, form.value));
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };
  if (created) {
    return (
      <Dialog open={open} title="Endpoint added" onClose={() => navigate(`/${environment}/webhooks/${created.endpoint.id}`)} footer={<Button variant="primary" onClick={() => navigate(`/${environment}/webhooks/${created.endpoint.id}`)}>Done</Button>}>
        <p>Deliveries to <code className="break">{created.endpoint.url}</code> are signed with this secret (header <code>Svc-Signature</code>).</p>
        <SecretOnce label="Signing secret" value={created.secret} warning="Copy it into your receiver's configuration now: it is shown only this once. You can rotate it later." />
      </Dialog>
    );
  }
  return (
    <Dialog
      open={open}
      title={`Add ${environment} endpoint`}
      onClose={onClose}
      footer={
        <>
          <Button onClick={onClose}>Cancel</Button>
          <Button variant="primary" onClick={() => void submit()} disabled={busy || form.value.url === '' || (form.mode === 'some' && form.events.length === 0)}>
            {busy ? 'Adding…' : 'Add endpoint'}
          </Button>
        </>
      }
    >
      <ErrorNotice error={error} title="Could not add the endpoint" />
      <EndpointFields form={form} />
    </Dialog>
  );
}

export function WebhooksScreen() {
  const environment = useEnvironment();
  const session = useSignedIn();
  const endpoints = useAsync(() => webhooksApi.list(environment), [environment]);
  const [adding, setAdding] = useState(false);
  const canWrite = session.can('webhooks:write');

  return (
    <>
      <PageHeader
        eyebrow="Settings"
        title="Webhooks"
        description={`Where the service POSTs signed events about ${environment} decisions. Up to 16 endpoints per environment.`}
        actions={canWrite ? <Button variant="primary" onClick={() => setAdding(true)}>Add endpoint</Button> : null}
      />
      <ErrorNotice error={endpoints.error} title="Could not load endpoints" />
      {endpoints.loading && !endpoints.data ? <Loading /> : null}
      {endpoints.data && endpoints.data.data.length === 0 ? (
        <Card>
          <EmptyState title={`No ${environment} endpoints yet`}>
            <p>Add an HTTPS endpoint to receive decision events, then send it a test event.</p>
          </EmptyState>
        </Card>
      ) : null}
      {endpoints.data && endpoints.data.data.length > 0 ? (
        <ul className="endpoint-list" aria-label="Webhook endpoints">
          {endpoints.data.data.map((e) => (
            <li key={e.id} className={`endpoint-item ${e.state === 'disabled' ? 'is-disabled' : ''}`}>
              <div className="endpoint-main">
                <Link to={`/${environment}/webhooks/${e.id}`} className="endpoint-url">
                  {e.url}
                </Link>
                <p className="muted small">{e.description ?? 'No description'} · {eventsSummary(e.events)} · added {formatDateTime(e.created_at)}</p>
                {e.state === 'disabled' ? <p className="danger-text small">Disabled: {e.disabled_reason}</p> : null}
              </div>
              <EndpointStateBadge endpoint={e} />
            </li>
          ))}
        </ul>
      ) : null}
      {!canWrite ? <Notice tone="info">Your role can view endpoints and deliveries but not change them.</Notice> : null}
      {canWrite && adding ? <AddEndpointDialog open={adding} onClose={() => setAdding(false)} /> : null}
    </>
  );
}
