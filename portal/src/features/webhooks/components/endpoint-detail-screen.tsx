/**
 * One endpoint: its settings, Send test event, Rotate signing secret (with the overlap chosen),
 * Edit, Delete; the auto-disabled badge with the logged reason and Re-enable (offering to resend
 * what was missed); the delivery history (filter by state, event type or event id; paged by the
 * service) with every attempt's request, response code, timing and error, and Resend. Edit sends
 * the version it loaded: if someone else edited the endpoint since, the service answers 409 and
 * the dialog says so and offers to reload the endpoint as it now is.
 */
import { useEffect, useState } from 'react';
import { Button } from '../../../components/button';
import { CopyableId, SecretOnce } from '../../../components/copy';
import { ConfirmDialog, Dialog } from '../../../components/dialog';
import { Badge, ConflictNotice, ErrorNotice, Loading, Notice } from '../../../components/feedback';
import { Checkbox, SelectField, TextField } from '../../../components/form';
import { Card, DetailList, PageHeader } from '../../../components/page';
import { DataTable, Pagination } from '../../../components/table';
import type { ApiError } from '../../../lib/api-client';
import { useEnvironment } from '../../../lib/environment';
import { formatDateTime, titleCase } from '../../../lib/format';
import { Link, navigate, setQuery, useLocation } from '../../../lib/router';
import { useSignedIn } from '../../../lib/session';
import { useAsync } from '../../../lib/use-async';
import { useVersionedSave } from '../../../lib/use-versioned-save';
import { webhooksApi, type WebhookDelivery, type WebhookEndpoint } from '../api/webhooks-api';
import { EndpointFields, useEndpointForm } from './endpoint-form';
import { EndpointStateBadge } from './webhooks-screen';

const OVERLAPS = [
  { hours: 0, label: 'No overlap: the old secret stops at once' },
  { hours: 1, label: '1 hour' },
  { hours: 24, label: '24 hours (recommended)' },
  { hours: 72, label: '3 days' },
  { hours: 168, label: '7 days (longest)' },
];

function DeliveryStateBadge({ delivery }: { delivery: WebhookDelivery }) {
  const tone = delivery.state === 'delivered' ? 'success' : delivery.state === 'failed' ? 'danger' : delivery.state === 'pending' ? 'info' : 'neutral';
  return <Badge tone={tone}>{delivery.state === 'pending' && delivery.attempts > 0 ? 'Retrying' : titleCase(delivery.state)}</Badge>;
}

function AttemptsDialog({ delivery, onClose, onResent }: { delivery: WebhookDelivery | null; onClose(): void; onResent(): void }) {
  const environment = useEnvironment();
  const session = useSignedIn();
  const attempts = useAsync(async () => (delivery ? webhooksApi.attempts(environment, delivery.id) : null), [delivery?.id, environment]);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const resend = async () => {
    if (!delivery) return;
    setBusy(true);
    setError(null);
    try {
      await webhooksApi.resend(environment, delivery.id);
      onResent();
      onClose();
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog
      open={delivery !== null}
      title={delivery ? `Delivery of ${delivery.event_type}` : 'Delivery'}
      onClose={onClose}
      footer={
        <>
          {session.can('webhooks:write') ? (
            <Button onClick={() => void resend()} disabled={busy}>
              {busy ? 'Resending…' : 'Resend'}
            </Button>
          ) : null}
          <Button variant="primary" onClick={onClose}>
            Close
          </Button>
        </>
      }
    >
      <ErrorNotice error={error} />
      {delivery ? <DetailList items={[['Event ID', <CopyableId key="e" value={delivery.event_id} label="Event ID" />], ['State', <DeliveryStateBadge key="s" delivery={delivery} />], ['Next attempt', formatDateTime(delivery.next_attempt_at)]]} /> : null}
      {attempts.loading && !attempts.data ? <Loading /> : null}
      {attempts.data?.data.length === 0 ? <p className="muted">No attempt yet: the first one is on its way.</p> : null}
      <ol className="attempt-list">
        {attempts.data?.data.map((a) => (
          <li key={a.id} className="attempt">
            <div className="attempt-head">
              <strong>Attempt {a.attempt}</strong>
              {a.error_kind === null ? <Badge tone="success">{a.response_status}</Badge> : <Badge tone="danger">{a.response_status ?? titleCase(a.error_kind)}</Badge>}
              <span className="muted small">
                {formatDateTime(a.created_at)} · {a.duration_ms} ms
              </span>
            </div>
            {a.error_detail ? <p className="danger-text small">{a.error_detail}</p> : null}
            <details>
              <summary>Request</summary>
              <pre className="code-block">{Object.entries(a.request_headers).map(([k, v]) => `${k}: ${v}`).join('\n')}</pre>
              <pre className="code-block">{a.request_body}</pre>
            </details>
            <details>
              <summary>Response</summary>
              <pre className="code-block">{a.response_body ?? '(no body)'}</pre>
            </details>
          </li>
        ))}
      </ol>
    </Dialog>
  );
}

function DeliveryHistory({ endpoint, refreshKey }: { endpoint: WebhookEndpoint; refreshKey: number }) {
  const environment = useEnvironment();
  const { query } = useLocation();
  const state = query.get('state') ?? '';
  const eventType = query.get('event_type') ?? '';
  const eventId = query.get('event_id') ?? '';
  const page = Number(query.get('page') ?? '1') || 1;
  const [eventIdInput, setEventIdInput] = useState(eventId);
  const types = useAsync(() => webhooksApi.eventTypes(), []);
  const deliveries = useAsync(
    () => webhooksApi.deliveries(environment, endpoint.id, { page, ...(state ? { state } : {}), ...(eventType ? { event_type: eventType } : {}), ...(eventId ? { event_id: eventId } : {}) }),
    [environment, endpoint.id, state, eventType, eventId, page, refreshKey],
  );
  const [open, setOpen] = useState<WebhookDelivery | null>(null);
  const pending = deliveries.data?.data.some((d) => d.state === 'pending') ?? false;
  const { reload } = deliveries;
  // While something is on its way, keep the table current (a test event arrives within seconds).
  useEffect(() => {
    if (!pending) return;
    const timer = window.setInterval(reload, 1500);
    return () => window.clearInterval(timer);
  }, [pending, reload]);

  return (
    <Card
      title="Delivery history"
      actions={
        <Button size="small" onClick={reload}>
          Refresh
        </Button>
      }
    >
      <form
        className="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setQuery({ event_id: eventIdInput.trim() || null, page: null });
        }}
      >
        <SelectField label="State" value={state} onChange={(e) => setQuery({ state: e.target.value || null, page: null })}>
          <option value="">Any state</option>
          <option value="delivered">Delivered</option>
          <option value="pending">Pending / retrying</option>
          <option value="failed">Failed</option>
          <option value="cancelled">Cancelled</option>
        </SelectField>
        <SelectField label="Event type" value={eventType} onChange={(e) => setQuery({ event_type: e.target.value || null, page: null })}>
          <option value="">Any type</option>
          {types.data?.data.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </SelectField>
        <TextField label="Event ID" value={eventIdInput} placeholder="Paste an event id" onChange={(e) => setEventIdInput(e.target.value)} />
        <div className="filters-submit">
          <Button type="submit" size="small">
            Apply
          </Button>
        </div>
      </form>
      <ErrorNotice error={deliveries.error} title="Could not load the history" />
      {deliveries.data ? (
        <>
          <DataTable
            caption="Deliveries"
            rows={deliveries.data.data}
            rowKey={(d) => d.id}
            empty="No deliveries match. Send a test event to see one here."
            columns={[
              { header: 'Event', cell: (d) => <span className="mono small">{d.event_type}</span> },
              { header: 'State', cell: (d) => <DeliveryStateBadge delivery={d} /> },
              { header: 'Attempts', cell: (d) => d.attempts },
              { header: 'Response', cell: (d) => (d.last_response_status ?? (d.last_error_kind ? titleCase(d.last_error_kind) : '—')) },
              { header: 'Created', cell: (d) => formatDateTime(d.created_at) },
              {
                header: 'Details',
                className: 'col-actions',
                cell: (d) => (
                  <Button size="small" onClick={() => setOpen(d)} aria-label={`View attempts of ${d.event_type} delivery`}>
                    View
                  </Button>
                ),
              },
            ]}
          />
          <Pagination page={deliveries.data.page} pageSize={deliveries.data.page_size} hasMore={Boolean(deliveries.data.has_more)} count={deliveries.data.data.length} onPage={(p) => setQuery({ page: String(p) })} />
        </>
      ) : (
        <Loading />
      )}
      <AttemptsDialog delivery={open} onClose={() => setOpen(null)} onResent={reload} />
    </Card>
  );
}

/** `onReloaded`: the dialog fetched the endpoint again after a conflict (the page should show it too). */
function EditEndpointDialog({ endpoint, onClose, onSaved, onReloaded }: { endpoint: WebhookEndpoint; onClose(): void; onSaved(): void; onReloaded(): void }) {
  const environment = useEnvironment();
  // The endpoint as last loaded: the version an edit sends.
  const [loaded, setLoaded] = useState(endpoint);
  const form = useEndpointForm({ url: endpoint.url, description: endpoint.description, events: endpoint.events });
  // `conflict`: someone else edited it since it was loaded; nothing was saved, and Reload offers the endpoint as it now is.
  const edit = useVersionedSave('endpoint_version_conflict');
  const { busy, error, conflict } = edit;
  const save = () =>
    edit.save(async () => {
      await webhooksApi.update(environment, loaded.id, form.value, loaded.version);
      onSaved();
    });
  const reload = () =>
    edit.reload(async () => {
      const fresh = (await webhooksApi.get(environment, loaded.id)).endpoint;
      setLoaded(fresh);
      form.reset({ url: fresh.url, description: fresh.description, events: fresh.events });
      onReloaded();
    });
  return (
    <Dialog
      open
      title="Edit endpoint"
      onClose={onClose}
      footer={
        <>
          <Button onClick={onClose}>Cancel</Button>
          {/* Not while a conflict is shown: the same save would be refused again. */}
          <Button variant="primary" disabled={busy || conflict !== null} onClick={() => void save()}>
            Save changes
          </Button>
        </>
      }
    >
      <ConflictNotice message={conflict} what="endpoint" onReload={() => void reload()} busy={busy} />
      <ErrorNotice error={error} title="Could not save" />
      <EndpointFields form={form} />
    </Dialog>
  );
}

export function EndpointDetailScreen({ id }: { id: string }) {
  const environment = useEnvironment();
  const session = useSignedIn();
  const endpoint = useAsync(() => webhooksApi.get(environment, id), [environment, id]);
  const [dialog, setDialog] = useState<'rotate' | 'edit' | 'delete' | 'reenable' | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [rotated, setRotated] = useState<string | null>(null);
  const [overlap, setOverlap] = useState(24);
  const [resendMissed, setResendMissed] = useState(true);
  const [refreshKey, setRefreshKey] = useState(0);
  const canWrite = session.can('webhooks:write');
  const e = endpoint.data?.endpoint;

  const run = async (action: () => Promise<string | null>) => {
    setBusy(true);
    setError(null);
    setMessage(null);
    try {
      const done = await action();
      if (done) setMessage(done);
      endpoint.reload();
      setRefreshKey((n) => n + 1);
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  if (endpoint.loading && !e) return <Loading />;
  if (!e) {
    return (
      <>
        <PageHeader title="Endpoint not found" />
        <ErrorNotice error={endpoint.error} title="Could not load the endpoint" />
        <Link to={`/${environment}/webhooks`}>Back to webhooks</Link>
      </>
    );
  }

  return (
    <>
      <p className="breadcrumb">
        <Link to={`/${environment}/webhooks`}>Webhooks</Link> <span aria-hidden="true">/</span> Endpoint
      </p>
      <PageHeader
        title="Webhook endpoint"
        description={<span className="endpoint-url-title">{e.url}</span>}
        actions={
          canWrite ? (
            <>
              <Button variant="primary" disabled={busy || e.state !== 'active'} onClick={() => void run(async () => {
                const sent = await webhooksApi.sendTest(environment, e.id);
                return `Test event ${sent.event_id} queued; it arrives within seconds and appears in the history below.`;
              })}>
                Send test event
              </Button>
              <Button onClick={() => setDialog('rotate')}>Rotate secret</Button>
              {/* Not while the page reloads after a save: the dialog would start from the version before it. */}
              <Button onClick={() => setDialog('edit')} disabled={endpoint.loading}>
                Edit
              </Button>
              <Button variant="danger" onClick={() => setDialog('delete')}>
                Delete
              </Button>
            </>
          ) : null
        }
      />
      {e.state === 'disabled' ? (
        <Notice tone="danger" title="Auto-disabled">
          <p>
            Sending stopped {formatDateTime(e.disabled_at)}. Reason logged: <strong>{e.disabled_reason?.replace(/\.$/, '')}</strong>. Fix the receiver, then re-enable the endpoint.
          </p>
          {canWrite ? (
            <Button variant="primary" onClick={() => setDialog('reenable')}>
              Re-enable
            </Button>
          ) : null}
        </Notice>
      ) : null}
      {message ? <Notice tone="success">{message}</Notice> : null}
      <ErrorNotice error={error} />
      <Card title="Settings">
        <DetailList
          items={[
            ['State', <EndpointStateBadge key="state" endpoint={e} />],
            ['Endpoint ID', <CopyableId key="id" value={e.id} label="Endpoint ID" />],
            ['URL', <code key="url" className="break">{e.url}</code>],
            ['Description', e.description ?? '—'],
            ['Events', e.events.includes('*') ? 'All events, including future types' : e.events.join(', ')],
            ['Environment', <Badge key="env" tone={environment === 'live' ? 'live' : 'info'}>{titleCase(environment)}</Badge>],
            ['Consecutive failures', `${e.consecutive_failures} (auto-disabled at 50)`],
            ['Signing secret', e.previous_secret_expires_at ? `Rotated; the previous secret also signs until ${formatDateTime(e.previous_secret_expires_at)}` : 'Current secret only'],
            ['Created', formatDateTime(e.created_at)],
          ]}
        />
      </Card>
      <DeliveryHistory endpoint={e} refreshKey={refreshKey} />

      <Dialog
        open={dialog === 'rotate'}
        title="Rotate signing secret"
        onClose={() => {
          setDialog(null);
          setRotated(null);
        }}
        footer={
          rotated ? (
            <Button variant="primary" onClick={() => { setDialog(null); setRotated(null); }}>
              Done
            </Button>
          ) : (
            <>
              <Button onClick={() => setDialog(null)}>Cancel</Button>
              <Button variant="primary" disabled={busy} onClick={() => void run(async () => {
                const r = await webhooksApi.rotate(environment, e.id, overlap);
                setRotated(r.secret);
                return r.previous_secret_expires_at ? `Secret rotated. The old secret also signs until ${formatDateTime(r.previous_secret_expires_at)}.` : 'Secret rotated. The old secret no longer signs.';
              })}>
                Rotate secret
              </Button>
            </>
          )
        }
      >
        {rotated ? (
          <SecretOnce label="New signing secret" value={rotated} warning="Shown only this once. Deploy it to your receiver; during the overlap each delivery carries two signatures, one per secret." />
        ) : (
          <>
            <p>The new secret signs from now on. During the overlap, deliveries carry a second signature made with the old secret, so your receiver can switch without failing.</p>
            <SelectField label="Overlap" value={String(overlap)} onChange={(ev) => setOverlap(Number(ev.target.value))}>
              {OVERLAPS.map((o) => (
                <option key={o.hours} value={o.hours}>
                  {o.label}
                </option>
              ))}
            </SelectField>
          </>
        )}
      </Dialog>

      {dialog === 'edit' ? (
        <EditEndpointDialog
          endpoint={e}
          onClose={() => setDialog(null)}
          onSaved={() => {
            setDialog(null);
            setMessage('Endpoint updated. The signing secret is unchanged.');
            endpoint.reload();
          }}
          onReloaded={endpoint.reload}
        />
      ) : null}

      <ConfirmDialog open={dialog === 'delete'} title="Delete this endpoint?" confirmLabel="Delete endpoint" danger busy={busy} onClose={() => setDialog(null)} onConfirm={() => void run(async () => {
        await webhooksApi.remove(environment, e.id);
        navigate(`/${environment}/webhooks`);
        return null;
      })}>
        <p>No more events are sent to <code className="break">{e.url}</code>; deliveries still waiting are cancelled. Its history stays readable for 30 days.</p>
      </ConfirmDialog>

      <ConfirmDialog open={dialog === 'reenable'} title="Re-enable this endpoint?" confirmLabel="Re-enable" busy={busy} onClose={() => setDialog(null)} onConfirm={() => void run(async () => {
        const r = await webhooksApi.reenable(environment, e.id, resendMissed && e.disabled_at ? new Date(new Date(e.disabled_at).getTime() - 3600_000).toISOString() : null);
        setDialog(null);
        return r.resent ? `Endpoint re-enabled. ${r.resent.requeued + r.resent.recovered} missed or failed events are being resent.` : 'Endpoint re-enabled. New events are sent again.';
      })}>
        <p>Only re-enable once the cause is fixed: deliveries resume at once.</p>
        <Checkbox label="Also resend what it missed (failed deliveries since an hour before it was disabled, and events while it was off)" checked={resendMissed} onChange={(ev) => setResendMissed(ev.target.checked)} />
      </ConfirmDialog>
    </>
  );
}
