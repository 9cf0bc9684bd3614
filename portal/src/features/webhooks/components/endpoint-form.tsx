/** URL, description and events (all, including future types, or a chosen list). */
import { useState } from 'react';
import { Checkbox, RadioGroup, TextField } from '../../../components/form';
import { Loading } from '../../../components/feedback';
import { useAsync } from '../../../lib/use-async';
import { webhooksApi, type EndpointInput } from '../api/webhooks-api';

export function useEndpointForm(initial?: EndpointInput) {
  const [url, setUrl] = useState(initial?.url ?? '');
  const [description, setDescription] = useState(initial?.description ?? '');
  const [mode, setMode] = useState<'all' | 'some'>(initial && initial.events !== '*' && !initial.events.includes('*') ? 'some' : 'all');
  const [events, setEvents] = useState<string[]>(initial && initial.events !== '*' && !initial.events.includes('*') ? initial.events : []);
  const value: EndpointInput = { url: url.trim(), description: description.trim() || null, events: mode === 'all' ? '*' : events };
  /** Start again from `next` (the endpoint as it now is, after a reload): what the person typed is dropped. */
  const reset = (next: EndpointInput) => {
    const chosen = next.events === '*' || next.events.includes('*') ? null : next.events;
    setUrl(next.url);
    setDescription(next.description ?? '');
    setMode(chosen ? 'some' : 'all');
    setEvents(chosen ?? []);
  };
  return { url, setUrl, description, setDescription, mode, setMode, events, setEvents, value, reset };
}

export function EndpointFields({ form }: { form: ReturnType<typeof useEndpointForm> }) {
  const types = useAsync(() => webhooksApi.eventTypes(), []);
  return (
    <div className="stack">
      <TextField label="Endpoint URL" type="url" inputMode="url" placeholder="https://example.com/webhooks/credit" hint="HTTPS only. The service never delivers to plain HTTP." required value={form.url} onChange={(e) => form.setUrl(e.target.value)} />
      <TextField label="Description (optional)" maxLength={500} value={form.description} onChange={(e) => form.setDescription(e.target.value)} />
      <RadioGroup
        legend="Events to send"
        name="events-mode"
        value={form.mode}
        onChange={form.setMode}
        options={[
          { value: 'all', label: 'All events', description: 'Including event types added in the future.' },
          { value: 'some', label: 'Selected events', description: 'Only the types you choose below.' },
        ]}
      />
      {form.mode === 'some' ? (
        types.data ? (
          <fieldset className="field event-list">
            <legend>Event types</legend>
            {types.data.data.map((t) => (
              <Checkbox
                key={t}
                label={t}
                checked={form.events.includes(t)}
                onChange={(e) => form.setEvents(e.target.checked ? [...form.events, t] : form.events.filter((x) => x !== t))}
              />
            ))}
          </fieldset>
        ) : (
          <Loading />
        )
      ) : null}
    </div>
  );
}
