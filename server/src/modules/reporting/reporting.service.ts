/**
 * The reporting read model: the portal's decision explorer (search, one decision explained, CSV
 * export) and its dashboard (aggregates per environment and period). It only reads.
 *
 * Ownership: writes stay with their modules (decisions, events, webhooks). This module reads the
 * `decisions`, `events`, `webhook_deliveries` and `webhook_endpoints` tables
 * directly, on the read connection, for what no service offers (filtered keyset lists, GROUP BY
 * aggregates); it goes through the services where they already answer (the decision as the API
 * presents it, the audit record, deliveries and their attempts). docs/architecture.md records
 * this exception to "a module reaches another only through its service".
 *
 * Explorer: filters (exact decision id, exact consumer id, outcome or pending, product, created
 * in [from, to)), newest first, keyset pagination on (created_at, id) with an opaque cursor, so a
 * page costs the same however deep and a decision created meanwhile never shifts a page. The CSV
 * export walks the same keyset in pages of EXPORT_PAGE rows and yields CSV text as it goes.
 *
 * Dashboard (docs/portal.md, Dashboard): every number comes from these tables for one tenant and
 * environment; hours are UTC hours (epoch ms / 3,600,000, the same integer division on SQLite and
 * PostgreSQL); latency percentiles are nearest-rank, ranked by the database (window functions,
 * the rank in integer arithmetic: `nearestRank`), so both dialects give the identical answer, and
 * read through `analyticsDb` (off the event loop on SQLite, ADR 0029).
 */
import { sql, type ExpressionBuilder, type Kysely, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { Database, DecisionsTable } from '../../db/schema.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { formatMoney } from '../../lib/money.js';
import type { DecisionsService } from '../decisions/decisions.service.js';
import { adverseActionReason, isAdverseActionCode, keyFactors, scoreRangeOf } from '../engine/index.js';
import type { WebhookAttemptView, WebhookDeliveryView, WebhooksService } from '../webhooks/webhooks.service.js';
import { csvRecord } from './csv.js';
import { maskVerifyLink } from '../kyc/verify-links.js';
import { noticeActionOf, noticeDueBy, type NoticeAction } from '../notices/adverse-action-notice.js';

export interface ReportingScope {
  tenantId: string;
  environment: Environment;
}

export const OUTCOME_FILTERS = ['approved', 'declined', 'referred', 'pending'] as const;
export type OutcomeFilter = (typeof OUTCOME_FILTERS)[number];
/** Decisions that owe an adverse-action notice (modules/notices): either kind, or one. */
export const ADVERSE_ACTION_FILTERS = ['any', 'declined', 'counteroffer'] as const;
export type AdverseActionFilter = (typeof ADVERSE_ACTION_FILTERS)[number];

export interface DecisionFilters {
  decisionId?: string;
  consumerId?: string;
  outcome?: OutcomeFilter;
  adverseAction?: AdverseActionFilter;
  /** Matched against the `product` column as stored ('bnpl', 'auto_loan', ...). */
  product?: string;
  /** created_at >= from */
  from?: Date;
  /** created_at < to */
  to?: Date;
}

/** One row of the explorer's list and of the CSV: no PII beyond the consumer id. */
export interface DecisionListItem {
  decisionId: string;
  applicationId: string;
  consumerId: string;
  product: string;
  status: DecisionsTable['status'];
  /** approved | declined | referred, or pending while the consumer has to act. */
  outcome: OutcomeFilter;
  kycTier: DecisionsTable['kyc_tier'];
  kycStatus: DecisionsTable['kyc_status'];
  currency: string;
  /** The merchant as the lender sent it (a business, not a person): free text, so CSV-guarded. */
  merchantName: string;
  merchantCategory: string;
  requestedAmount: string;
  approvedAmount: string | null;
  plan: string | null;
  termMonths: number | null;
  apr: string | null;
  score: number | null;
  riskGrade: string | null;
  reasonCodes: string[];
  /** The adverse action taken, for which a notice is owed: a decline, or an approval that is a counteroffer. */
  adverseAction: NoticeAction | null;
  /** The last day to send that notice (YYYY-MM-DD), as the notice itself gives it (`due_by`); null without adverse action. */
  noticeDueBy: string | null;
  engineVersion: string | null;
  latencyMs: number | null;
  createdAt: Date;
  completedAt: Date | null;
}

export interface DecisionPage {
  items: DecisionListItem[];
  /** Pass back as `cursor` for the next (older) page; null on the last page. */
  nextCursor: string | null;
}

export interface DecisionEventView {
  id: string;
  type: string;
  subjectId: string | null;
  data: unknown;
  createdAt: Date;
}

export interface DecisionDetail {
  item: DecisionListItem;
  /** The decision exactly as GET /v1/decisions/{product}/{id} answers, verification token masked. */
  decision: Record<string, unknown>;
  explanation: DecisionExplanation;
  events: DecisionEventView[];
  deliveries: Array<{ delivery: WebhookDeliveryView; endpointUrl: string | null; attempts: WebhookAttemptView[] }>;
}

/**
 * A credit score's disclosure (FCRA 615(a), 15 U.S.C. 1681m(a); engine/key-factors.ts): the score,
 * its range, when it was made, the scorecard that made it, who provided the credit file it was
 * built on, and its key factors.
 */
export interface CreditScoreDisclosure {
  score: number;
  range: { min: number; max: number } | null;
  /** ISO 8601: the time the decision was scored as of. */
  scoredAt: string | null;
  scorecard: string | null;
  /** The credit-data source of the file (`sandbox-synthetic`, `gateway:<host>`); null without one. */
  creditFileSource: string | null;
  keyFactors: Array<{ code: string; reason: string | null }>;
}

export interface DecisionExplanation {
  inputs: unknown;
  features: unknown;
  partialScores: Array<{
    characteristic: string;
    feature: string;
    value: unknown;
    attribute: string;
    dataPresent: boolean;
    points: number;
    maxPoints: number;
    pointsBelowMaximum: number;
    reasonCode: string;
    reason: string | null;
  }>;
  reasons: Array<{ code: string; reason: string }>;
  /** A counteroffer's reasons (the notice owed if it is not taken, 12 CFR 1002.9(a)(1)(iv)): the engine's on an automatic approval for less, the underwriter's after an override (ADR 0046); else empty. */
  counterofferReasons: Array<{ code: string; reason: string }>;
  score: number | null;
  /** What FCRA 615(a) has the lender disclose when this score was used in adverse action; null when nothing was scored. */
  creditScoreDisclosure: CreditScoreDisclosure | null;
  riskGrade: string | null;
  confidence: number | null;
  versions: { engineVersion: string | null; engine: string | null; scorecard: string | null; policy: string | null };
  kyc: unknown;
  offer: unknown;
  timings: Record<string, unknown>;
  /** The stored record as kept, for what the sections above do not show (PII-free by construction, masked again here). */
  record: unknown;
}

export const DASHBOARD_MAX_PERIOD_MS = 31 * 24 * 3600_000;
export const DASHBOARD_DEFAULT_PERIOD_MS = 24 * 3600_000;
const HOUR_MS = 3600_000;
/** The UTC hour of a decision: integer division of epoch milliseconds, a literal so both dialects divide integers. */
const hourOf = sql<number | string>`created_at / ${sql.lit(HOUR_MS)}`;
const EXPORT_PAGE = 500;
export const MAX_PAGE_SIZE = 100;

/** Pending verifications by age at the end of the period (upper bounds exclusive). */
export const PENDING_AGE_BUCKETS = [
  { key: 'under_1h', label: '< 1 h', maxMs: 1 * HOUR_MS },
  { key: '1h_to_6h', label: '1–6 h', maxMs: 6 * HOUR_MS },
  { key: '6h_to_24h', label: '6–24 h', maxMs: 24 * HOUR_MS },
  { key: '24h_to_72h', label: '24–72 h', maxMs: 72 * HOUR_MS },
  // A pending state lives at most 72 h; one older is overdue until the expiry sweeper runs.
  { key: 'over_72h', label: '> 72 h (overdue)', maxMs: Number.POSITIVE_INFINITY },
] as const;
/** How far back a decision can still be pending at a moment (72 h plus a margin for the sweeper). */
const PENDING_LOOKBACK_MS = 7 * 24 * HOUR_MS;

export interface DashboardHour {
  hour: Date;
  approved: number;
  declined: number;
  referred: number;
  pending: number;
  total: number;
  /** approved / (approved + declined + referred); null when nothing was decided in the hour. */
  approvalRate: number | null;
  latencyCount: number;
  latencyP50Ms: number | null;
  latencyP99Ms: number | null;
}

export interface DashboardEndpoint {
  endpointId: string;
  url: string;
  state: string;
  delivered: number;
  failed: number;
  pending: number;
  cancelled: number;
  /** delivered / (delivered + failed): finished deliveries only; null when none finished. */
  successRate: number | null;
}

export interface Dashboard {
  from: Date;
  to: Date;
  hours: DashboardHour[];
  totals: { approved: number; declined: number; referred: number; pending: number; total: number; approvalRate: number | null };
  latency: { count: number; p50Ms: number | null; p99Ms: number | null };
  pendingVerifications: { asOf: Date; total: number; buckets: Array<{ key: string; label: string; count: number }> };
  webhooks: DashboardEndpoint[];
}

export interface ReportingDeps {
  readDb: Kysely<Database>;
  /** Reads that may scan a whole period or history: the dashboard, the explorer's pages, the CSV export (Storage.analyticsDb: off the event loop on SQLite). */
  analyticsDb: Kysely<Database>;
  decisions: DecisionsService;
  webhooks: WebhooksService;
}

const LIST_COLUMNS = [
  'id',
  'application_id',
  'consumer_id',
  'product',
  'status',
  'outcome',
  'kyc_tier',
  'kyc_status',
  'currency',
  'merchant_name',
  'merchant_category',
  'requested_amount_cents',
  'requested_plan',
  'requested_term_months',
  'approved_amount_cents',
  'plan',
  'term_months',
  'apr',
  'score',
  'risk_grade',
  'reasons_json',
  'engine_version',
  'latency_ms',
  'created_at',
  'completed_at',
] as const;

type ListRow = Pick<DecisionsTable, Exclude<(typeof LIST_COLUMNS)[number], 'latency_ms'>> & {
  latency_ms?: number | null;
  /** When an underwriter approved the decision (`underwriting_actions`), if one did: a counteroffer counts from it. */
  approved_by_underwriter_at?: number | string | null;
};

/**
 * The list's columns and, for approvals, when an underwriter approved (one index probe of
 * `underwriting_actions_decision`): the instant the notice takes from the audit record's override,
 * recorded in the same transaction (underwriting.service `recordAction`).
 */
function listSelection<Q extends SelectQueryBuilder<Database, 'decisions', object>>(q: Q) {
  return q.select([...LIST_COLUMNS]).select((eb) =>
    eb
      .case()
      .when('decisions.outcome', '=', 'approved')
      .then(eb.selectFrom('underwriting_actions as ua').whereRef('ua.decision_id', '=', 'decisions.id').where('ua.kind', '=', 'approved').select((e) => e.fn.max('ua.created_at').as('at')))
      .else(null)
      .end()
      .as('approved_by_underwriter_at'),
  );
}

/** The CSV's columns, in order (docs/portal.md lists them). */
export const CSV_COLUMNS: Array<[string, (i: DecisionListItem) => string | number | null]> = [
  ['decision_id', (i) => i.decisionId],
  ['application_id', (i) => i.applicationId],
  ['created_at', (i) => i.createdAt.toISOString()],
  ['completed_at', (i) => (i.completedAt ? i.completedAt.toISOString() : null)],
  ['consumer_id', (i) => i.consumerId],
  ['product', (i) => i.product],
  ['status', (i) => i.status],
  ['outcome', (i) => i.outcome],
  ['kyc_tier', (i) => i.kycTier],
  ['kyc_status', (i) => i.kycStatus],
  ['currency', (i) => i.currency],
  ['merchant_name', (i) => i.merchantName],
  ['merchant_category', (i) => i.merchantCategory],
  ['requested_amount', (i) => i.requestedAmount],
  ['approved_amount', (i) => i.approvedAmount],
  ['plan', (i) => i.plan],
  ['term_months', (i) => i.termMonths],
  ['apr', (i) => i.apr],
  ['score', (i) => i.score],
  ['risk_grade', (i) => i.riskGrade],
  ['reason_codes', (i) => i.reasonCodes.join(' ')],
  ['engine_version', (i) => i.engineVersion],
  ['latency_ms', (i) => i.latencyMs],
  ['adverse_action', (i) => i.adverseAction],
  ['notice_due_by', (i) => i.noticeDueBy],
];

export function createReportingService(deps: ReportingDeps) {
  const { readDb, analyticsDb } = deps;

  /**
   * The decisions of the scope that pass the filters. The explorer's pages and the CSV export read
   * through `analyticsDb`: a page is a walk of the scope's decisions newest first until it is full,
   * which a rare filter (an outcome or product seldom seen, a consumer with nothing lately) can
   * stretch over the whole history; on SQLite that walk must not hold the event loop (ADR 0029).
   */
  function filtered(scope: ReportingScope, filters: DecisionFilters, from: Kysely<Database> = analyticsDb) {
    let q = from.selectFrom('decisions').where('tenant_id', '=', scope.tenantId).where('environment', '=', scope.environment);
    if (filters.decisionId) q = q.where('id', '=', filters.decisionId.toLowerCase());
    if (filters.consumerId) q = q.where('consumer_id', '=', filters.consumerId.toLowerCase());
    if (filters.outcome === 'pending') q = q.where('status', '=', 'needs_consumer_action');
    else if (filters.outcome) q = q.where('outcome', '=', filters.outcome).where('status', '=', 'complete');
    if (filters.adverseAction) q = q.where((eb) => adverseActionIs(eb, filters.adverseAction!));
    if (filters.product) q = q.where('product', '=', filters.product as DecisionsTable['product']);
    if (filters.from) q = q.where('created_at', '>=', filters.from.getTime());
    if (filters.to) q = q.where('created_at', '<', filters.to.getTime());
    return q;
  }

  /** One page, newest first; `cursor` continues after the previous page's last row. */
  async function listDecisions(scope: ReportingScope, filters: DecisionFilters, options: { limit?: number; cursor?: string | null } = {}): Promise<DecisionPage> {
    const limit = Math.min(Math.max(options.limit ?? 25, 1), EXPORT_PAGE);
    let q = filtered(scope, filters);
    if (options.cursor) {
      const after = decodeCursor(options.cursor);
      q = q.where((eb) => eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)])]));
    }
    const rows = (await listSelection(q)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit + 1)
      .execute()) as ListRow[];
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { items: page.map(listItem), nextCursor: rows.length > limit && last ? encodeCursor(last.created_at, last.id) : null };
  }

  /**
   * The filtered list as CSV text (header first), every page, fetched as it is written. The first
   * page is read before this resolves, so a database that is down answers 503 rather than a
   * 200 with a cut-off file; later pages stream.
   */
  async function exportDecisionsCsv(scope: ReportingScope, filters: DecisionFilters, options: { pageSize?: number } = {}): Promise<AsyncGenerator<string>> {
    const limit = options.pageSize ?? EXPORT_PAGE;
    const first = await listDecisions(scope, filters, { limit });
    const rows = (page: DecisionPage) => page.items.map((item) => csvRecord(CSV_COLUMNS.map(([, value]) => value(item)))).join('');
    return (async function* () {
      yield csvRecord(CSV_COLUMNS.map(([name]) => name));
      let page = first;
      for (;;) {
        if (page.items.length > 0) yield rows(page);
        if (page.nextCursor === null) return;
        page = await listDecisions(scope, filters, { limit, cursor: page.nextCursor });
      }
    })();
  }

  /** One decision explained; another tenant's or environment's id is "not found". */
  async function getDecisionDetail(scope: ReportingScope, decisionId: string): Promise<DecisionDetail> {
    const row = (await listSelection(filtered(scope, { decisionId }, readDb)).executeTakeFirst()) as ListRow | undefined;
    if (!row) throw new ApiError('not_found', 'No such decision in this environment.');
    const view = await deps.decisions.getDecision(scope, row.product, row.id);
    if (!view) throw new ApiError('not_found', 'No such decision in this environment.');
    const record = (await deps.decisions.getAuditRecord(scope, row.id)) as AuditRecord | null;

    const subjects = [...new Set([row.id, row.application_id])];
    const eventRows = await readDb
      .selectFrom('events')
      .select(['id', 'type', 'subject_id', 'data_json', 'created_at'])
      .where('subject_id', 'in', subjects)
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    // Events of one transaction share their time (the outbox writes them in one statement) and ids
    // are random: within a time they are put in the order the decision's life appends them.
    const events = eventRows
      .map((e) => ({ id: e.id, type: e.type, subjectId: e.subject_id, data: JSON.parse(e.data_json) as unknown, createdAt: new Date(Number(e.created_at)) }))
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || lifecycleRank(a.type) - lifecycleRank(b.type) || a.id.localeCompare(b.id));
    const deliveryViews = await deps.webhooks.listDeliveriesOfEvents(scope, events.map((e) => e.id));
    const endpointIds = [...new Set(deliveryViews.map((d) => d.endpointId))];
    const endpoints =
      endpointIds.length === 0
        ? []
        : await readDb.selectFrom('webhook_endpoints').select(['id', 'url']).where('id', 'in', endpointIds).where('tenant_id', '=', scope.tenantId).execute();
    const urls = new Map(endpoints.map((e) => [e.id, e.url]));
    // In the events' order, then by endpoint: a decision's story reads top to bottom.
    const eventIndex = new Map(events.map((e, i) => [e.id, i]));
    deliveryViews.sort((a, b) => eventIndex.get(a.eventId)! - eventIndex.get(b.eventId)! || (urls.get(a.endpointId) ?? '').localeCompare(urls.get(b.endpointId) ?? '') || a.id.localeCompare(b.id));
    const attempts = await deps.webhooks.listAttemptsOfDeliveries(scope, deliveryViews.map((d) => d.id));
    const deliveries = deliveryViews.map((delivery) => ({ delivery, endpointUrl: urls.get(delivery.endpointId) ?? null, attempts: attempts.get(delivery.id) ?? [] }));

    const item = listItem({ ...row, ...pickFresh(view.row) });
    return { item, decision: maskVerificationUrl(view.body), explanation: explain(record, view.row), events, deliveries };
  }

  async function dashboard(scope: ReportingScope, period: { from: Date; to: Date }): Promise<Dashboard> {
    const fromMs = period.from.getTime();
    const toMs = period.to.getTime();
    const inPeriod = analyticsDb
      .selectFrom('decisions')
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .where('created_at', '>=', fromMs)
      .where('created_at', '<', toMs);

    // Decisions per UTC hour by outcome (pending: still waiting for the consumer).
    const grouped = await inPeriod
      .select((eb) => [hourOf.as('hour'), 'status', 'outcome', eb.fn.countAll<number | string>().as('n')])
      .groupBy([hourOf, 'status', 'outcome'])
      .execute();
    // Latency: nearest-rank p50 and p99 of the stored latencies, per hour and over the period,
    // ranked by the database, which returns only the rows at those ranks, each marked with what it
    // is, and the counts: not every decision of the period (a month of a busy lender is millions
    // of rows, which the service used to load, hold and walk on its event loop; docs/performance.md,
    // "eleventh session"). The rank ceil(p/100 * n) is written in integers (`nearestRank`), so both
    // dialects compute it alike; SQLite's booleans are 0 and 1, PostgreSQL's true and false.
    const latencyRanks = await sql<{ hour: number | string; latency_ms: number; in_hour: number | string; total: number | string; hour_p50: unknown; hour_p99: unknown; p50: unknown; p99: unknown }>`
      select hour, latency_ms, in_hour, total, hour_p50, hour_p99, p50, p99
        from (select hour, latency_ms, in_hour, total,
                     rank_in_hour = ${nearestRank(50, sql.ref('in_hour'))} as hour_p50,
                     rank_in_hour = ${nearestRank(99, sql.ref('in_hour'))} as hour_p99,
                     overall_rank = ${nearestRank(50, sql.ref('total'))} as p50,
                     overall_rank = ${nearestRank(99, sql.ref('total'))} as p99
                from (select ${hourOf} as hour, latency_ms,
                             row_number() over (partition by ${hourOf} order by latency_ms) as rank_in_hour,
                             count(*) over (partition by ${hourOf}) as in_hour,
                             row_number() over (order by latency_ms) as overall_rank,
                             count(*) over () as total
                        from decisions
                       where tenant_id = ${scope.tenantId} and environment = ${scope.environment}
                         and created_at >= ${fromMs} and created_at < ${toMs} and latency_ms is not null) as ranked) as marked
       where hour_p50 or hour_p99 or p50 or p99`.execute(analyticsDb);

    const hours = new Map<number, DashboardHour>();
    const firstHour = Math.floor(fromMs / HOUR_MS);
    const lastHour = Math.floor((toMs - 1) / HOUR_MS);
    for (let h = firstHour; h <= lastHour; h++) hours.set(h, emptyHour(h));
    const totals = { approved: 0, declined: 0, referred: 0, pending: 0, total: 0, approvalRate: null as number | null };
    for (const g of grouped) {
      const hour = hours.get(Number(g.hour));
      if (!hour) continue;
      const n = Number(g.n);
      const key: OutcomeFilter = g.status === 'needs_consumer_action' || g.outcome === null ? 'pending' : g.outcome;
      hour[key] += n;
      hour.total += n;
      totals[key] += n;
      totals.total += n;
    }
    const latency = { count: 0, p50Ms: null as number | null, p99Ms: null as number | null };
    for (const r of latencyRanks.rows) {
      const value = Number(r.latency_ms);
      const hour = hours.get(Number(r.hour));
      if (hour) {
        hour.latencyCount = Number(r.in_hour);
        if (r.hour_p50) hour.latencyP50Ms = value;
        if (r.hour_p99) hour.latencyP99Ms = value;
      }
      latency.count = Number(r.total);
      if (r.p50) latency.p50Ms = value;
      if (r.p99) latency.p99Ms = value;
    }
    for (const hour of hours.values()) hour.approvalRate = rate(hour.approved, hour.approved + hour.declined + hour.referred);
    totals.approvalRate = rate(totals.approved, totals.approved + totals.declined + totals.referred);

    return {
      from: period.from,
      to: period.to,
      hours: [...hours.values()],
      totals,
      latency,
      pendingVerifications: await pendingVerifications(scope, toMs),
      webhooks: await webhookSuccess(scope, fromMs, toMs),
    };
  }

  /**
   * Decisions waiting for the consumer at `asOfMs`: created by then, on a verification tier, and
   * not completed by then (a pending decision has no completed_at; a finished one has its time),
   * so the answer is the same whether asked at that moment or later.
   */
  async function pendingVerifications(scope: ReportingScope, asOfMs: number): Promise<Dashboard['pendingVerifications']> {
    const rows = await analyticsDb
      .selectFrom('decisions')
      .select('created_at')
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .where('created_at', '<', asOfMs)
      .where('created_at', '>=', asOfMs - PENDING_LOOKBACK_MS)
      .where('kyc_tier', 'in', ['enhanced', 'hard'])
      .where((eb) => eb.or([eb('completed_at', 'is', null), eb('completed_at', '>', asOfMs)]))
      .execute();
    const counts = PENDING_AGE_BUCKETS.map(() => 0);
    for (const r of rows) {
      const age = asOfMs - Number(r.created_at);
      const index = PENDING_AGE_BUCKETS.findIndex((b) => age < b.maxMs);
      counts[index] = counts[index]! + 1;
    }
    return { asOf: new Date(asOfMs), total: rows.length, buckets: PENDING_AGE_BUCKETS.map((b, i) => ({ key: b.key, label: b.label, count: counts[i]! })) };
  }

  /** Deliveries created in the period, per endpoint (deleted endpoints too: their history counts). */
  async function webhookSuccess(scope: ReportingScope, fromMs: number, toMs: number): Promise<DashboardEndpoint[]> {
    const rows = await analyticsDb
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .select((eb) => ['d.endpoint_id', 'e.url', 'e.state as endpoint_state', 'd.state', eb.fn.countAll<number | string>().as('n')])
      .where('d.tenant_id', '=', scope.tenantId)
      .where('d.environment', '=', scope.environment)
      .where('d.created_at', '>=', fromMs)
      .where('d.created_at', '<', toMs)
      .groupBy(['d.endpoint_id', 'e.url', 'e.state', 'd.state'])
      .execute();
    const byEndpoint = new Map<string, DashboardEndpoint>();
    for (const r of rows) {
      const e = byEndpoint.get(r.endpoint_id) ?? { endpointId: r.endpoint_id, url: r.url, state: r.endpoint_state, delivered: 0, failed: 0, pending: 0, cancelled: 0, successRate: null };
      e[r.state] += Number(r.n);
      byEndpoint.set(r.endpoint_id, e);
    }
    const out = [...byEndpoint.values()];
    for (const e of out) e.successRate = rate(e.delivered, e.delivered + e.failed);
    return out.sort((a, b) => a.url.localeCompare(b.url) || a.endpointId.localeCompare(b.endpointId));
  }

  /**
   * One decision's row and explanation, without its events and deliveries (what an adverse-action
   * notice is built from), and when an underwriter last acted on it; null when it is not this
   * tenant's and environment's (or, when `product` is given, not of that product).
   */
  async function explainDecision(
    scope: ReportingScope,
    decisionId: string,
    product: DecisionsTable['product'] | null = null,
  ): Promise<{ row: DecisionsTable; explanation: DecisionExplanation; lastOverrideAt: Date | null; consumerReportUsed: boolean } | null> {
    const view = await deps.decisions.getDecision(scope, product, decisionId);
    if (!view) return null;
    const record = (await deps.decisions.getAuditRecord(scope, decisionId)) as AuditRecord | null;
    const at = record?.overrides?.at(-1)?.at;
    return {
      row: view.row,
      explanation: explain(record, view.row),
      lastOverrideAt: typeof at === 'string' ? new Date(at) : null,
      // The credit data answered for this decision (a file, or "no file"): a consumer report was used.
      consumerReportUsed: record?.credit_data?.status === 'ok',
    };
  }

  return { listDecisions, exportDecisionsCsv, getDecisionDetail, explainDecision, dashboard };
}

export type ReportingService = ReturnType<typeof createReportingService>;

const LIFECYCLE = [
  'application.created',
  'decision.created',
  'application.kyc_completed',
  'score.completed',
  'score.errored',
  'application.kyc_failed',
  'decision.finalized',
  'application.documents_requested',
  'application.condition_added',
  'decision.adjusted',
];

function lifecycleRank(type: string): number {
  const i = LIFECYCLE.indexOf(type);
  return i === -1 ? LIFECYCLE.length : i;
}

/**
 * The nearest rank of the p-th percentile (p an integer) of `count` values, ceil(p/100 * count),
 * in SQL integers (integer division on both dialects; the count is at least 1 where it is read):
 * the value at that rank in ascending order is the smallest with at least p% of the values at or
 * below it.
 */
function nearestRank(p: number, count: RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`(${sql.lit(p)} * ${count} + 99) / 100`;
}

/** A ratio rounded to 4 decimals (0.8333), or null when there is nothing to divide by. */
function rate(part: number, whole: number): number | null {
  return whole === 0 ? null : Math.round((part / whole) * 10_000) / 10_000;
}

function emptyHour(h: number): DashboardHour {
  return { hour: new Date(h * HOUR_MS), approved: 0, declined: 0, referred: 0, pending: 0, total: 0, approvalRate: null, latencyCount: 0, latencyP50Ms: null, latencyP99Ms: null };
}

/**
 * `noticeActionOf` (modules/notices) as a WHERE clause, so the explorer can list the decisions that
 * owe a notice: declined, or approved for less or on another plan or term than the request named.
 * test/integration/portal/notices.test.ts checks that both say the same of every shape of row,
 * missing plans and terms included.
 */
function adverseActionIs(eb: ExpressionBuilder<Database, 'decisions'>, kind: AdverseActionFilter) {
  const declined = eb.and([eb('status', '=', 'complete'), eb('outcome', '=', 'declined')]);
  const counteroffer = eb.and([
    eb('status', '=', 'complete'),
    eb('outcome', '=', 'approved'),
    eb.or([
      eb('approved_amount_cents', '<', eb.ref('requested_amount_cents')),
      // As `!==` does: a missing plan or term differs from one the request named (SQL's `<>` would say unknown).
      eb.and([eb('requested_plan', 'is not', null), eb.or([eb('plan', 'is', null), eb('plan', '<>', eb.ref('requested_plan'))])]),
      eb.and([eb('requested_term_months', 'is not', null), eb.or([eb('term_months', 'is', null), eb('term_months', '<>', eb.ref('requested_term_months'))])]),
    ]),
  ]);
  if (kind === 'declined') return declined;
  if (kind === 'counteroffer') return counteroffer;
  return eb.or([declined, counteroffer]);
}

function listItem(r: ListRow): DecisionListItem {
  const reasons = JSON.parse(r.reasons_json) as Array<{ code: string }>;
  const action = noticeActionOf(r);
  return {
    decisionId: r.id,
    applicationId: r.application_id,
    consumerId: r.consumer_id,
    product: r.product,
    status: r.status,
    outcome: r.status === 'needs_consumer_action' || r.outcome === null ? 'pending' : r.outcome,
    kycTier: r.kyc_tier,
    kycStatus: r.kyc_status,
    currency: r.currency,
    merchantName: r.merchant_name,
    merchantCategory: r.merchant_category,
    requestedAmount: formatMoney(Number(r.requested_amount_cents)),
    approvedAmount: r.approved_amount_cents === null ? null : formatMoney(Number(r.approved_amount_cents)),
    plan: r.plan,
    termMonths: r.term_months,
    apr: r.apr,
    score: r.score,
    riskGrade: r.risk_grade,
    reasonCodes: reasons.map((x) => x.code),
    adverseAction: action,
    noticeDueBy: action === null ? null : noticeDueBy(action, r.completed_at === null ? null : Number(r.completed_at), new Date(Number(r.approved_by_underwriter_at ?? r.completed_at))),
    engineVersion: r.engine_version,
    latencyMs: r.latency_ms ?? null,
    createdAt: new Date(Number(r.created_at)),
    completedAt: r.completed_at === null ? null : new Date(Number(r.completed_at)),
  };
}

/** The columns that may have changed when the read finished an overdue pending decision. */
function pickFresh(row: DecisionsTable): Partial<ListRow> {
  const { status, outcome, kyc_status, reasons_json, approved_amount_cents, plan, term_months, apr, score, risk_grade, engine_version, completed_at, latency_ms } = row;
  return { status, outcome, kyc_status, reasons_json, approved_amount_cents, plan, term_months, apr, score, risk_grade, engine_version, completed_at, latency_ms: latency_ms ?? null };
}

// ---- cursor ------------------------------------------------------------------------------

function encodeCursor(createdAt: number, id: string): string {
  return Buffer.from(`${createdAt}:${id}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: number; id: string } {
  const text = /^[A-Za-z0-9_-]{1,200}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const match = /^(\d{1,16}):([0-9a-f-]{36})$/.exec(text);
  if (!match) throw new ApiError('invalid_request', 'cursor is not a cursor this list returned.');
  return { createdAt: Number(match[1]), id: match[2]! };
}

// ---- the audit record, explained -----------------------------------------------------------

interface AuditRecord {
  request?: unknown;
  kyc?: unknown;
  engine?: {
    engineVersion?: string;
    versions?: { engine?: string; scorecard?: string; policy?: string };
    input?: { requestedAmountCents?: number; planPreference?: unknown; history?: unknown; asOf?: string; creditData?: { status?: string; file?: unknown } };
    score?: number | null;
    confidence?: number;
    riskGrade?: string | null;
    features?: unknown;
    partialScores?: Array<{ characteristic: string; feature: string; value: unknown; attribute: string; dataPresent: boolean; points: number; maxPoints: number; pointsBelowBaseline?: number; reasonCode: string }>;
    timings?: Record<string, unknown>;
    counterofferReasons?: Array<{ code: string; reason: string }>;
  };
  reasons?: Array<{ code: string; reason: string }>;
  offer?: unknown;
  timings?: Record<string, unknown>;
  /** What the credit data answered (decisions.service auditOf): `ok` with a file or "no file", or `unavailable`. */
  credit_data?: { status?: string } | null;
  /** An underwriter's actions on a referral, oldest first (underwriting.service appendOverride). */
  overrides?: Array<{ action?: string; at?: string; counteroffer_reasons?: Array<{ code: string; reason: string }> }>;
  [key: string]: unknown;
}

function explain(record: AuditRecord | null, row: DecisionsTable): DecisionExplanation {
  const engine = record?.engine;
  const stored = JSON.parse(row.reasons_json) as Array<{ code: string; reason: string }>;
  // Once an underwriter has acted, the reasons are that action's: a decline's (the row's), none for
  // an approval, and a counteroffer's those the underwriter gave (ADR 0046), not the engine's.
  const override = record?.overrides?.at(-1);
  const reasons = override ? stored : (record?.reasons ?? stored);
  const counterofferReasons = override ? (override.action === 'approved' ? (override.counteroffer_reasons ?? []) : []) : (engine?.counterofferReasons ?? []);
  return {
    inputs: maskPii({
      request: record?.request ?? null,
      credit_data: record?.credit_data ?? null,
      credit_file: engine?.input?.creditData?.file ?? null,
      history: engine?.input?.history ?? null,
      as_of: engine?.input?.asOf ?? null,
    }),
    features: maskPii(engine?.features ?? null),
    partialScores: (engine?.partialScores ?? []).map((p) => ({
      characteristic: p.characteristic,
      feature: p.feature,
      value: p.value,
      attribute: p.attribute,
      dataPresent: p.dataPresent,
      points: p.points,
      maxPoints: p.maxPoints,
      // Scorecard points can be fractional in a document; keep the difference exact to 1e-6.
      pointsBelowMaximum: Math.round((p.maxPoints - p.points) * 1e6) / 1e6,
      reasonCode: p.reasonCode,
      reason: isAdverseActionCode(p.reasonCode) ? adverseActionReason(p.reasonCode).reason : null,
    })),
    reasons,
    counterofferReasons: counterofferReasons.map((r) => ({ code: r.code, reason: r.reason })),
    score: engine?.score ?? row.score,
    creditScoreDisclosure: creditScoreDisclosure(engine, row),
    riskGrade: engine?.riskGrade ?? row.risk_grade,
    confidence: engine?.confidence ?? null,
    versions: {
      engineVersion: row.engine_version ?? engine?.engineVersion ?? null,
      engine: engine?.versions?.engine ?? null,
      scorecard: engine?.versions?.scorecard ?? null,
      policy: engine?.versions?.policy ?? null,
    },
    kyc: record?.kyc ?? null,
    offer: record?.offer ?? null,
    timings: { ...(record?.timings ?? {}), ...(engine?.timings ? { engine: engine.timings } : {}) },
    record: maskPii(record),
  };
}

function creditScoreDisclosure(engine: AuditRecord['engine'], row: DecisionsTable): CreditScoreDisclosure | null {
  const score = engine?.score ?? row.score;
  if (score === null || score === undefined) return null;
  // No credit file: nothing from a consumer report was used, so there is nothing to disclose.
  const file = engine?.input?.creditData?.file as { source?: unknown; hasFile?: unknown } | null | undefined;
  if (!file || file.hasFile === false) return null;
  const scorecard = engine?.versions?.scorecard ?? null;
  // The scorecard's own gap (below its baseline) when recorded; records keep it, the maximum is the fallback.
  const partials = (engine?.partialScores ?? []).map((p) => ({ reasonCode: p.reasonCode, pointsBelowBaseline: p.pointsBelowBaseline ?? p.maxPoints - p.points, dataPresent: p.dataPresent }));
  return {
    score,
    range: scoreRangeOf(scorecard),
    scoredAt: engine?.input?.asOf ?? null,
    scorecard,
    creditFileSource: typeof file.source === 'string' ? file.source : null,
    keyFactors: keyFactors(partials),
  };
}

/**
 * Defence in depth: the audit record is written without PII (decisions.service redactedRequest),
 * but whatever a future product puts there, a key naming personal data is masked before it leaves.
 */
const PII_KEYS = /^(first_?name|last_?name|name|email|phone|dob|date_of_birth|ssn|ssn_last4|address|line1|line2|street|zip|postal_code|ip_address)$/i;

export function maskPii(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskPii);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = PII_KEYS.test(k) && v !== null && typeof v !== 'boolean' ? '••••' : maskPii(v);
    return out;
  }
  return value;
}

/** The hosted-verification link is the consumer's key to their own check: never shown in the portal. */
function maskVerificationUrl(body: Record<string, unknown>): Record<string, unknown> {
  if (typeof body.consumer_complete_url !== 'string') return body;
  return { ...body, consumer_complete_url: maskVerifyLink(body.consumer_complete_url) };
}
