/**
 * Decision explorer: search the environment's decisions by decision id, consumer id, outcome,
 * adverse action (the decisions that owe a notice), product and creation date (UTC days), newest
 * first, paged by the service with a cursor. Every filter and the page live in the address, so a search can be bookmarked and shared; Download CSV
 * exports the whole filtered list (all pages) as the service streams it.
 */
import { useState, type FormEvent } from 'react';
import { Button } from '../../../components/button';
import { CopyableId } from '../../../components/copy';
import { ErrorNotice, Loading } from '../../../components/feedback';
import { SelectField, TextField } from '../../../components/form';
import { Card, PageHeader } from '../../../components/page';
import { DataTable } from '../../../components/table';
import { useEnvironment } from '../../../lib/environment';
import { formatDateTime } from '../../../lib/format';
import { Link, navigate, useLocation } from '../../../lib/router';
import { useAsync } from '../../../lib/use-async';
import { decisionsApi, type DecisionFilters } from '../api/decisions-api';
import { OutcomeBadge, productLabel } from './outcome-badge';

const FILTER_KEYS = ['decision_id', 'consumer_id', 'outcome', 'adverse_action', 'product', 'from', 'to'] as const;
type FilterKey = (typeof FILTER_KEYS)[number];

/** The address's filters (days as YYYY-MM-DD) -> the API's (created_at in [from 00:00Z, the day after `to` 00:00Z)). */
export function apiFilters(values: Partial<Record<FilterKey, string>>): DecisionFilters {
  const day = (d: string | undefined) => (d && /^\d{4}-\d{2}-\d{2}$/.test(d) ? d : undefined);
  const from = day(values.from);
  const to = day(values.to);
  const next = to ? new Date(Date.parse(`${to}T00:00:00.000Z`) + 86_400_000).toISOString() : undefined;
  return {
    ...(values.decision_id ? { decision_id: values.decision_id } : {}),
    ...(values.consumer_id ? { consumer_id: values.consumer_id } : {}),
    ...(values.outcome ? { outcome: values.outcome } : {}),
    ...(values.adverse_action ? { adverse_action: values.adverse_action } : {}),
    ...(values.product ? { product: values.product } : {}),
    ...(from ? { from: `${from}T00:00:00.000Z` } : {}),
    ...(next ? { to: next } : {}),
  };
}

function searchPath(environment: string, values: Partial<Record<FilterKey | 'cursor', string>>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v) params.set(k, v.trim());
  const q = params.toString();
  return `/${environment}/decisions${q ? `?${q}` : ''}`;
}

export function DecisionsScreen() {
  const environment = useEnvironment();
  const { query } = useLocation();
  const current = Object.fromEntries(FILTER_KEYS.map((k) => [k, query.get(k) ?? ''])) as Record<FilterKey, string>;
  const cursor = query.get('cursor');
  const [form, setForm] = useState(current);
  const filters = apiFilters(current);
  const key = JSON.stringify(filters);
  const page = useAsync(() => decisionsApi.list(environment, filters, cursor), [environment, key, cursor]);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(searchPath(environment, form));
  };
  const field = (k: FilterKey) => ({ value: form[k], onChange: (e: { target: { value: string } }) => setForm({ ...form, [k]: e.target.value }) });

  return (
    <>
      <PageHeader
        title="Decisions"
        description={`Every ${environment} decision with its audit record, events and webhook deliveries. Times are UTC.`}
        actions={
          <a className="btn btn-secondary" href={decisionsApi.csvUrl(environment, filters)} download>
            Download CSV
          </a>
        }
      />
      <Card title="Search">
        <form className="filters filters-wide" role="search" aria-label="Filter decisions" onSubmit={submit}>
          <TextField label="Decision ID" placeholder="Exact id" spellCheck={false} {...field('decision_id')} />
          <TextField label="Consumer ID" placeholder="Exact id" spellCheck={false} {...field('consumer_id')} />
          <SelectField label="Outcome" {...field('outcome')}>
            <option value="">Any outcome</option>
            <option value="approved">Approved</option>
            <option value="declined">Declined</option>
            <option value="referred">Referred</option>
            <option value="pending">Pending (consumer to act)</option>
          </SelectField>
          <SelectField label="Adverse action" {...field('adverse_action')}>
            <option value="">Any decision</option>
            <option value="any">A notice is owed</option>
            <option value="declined">Declined</option>
            <option value="counteroffer">Counteroffer</option>
          </SelectField>
          <SelectField label="Product" {...field('product')}>
            <option value="">Any product</option>
            <option value="bnpl">BNPL</option>
            <option value="auto_loan">Auto loan</option>
          </SelectField>
          <TextField label="Created from (UTC day)" type="date" {...field('from')} />
          <TextField label="Created to (UTC day, inclusive)" type="date" {...field('to')} />
          <div className="filters-submit">
            <Button type="submit" variant="primary" size="small">
              Search
            </Button>
            <Button
              size="small"
              onClick={() => {
                setForm(Object.fromEntries(FILTER_KEYS.map((k) => [k, ''])) as Record<FilterKey, string>);
                navigate(searchPath(environment, {}));
              }}
            >
              Clear
            </Button>
          </div>
        </form>
      </Card>
      <Card title="Results">
        <ErrorNotice error={page.error} title="Could not search decisions" />
        {page.data ? (
          <>
            <DataTable
              caption="Decisions, newest first"
              rows={page.data.data}
              rowKey={(d) => d.decision_id}
              empty="No decisions match these filters."
              columns={[
                { header: 'Created', cell: (d) => formatDateTime(d.created_at) },
                {
                  header: 'Decision',
                  cell: (d) => (
                    <Link to={`/${environment}/decisions/${d.decision_id}`} aria-label={`Decision ${d.decision_id}`}>
                      <code>{d.decision_id.slice(0, 8)}…</code>
                    </Link>
                  ),
                },
                { header: 'Consumer ID', cell: (d) => <CopyableId value={d.consumer_id} label={`Consumer ID of decision ${d.decision_id}`} /> },
                { header: 'Product', cell: (d) => productLabel(d.product) },
                {
                  header: 'Outcome',
                  cell: (d) => (
                    <>
                      <OutcomeBadge outcome={d.outcome} />
                      {d.adverse_action === 'counteroffer' ? <span className="muted small"> counteroffer</span> : null}
                      {d.notice_due_by !== null ? <span className="muted small"> · notice by {d.notice_due_by}</span> : null}
                    </>
                  ),
                },
                { header: 'Requested', className: 'num', cell: (d) => `${d.requested_amount} ${d.currency}` },
                { header: 'Approved', className: 'num', cell: (d) => (d.approved_amount ? `${d.approved_amount} ${d.currency}` : '—') },
                { header: 'Score', className: 'num', cell: (d) => d.score ?? '—' },
                { header: 'Reasons', cell: (d) => (d.reason_codes.length ? d.reason_codes.join(', ') : '—') },
              ]}
            />
            <nav className="pagination" aria-label="Pages">
              <p className="muted small" aria-live="polite">
                {page.data.data.length === 1 ? '1 decision' : `${page.data.data.length} decisions`} on this page{cursor ? ' (older results)' : ''}
              </p>
              <div className="pagination-buttons">
                <Button size="small" disabled={!cursor} onClick={() => navigate(searchPath(environment, current))}>
                  Newest
                </Button>
                <Button size="small" disabled={!page.data.has_more} onClick={() => navigate(searchPath(environment, { ...current, cursor: page.data!.next_cursor ?? '' }))}>
                  Older
                </Button>
              </div>
            </nav>
          </>
        ) : (
          <Loading />
        )}
      </Card>
    </>
  );
}
