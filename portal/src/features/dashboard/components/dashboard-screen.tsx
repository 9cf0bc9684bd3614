/**
 * Dashboard: the environment's decisions over a period, from the service's own tables (never
 * sample data): decisions per UTC hour by outcome, approval rate, p50/p99 decision latency,
 * pending verifications by age, webhook success rate per endpoint. Each chart is a figure with a
 * text alternative and the same numbers in a table, so nothing depends on seeing the chart.
 * This module (and recharts with it) is loaded only when the dashboard is opened (app/routes.tsx).
 */
import { Bar, BarChart, CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { ReactNode } from 'react';
import { Button } from '../../../components/button';
import { ErrorNotice, Loading } from '../../../components/feedback';
import { SelectField, TextField } from '../../../components/form';
import { Card, PageHeader } from '../../../components/page';
import { DataTable } from '../../../components/table';
import { useEnvironment } from '../../../lib/environment';
import { formatDateTime } from '../../../lib/format';
import { setQuery, useLocation } from '../../../lib/router';
import { useAsync } from '../../../lib/use-async';
import { dashboardApi, type DashboardData } from '../api/dashboard-api';

const COLORS = { approved: '#1b6b3a', declined: '#a8241a', referred: '#b86e00', pending: '#1d4f91', p50: '#1d3557', p99: '#a34d00' } as const;
const PRESETS: Record<string, { label: string; hours: number }> = {
  '24h': { label: 'Last 24 hours', hours: 24 },
  '7d': { label: 'Last 7 days', hours: 7 * 24 },
  '31d': { label: 'Last 31 days', hours: 31 * 24 },
};

const percent = (rate: number | null) => (rate === null ? '—' : `${(rate * 100).toFixed(1)}%`);
const millis = (v: number | null) => (v === null ? '—' : `${v} ms`);
const hourLabel = (iso: string) => `${iso.slice(5, 10)} ${iso.slice(11, 16)}`;

function Figure({ title, description, children, table }: { title: string; description: string; children: ReactNode; table: ReactNode }) {
  return (
    <Card title={title}>
      <figure className="chart">
        <div className="chart-canvas" role="img" aria-label={description}>
          {children}
        </div>
        <figcaption className="muted small">{description}</figcaption>
      </figure>
      <details>
        <summary>Show as a table</summary>
        {table}
      </details>
    </Card>
  );
}

/** The period from the address: a preset (default 24 h), or custom UTC days (from inclusive, to inclusive). */
function periodOf(query: URLSearchParams): { key: string; period: { from: string; to: string } | null } {
  const from = query.get('from');
  const to = query.get('to');
  if (from && to && /^\d{4}-\d{2}-\d{2}$/.test(from) && /^\d{4}-\d{2}-\d{2}$/.test(to)) {
    return { key: `custom:${from}:${to}`, period: { from: `${from}T00:00:00.000Z`, to: new Date(Date.parse(`${to}T00:00:00.000Z`) + 86_400_000).toISOString() } };
  }
  const preset = PRESETS[query.get('period') ?? '24h'] ?? PRESETS['24h']!;
  if (preset.hours === 24) return { key: '24h', period: null };
  // Whole hours back from the current hour's end, so the chart's buckets are full hours.
  const end = Math.ceil(Date.now() / 3_600_000) * 3_600_000;
  return { key: `${preset.hours}h`, period: { from: new Date(end - preset.hours * 3_600_000).toISOString(), to: new Date(end).toISOString() } };
}

function PeriodPicker() {
  const { query } = useLocation();
  const custom = query.get('from') !== null;
  return (
    <form className="filters" aria-label="Dashboard period" onSubmit={(e) => e.preventDefault()}>
      <SelectField
        label="Period"
        value={custom ? 'custom' : (query.get('period') ?? '24h')}
        onChange={(e) => (e.target.value === 'custom' ? setQuery({ period: 'custom', from: new Date().toISOString().slice(0, 10), to: new Date().toISOString().slice(0, 10) }) : setQuery({ period: e.target.value, from: null, to: null }))}
      >
        {Object.entries(PRESETS).map(([k, p]) => (
          <option key={k} value={k}>
            {p.label}
          </option>
        ))}
        <option value="custom">Custom days (UTC)</option>
      </SelectField>
      {custom ? (
        <>
          <TextField label="From (UTC day)" type="date" value={query.get('from') ?? ''} onChange={(e) => setQuery({ from: e.target.value })} />
          <TextField label="To (UTC day, inclusive)" type="date" value={query.get('to') ?? ''} onChange={(e) => setQuery({ to: e.target.value })} />
        </>
      ) : null}
    </form>
  );
}

function SummaryTable({ d }: { d: DashboardData }) {
  const rows: Array<[string, string, string]> = [
    ['decisions', 'Decisions', String(d.totals.total)],
    ['approved', 'Approved', String(d.totals.approved)],
    ['declined', 'Declined', String(d.totals.declined)],
    ['referred', 'Referred', String(d.totals.referred)],
    ['pending', 'Pending (consumer to act)', String(d.totals.pending)],
    ['approval-rate', 'Approval rate (approved / decided)', percent(d.totals.approval_rate)],
    ['latency-p50', 'Decision latency p50', millis(d.latency.p50_ms)],
    ['latency-p99', 'Decision latency p99', millis(d.latency.p99_ms)],
    ['pending-verifications', `Pending verifications at ${formatDateTime(d.pending_verifications.as_of)}`, String(d.pending_verifications.total)],
  ];
  return (
    <div className="table-wrap">
      <table className="table" data-testid="dashboard-summary">
        <caption className="visually-hidden">Totals for the period</caption>
        <tbody>
          {rows.map(([key, label, value]) => (
            <tr key={key} data-metric={key}>
              <th scope="row">{label}</th>
              <td className="num">{value}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function DashboardScreen() {
  const environment = useEnvironment();
  const { query } = useLocation();
  const { key, period } = periodOf(query);
  const data = useAsync(() => dashboardApi.get(environment, period), [environment, key]);
  const d = data.data;
  const decidedHours = d?.hours ?? [];

  return (
    <>
      <PageHeader
        title="Dashboard"
        description={`How ${environment} decisions are going. Hours are UTC; every number comes from the service's own records.`}
        actions={
          <Button size="small" onClick={data.reload} disabled={data.loading}>
            {data.loading ? 'Refreshing…' : 'Refresh'}
          </Button>
        }
      />
      <Card>
        <PeriodPicker />
        {d ? (
          <p className="muted small">
            From {formatDateTime(d.from)} to {formatDateTime(d.to)}.
          </p>
        ) : null}
      </Card>
      <ErrorNotice error={data.error} title="Could not load the dashboard" />
      {data.loading && !d ? <Loading /> : null}
      {d ? (
        <div className="dashboard-grid">
          <Card title="Summary" className="dashboard-summary">
            <SummaryTable d={d} />
          </Card>
          <Figure
            title="Decisions per hour by outcome"
            description={`${d.totals.total} decisions: ${d.totals.approved} approved, ${d.totals.declined} declined, ${d.totals.referred} referred, ${d.totals.pending} pending, stacked per UTC hour.`}
            table={
              <DataTable
                caption="Decisions per hour by outcome"
                rows={decidedHours.filter((h) => h.total > 0)}
                rowKey={(h) => h.hour}
                empty="No decisions in this period."
                columns={[
                  { header: 'Hour (UTC)', cell: (h) => hourLabel(h.hour) },
                  { header: 'Approved', className: 'num', cell: (h) => h.approved },
                  { header: 'Declined', className: 'num', cell: (h) => h.declined },
                  { header: 'Referred', className: 'num', cell: (h) => h.referred },
                  { header: 'Pending', className: 'num', cell: (h) => h.pending },
                  { header: 'Approval rate', className: 'num', cell: (h) => percent(h.approval_rate) },
                ]}
              />
            }
          >
            <ResponsiveContainer width="100%" height={260}>
              <BarChart data={decidedHours} margin={{ top: 8, right: 8, bottom: 8, left: 0 }}>
                <CartesianGrid strokeDasharray="3 3" vertical={false} />
                <XAxis dataKey="hour" tickFormatter={hourLabel} minTickGap={24} fontSize={12} />
                <YAxis allowDecimals={false} fontSize={12} width={40} />
                <Tooltip labelFormatter={(v) => `${hourLabel(String(v))} UTC`} />
                <Legend />
                {(['approved', 'declined', 'referred', 'pending'] as const).map((o) => (
                  <Bar key={o} dataKey={o} name={o.charAt(0).toUpperCase() + o.slice(1)} stackId="outcome" fill={COLORS[o]} isAnimationActive={false} />
                ))}
              </BarChart>
            </ResponsiveContainer>
          </Figure>
          <Figure
            title="Approval rate"
            description={`Approval rate ${percent(d.totals.approval_rate)} over the period (approved / approved + declined + referred), per UTC hour.`}
            table={<p>Overall: {percent(d.totals.approval_rate)}. Per hour: in the table of decisions per hour.</p>}
          >
            <p className="big-number" aria-hidden="true">
              {percent(d.totals.approval_rate)}
            </p>
            <ResponsiveContainer width="100%" height={180}>
              <LineChart data={decidedHours} margin={{ top: 8, right: 8, bottom: 8, left: 0 }}>
                <CartesianGrid strokeDasharray="3 3" vertical={false} />
                <XAxis dataKey="hour" tickFormatter={hourLabel} minTickGap={24} fontSize={12} />
                <YAxis domain={[0, 1]} tickFormatter={(v: number) => `${Math.round(v * 100)}%`} fontSize={12} width={44} />
                <Tooltip labelFormatter={(v) => `${hourLabel(String(v))} UTC`} formatter={(v) => percent(typeof v === 'number' ? v : null)} />
                <Line type="monotone" dataKey="approval_rate" name="Approval rate" stroke={COLORS.approved} dot={{ r: 3 }} connectNulls isAnimationActive={false} />
              </LineChart>
            </ResponsiveContainer>
          </Figure>
          <Figure
            title="Decision latency"
            description={`Time the service spent deciding: p50 ${millis(d.latency.p50_ms)}, p99 ${millis(d.latency.p99_ms)} over ${d.latency.count} decided decisions, per UTC hour.`}
            table={
              <DataTable
                caption="Decision latency per hour"
                rows={decidedHours.filter((h) => h.latency_count > 0)}
                rowKey={(h) => h.hour}
                empty="No decided decisions in this period."
                columns={[
                  { header: 'Hour (UTC)', cell: (h) => hourLabel(h.hour) },
                  { header: 'Decisions', className: 'num', cell: (h) => h.latency_count },
                  { header: 'p50', className: 'num', cell: (h) => millis(h.latency_p50_ms) },
                  { header: 'p99', className: 'num', cell: (h) => millis(h.latency_p99_ms) },
                ]}
              />
            }
          >
            <ResponsiveContainer width="100%" height={220}>
              <LineChart data={decidedHours} margin={{ top: 8, right: 8, bottom: 8, left: 0 }}>
                <CartesianGrid strokeDasharray="3 3" vertical={false} />
                <XAxis dataKey="hour" tickFormatter={hourLabel} minTickGap={24} fontSize={12} />
                <YAxis unit=" ms" fontSize={12} width={64} />
                <Tooltip labelFormatter={(v) => `${hourLabel(String(v))} UTC`} />
                <Legend />
                <Line type="monotone" dataKey="latency_p50_ms" name="p50" stroke={COLORS.p50} connectNulls isAnimationActive={false} />
                <Line type="monotone" dataKey="latency_p99_ms" name="p99" stroke={COLORS.p99} connectNulls isAnimationActive={false} />
              </LineChart>
            </ResponsiveContainer>
          </Figure>
          <Figure
            title="Pending verifications by age"
            description={`${d.pending_verifications.total === 1 ? '1 decision' : `${d.pending_verifications.total} decisions`} waiting for the consumer at ${formatDateTime(d.pending_verifications.as_of)}: ${d.pending_verifications.buckets.map((b) => `${b.count} aged ${b.label}`).join(', ')}.`}
            table={
              <div className="table-wrap">
                <table className="table" data-testid="pending-by-age">
                  <caption className="visually-hidden">Pending verifications by age</caption>
                  <thead>
                    <tr>
                      <th scope="col">Age</th>
                      <th scope="col" className="num">Pending</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.pending_verifications.buckets.map((b) => (
                      <tr key={b.key} data-bucket={b.key}>
                        <td>{b.label}</td>
                        <td className="num">{b.count}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            }
          >
            <ResponsiveContainer width="100%" height={200}>
              <BarChart data={d.pending_verifications.buckets} margin={{ top: 8, right: 8, bottom: 8, left: 0 }}>
                <CartesianGrid strokeDasharray="3 3" vertical={false} />
                <XAxis dataKey="label" fontSize={12} />
                <YAxis allowDecimals={false} fontSize={12} width={40} />
                <Tooltip />
                <Bar dataKey="count" name="Pending" fill={COLORS.pending} isAnimationActive={false} />
              </BarChart>
            </ResponsiveContainer>
          </Figure>
          <Card title="Webhook success rate per endpoint" className="dashboard-wide">
            {d.webhooks.length > 0 ? (
              <figure className="chart">
                <div className="chart-canvas" role="img" aria-label={d.webhooks.map((w) => `${w.url}: ${percent(w.success_rate)} of ${w.finished} finished deliveries`).join('; ')}>
                  <ResponsiveContainer width="100%" height={Math.max(120, 48 * d.webhooks.length)}>
                    <BarChart data={d.webhooks.map((w) => ({ ...w, rate: w.success_rate === null ? 0 : w.success_rate * 100 }))} layout="vertical" margin={{ top: 8, right: 16, bottom: 8, left: 8 }}>
                      <CartesianGrid strokeDasharray="3 3" horizontal={false} />
                      <XAxis type="number" domain={[0, 100]} unit="%" fontSize={12} />
                      <YAxis type="category" dataKey="url" width={220} fontSize={11} tickFormatter={(u: string) => (u.length > 34 ? `…${u.slice(-33)}` : u)} />
                      <Tooltip formatter={(v) => `${Number(v).toFixed(1)}%`} />
                      <Bar dataKey="rate" name="Delivered" fill={COLORS.approved} isAnimationActive={false} />
                    </BarChart>
                  </ResponsiveContainer>
                </div>
                <figcaption className="muted small">Delivered / (delivered + failed) deliveries created in the period; pending and cancelled ones are counted apart.</figcaption>
              </figure>
            ) : null}
            <div className="table-wrap">
              <table className="table" data-testid="webhook-success">
                <caption className="visually-hidden">Webhook deliveries per endpoint</caption>
                <thead>
                  <tr>
                    <th scope="col">Endpoint</th>
                    <th scope="col" className="num">Delivered</th>
                    <th scope="col" className="num">Failed</th>
                    <th scope="col" className="num">Pending</th>
                    <th scope="col" className="num">Success rate</th>
                  </tr>
                </thead>
                <tbody>
                  {d.webhooks.length === 0 ? (
                    <tr>
                      <td colSpan={5} className="table-empty">
                        No webhook deliveries in this period.
                      </td>
                    </tr>
                  ) : (
                    d.webhooks.map((w) => (
                      <tr key={w.endpoint_id} data-endpoint={w.endpoint_id}>
                        <td className="break" data-label="Endpoint">{w.url}{w.state === 'deleted' ? ' (deleted)' : ''}</td>
                        <td className="num" data-label="Delivered">{w.delivered}</td>
                        <td className="num" data-label="Failed">{w.failed}</td>
                        <td className="num" data-label="Pending">{w.pending}</td>
                        <td className="num" data-label="Success rate">{percent(w.success_rate)}</td>
                      </tr>
                    ))
                  )}
                </tbody>
              </table>
            </div>
          </Card>
        </div>
      ) : null}
    </>
  );
}

export default DashboardScreen;
