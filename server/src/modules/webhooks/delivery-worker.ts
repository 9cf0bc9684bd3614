/**
 * The webhook delivery worker: claims due deliveries with a lease, sends them, records the outcome.
 *
 * How it works (ADR 0005): one loop of short transactions, "cycles", one at a time. A cycle
 * writes the results of the sends that finished since the previous one, then claims due work for
 * the send slots that are free, and commits once. Whatever finishes while a cycle runs waits for
 * the next, so under load every cycle carries a batch of results and a batch of claims for the
 * price of one commit; on PostgreSQL four statements (begin, the results with the claim's
 * candidates, the claim, commit; five when a final failure may disable an endpoint) in two round
 * trips, as the connection is pipelined (ADR 0023: the BEGIN goes out with the results, the
 * COMMIT with the claim), where it used to take four round trips per endpoint claimed plus five
 * per result batch.
 * 1. Record. Each result's next step from the pure retry decision (retry-schedule.ts), written only
 *    where this worker's lease token still matches; every attempt row; each final outcome moves its
 *    endpoint's consecutive-failure count, the 50th failure in a row disabling it. On PostgreSQL the
 *    common case (no final failure) is one statement for the whole batch. The row stays leased
 *    until this commits; its send slot was freed when its HTTP exchange ended, and so was its
 *    place in what the worker holds at the endpoint (below).
 * 2. Claim. List endpoints (active only) with due, unleased deliveries, oldest due first, with how
 *    many of each are in flight anywhere (only the endpoints with pending deliveries are looked
 *    at, found by skipping through the queue's index: ADR 0025), and deal the free slots
 *    round-robin under a per-endpoint cap (fairness.ts). Then lease that many rows per endpoint:
 *    `leased_until = now + lease`, `lease_token = <new uuid>`. In flight = the sends each worker
 *    holds there, as the workers write them in `webhook_in_flight` in the same transactions as
 *    their claims and results (ADR 0021): a few rows per endpoint, not the deliveries' leases,
 *    whose dead row versions a count would walk on PostgreSQL. On PostgreSQL the listing also
 *    takes an advisory lock per endpoint (held to the commit), and one statement then recounts
 *    each locked endpoint in a fresh snapshot, picks rows `FOR UPDATE SKIP LOCKED`, leases them
 *    and returns what the sends need: several worker processes never claim the same row and the
 *    cap holds across them. SQLite has one writer and the cycle runs under `begin immediate`, so
 *    the listing's counts are still true when it claims (run one worker process on SQLite). The
 *    results and the claim each also write this worker's new count at the endpoints they touch.
 *    A worker claims ahead (ADR 0031): up to four times what it may send (fewer with a shorter
 *    lease: `claimAheadFactor`), at each endpoint and in all.
 *    What it may send at an endpoint is the cap minus what the other workers held there when it
 *    last claimed there; the rest waits in the worker, in due order, for a slot of its endpoint.
 *    What a worker holds is what it has still to send there, sending or waiting: a delivery whose
 *    send ended counts no more, though its result may wait for the next cycle.
 * 3. Send. A claimed delivery starts as soon as it has a send slot, at once or when a send at its
 *    endpoint ends (not at the next cycle: that is what claiming ahead is for): envelope {id, type,
 *    created, attempt, data}, a fresh signature for this attempt (two `v1=` during a rotation
 *    overlap), the spec's five headers, 10 s time-out, no redirects, addresses checked
 *    (sender.ts). A finished send wakes the loop. What waits is given back unsent (its lease
 *    ended, due again at once) when the worker stops, when its endpoint is auto-disabled, or when
 *    too little of its lease is left to cover a send.
 * A worker that dies mid-send leaves its rows leased; when the lease passes (it is longer than the
 * time-out plus a margin) any worker claims them again and sends the SAME attempt number again:
 * at least once, never silently dropped. A live worker that loses the database keeps its finished
 * results queued (claiming nothing more) and writes them once it is back, so an outage shorter than
 * the lease neither resends them nor holds the endpoint's slots until the lease passes. A cycle
 * whose COMMIT is in doubt (the connection died before its answer) is made good by the next one
 * (ADR 0026): a claim in doubt is undone (`claimsInDoubt`), results in doubt are written again,
 * each attempt recorded once (its id is fixed when the send ends). The lease only expires early if
 * a live worker is stuck for longer than the lease, and then the receiver may see a duplicate,
 * which `id` lets it drop.
 */
import { CompiledQuery, type Kysely, type QueryResult } from 'kysely';
import type { Logger } from 'pino';
import { isDatabaseUnavailable, type DialectName, type PipelinedPool } from '../../db/database.js';
import type { OffLoopStatement, OffLoopWriter } from '../../db/sqlite-offloop-writer.js';
import { eventLoopBusy } from '../../db/group-commit.js';
import { preparedOnPostgres } from '../../db/statements.js';
import { COMMIT_BOOKKEEPING, type WalSync } from '../../db/wal-sync.js';
import type { Database, WebhookAttemptsTable, WebhookDeliveriesTable } from '../../db/schema.js';
import { timeOrderedUuids, type Clock, type Random } from '../../lib/clock.js';
import { openedTextCache, type SecretBox } from '../../lib/crypto.js';
import { eventEnvelopeJson } from '../events/envelope.js';
import { planClaims, type ClaimCandidate, type ClaimPlanEntry } from './fairness.js';
import { AUTO_DISABLE_THRESHOLD, DEFAULT_RETRY_SCHEDULE, endpointHealthAfter, scheduleNextAttempt, type NextStep, type RetrySchedule } from './retry-schedule.js';
import { createWebhookSender, DEFAULT_SEND_TIMEOUT_MS, type Resolver, type SendResult, type WebhookSender } from './sender.js';
import { secretAssociatedData, signatureHeader } from './signing.js';
import { createQueueVacuum } from './queue-vacuum.js';

export const USER_AGENT = 'Svc-Webhooks/1.0';
/** Claims in doubt remembered at most (see `claimsInDoubt`); older ones are left to their leases. */
const MAX_CLAIMS_IN_DOUBT = 64;
/** Results written per transaction at most. */
const RECORD_BATCH = 100;
/** Opened endpoint secrets kept per worker at most. */
const OPENED_SECRETS_LIMIT = 1024;
/*
 * SQLite: the cycle's statements, as fixed texts (kept prepared by the storage's statement cache).
 * Batches go in as one JSON array parameter read with json_each, so a batch of any size is one
 * statement, not one per row (each statement costs a trip through the query executor). SQLite
 * takes anonymous `?` only, so a value used twice is passed twice.
 */

/**
 * The endpoints that have pending deliveries, found by skipping through the queue's index
 * (`webhook_deliveries_pending`, migration 0016): one probe per such endpoint, so a claim costs
 * nothing for the endpoints with nothing queued, however many the service has (ADR 0025). Each
 * step asks for the smallest endpoint id after the previous one; `state = 'pending'` is spelled
 * as a literal so that the planner may use the partial index.
 */
const SQLITE_PENDING_ENDPOINTS = `
pending_endpoints(endpoint_id) as (
  select (select min(d.endpoint_id) from webhook_deliveries d where d.state = 'pending')
  union all
  select (select min(d.endpoint_id) from webhook_deliveries d where d.state = 'pending' and d.endpoint_id > p.endpoint_id)
    from pending_endpoints p
   where p.endpoint_id is not null
)`;

/**
 * Candidates (see dueEndpoints): now, now, probe limit, worker, now, now, now, now, now, hold
 * limit, ahead, worker, now, mine, limit. `others` is what every other worker holds at the
 * endpoint (live rows); the WHERE keeps the endpoints where this worker may hold more:
 * ahead * (cap - others) - mine > 0 (ADR 0031). `mine` is a JSON array of [endpoint id, count]:
 * what this worker counts as its own there for the listing (`listingOf`), 0 where it is absent.
 */
const SQLITE_CANDIDATES = `
with recursive ${SQLITE_PENDING_ENDPOINTS}
select e.id as endpoint_id,
       (select count(*) from (select 1 as one from webhook_deliveries d
                               where d.endpoint_id = e.id and d.state = 'pending' and d.next_attempt_at <= ? and (d.leased_until is null or d.leased_until <= ?)
                               limit ?) as due_rows) as due,
       (select coalesce(sum(f.sends), 0) from webhook_in_flight f where f.endpoint_id = e.id and f.worker_id <> ? and f.held_until > ?) as others,
       (select d.next_attempt_at from webhook_deliveries d
         where d.endpoint_id = e.id and d.state = 'pending' and d.next_attempt_at <= ? and (d.leased_until is null or d.leased_until <= ?)
         order by d.next_attempt_at limit 1) as oldest_due
  from pending_endpoints p
  join webhook_endpoints e on e.id = p.endpoint_id
 where e.state = 'active'
   and exists (select 1 from webhook_deliveries d
                where d.endpoint_id = e.id and d.state = 'pending' and d.next_attempt_at <= ? and (d.leased_until is null or d.leased_until <= ?))
   and ? - ? * (select coalesce(sum(f.sends), 0) from webhook_in_flight f where f.endpoint_id = e.id and f.worker_id <> ? and f.held_until > ?)
         - coalesce((select m.value ->> 1 from json_each(?) as m where m.value ->> 0 = e.id), 0) > 0
 order by oldest_due asc, e.id asc
 limit ?`;

/**
 * One endpoint's claim: lease end, token, now, endpoint, now, now, how many. Due order straight
 * from the queue's index of pending rows, (endpoint_id, next_attempt_at), ties in index order: a
 * tie-breaker column would make every claim sort the whole tie (a burst of events committed in
 * the same millisecond is thousands of rows).
 */
const SQLITE_CLAIM = `
update webhook_deliveries set leased_until = ?, lease_token = ?, updated_at = ?
 where id in (select id from webhook_deliveries
               where endpoint_id = ? and state = 'pending' and next_attempt_at <= ? and (leased_until is null or leased_until <= ?)
               order by next_attempt_at
               limit ?)
returning id`;

/** What the sends of the claimed deliveries (a JSON array of ids) need. */
const SQLITE_CLAIMED = `
select d.id, d.attempts, d.endpoint_id, d.tenant_id, e.url, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at,
       ev.id as event_id, ev.type as event_type, ev.created_at as event_created_at, ev.data_json
  from webhook_deliveries d
  join events ev on ev.id = d.event_id
  join webhook_endpoints e on e.id = d.endpoint_id
 where d.id in (select value from json_each(?))
 order by d.next_attempt_at, d.id`;

/** Next steps (a JSON array of [id, token, attempts, state, next_attempt_at, last_attempt_at, status, error kind, finished_at, updated_at]) where the lease token still matches. */
const SQLITE_NEXT_STEPS = `
update webhook_deliveries as d
   set attempts = v.attempts, state = v.state, next_attempt_at = v.next_attempt_at, leased_until = null, lease_token = null,
       last_attempt_at = v.last_attempt_at, last_response_status = v.last_response_status, last_error_kind = v.last_error_kind,
       finished_at = v.finished_at, updated_at = v.updated_at
  from (select value ->> 0 as id, value ->> 1 as token, value ->> 2 as attempts, value ->> 3 as state, value ->> 4 as next_attempt_at,
               value ->> 5 as last_attempt_at, value ->> 6 as last_response_status, value ->> 7 as last_error_kind, value ->> 8 as finished_at,
               value ->> 9 as updated_at
          from json_each(?)) as v
 where d.id = v.id and d.lease_token = v.token
returning id`;

/**
 * Attempt rows (a JSON array of rows in the column order below). Each once: results written again
 * after a cycle in doubt (ADR 0048: the thread's answer lost after its COMMIT) find theirs there
 * (`where true`: SQLite's upsert after a select).
 */
const SQLITE_ATTEMPTS = `
insert into webhook_attempts (id, delivery_id, endpoint_id, attempt, request_headers_json, request_body, response_status, response_body,
                              duration_ms, error_kind, error_detail, created_at)
select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, value ->> 8, value ->> 9,
       value ->> 10, value ->> 11
  from json_each(?) where true
    on conflict (id) do nothing`;

/** Failure counts back to 0 (a JSON array of endpoint ids). */
const SQLITE_RESET = `update webhook_endpoints set consecutive_failures = 0 where id in (select value from json_each(?)) and consecutive_failures <> 0`;

/** This worker's sends held per endpoint: worker id, held until, a JSON array of [endpoint id, sends]. (`where true`: SQLite's upsert after a select.) */
const SQLITE_HELD = `
insert into webhook_in_flight (endpoint_id, worker_id, sends, held_until)
select value ->> 0, ?, value ->> 1, ? from json_each(?) where true
on conflict (endpoint_id, worker_id) do update set sends = excluded.sends, held_until = excluded.held_until`;

/**
 * Claimed rows given back unsent (a JSON array of [id, lease token]; ADR 0031): due again at once,
 * where the token is still this claim's.
 */
const SQLITE_RELEASE = `
update webhook_deliveries as d set leased_until = null, lease_token = null, updated_at = ?
  from (select value ->> 0 as id, value ->> 1 as token from json_each(?)) as v
 where d.id = v.id and d.lease_token = v.token`;

/*
 * PostgreSQL: the cycle's three statements, as fixed texts with numbered parameters (arrays where a
 * batch varies in size). Nothing is built or compiled per cycle, and each text is the same on every
 * call, so each connection keeps them as named prepared statements (db/statements.ts): parsed and
 * planned once, then only bound and executed. No `select *`: a prepared statement's columns are
 * fixed when it is planned.
 */

/**
 * An endpoint's due, unleased deliveries (`e` the endpoint): how many, up to the cap, and the
 * oldest one's due time; read from the due index in due order, stopping after `cap` rows.
 * `now` and `cap` are the parameters' places.
 */
const dueProbe = (now: string, cap: string) => `(
            select count(*) as due, min(x.next_attempt_at) as oldest_due
              from (select d.next_attempt_at from webhook_deliveries d
                     where d.endpoint_id = e.id and d.state = 'pending' and d.next_attempt_at <= ${now}::bigint
                       and (d.leased_until is null or d.leased_until <= ${now}::bigint)
                     order by d.next_attempt_at
                     limit ${cap}::integer) as x
          ) as probe`;

/**
 * The endpoint (`e`) of each pending endpoint id of `p`, by primary key. A lateral lookup with
 * LIMIT, not a join: the listing must be driven by the pending endpoints, and a planner that
 * misjudges the endpoints table (statistics of when it was small) would otherwise read every
 * endpoint and evaluate the in-flight sums for each before the join, which is the cost this
 * listing exists to avoid.
 */
const endpointOf = (p: string) => `(select e.id, e.state from webhook_endpoints e where e.id = ${p}.endpoint_id limit 1) as e`;

/**
 * What every worker but `worker` holds at `endpoint` (their live counts, by primary key): what
 * counts against the cap for that worker (ADR 0021, ADR 0031). The arguments are the parameters'
 * places or column names.
 */
const othersHold = (endpoint: string, worker: string, now: string) =>
  `(select coalesce(sum(f.sends), 0) from webhook_in_flight f where f.endpoint_id = ${endpoint} and f.worker_id <> ${worker}::text and f.held_until > ${now}::bigint)`;

/** This worker's counts (`worker`; `endpoints` and `sends` arrays, until `until`) written over its rows: a data-modifying CTE's body. */
const heldUpsert = (worker: string, endpoints: string, sends: string, until: string) => `
       insert into webhook_in_flight (endpoint_id, worker_id, sends, held_until)
       select h.endpoint_id, ${worker}::text, h.sends, ${until}::bigint from unnest(${endpoints}::text[], ${sends}::integer[]) as h(endpoint_id, sends)
       on conflict (endpoint_id, worker_id) do update set sends = excluded.sends, held_until = excluded.held_until`;

/** As SQLITE_PENDING_ENDPOINTS: the endpoints with pending deliveries, one index probe each. */
const PG_PENDING_ENDPOINTS = `
     pending_endpoints(endpoint_id) as (
       (select d.endpoint_id from webhook_deliveries d where d.state = 'pending' order by d.endpoint_id limit 1)
       union all
       select (select d.endpoint_id from webhook_deliveries d where d.state = 'pending' and d.endpoint_id > p.endpoint_id order by d.endpoint_id limit 1)
         from pending_endpoints p
        where p.endpoint_id is not null
     )`;

/**
 * Candidates ($1 now, $2 per-endpoint cap, $3 how many endpoints at most, $4 worker id, $5 how
 * far ahead of its sends a worker claims: 1 to 4, claimAheadFactor), oldest due first, each with what
 * every other worker holds there (`others`) and its advisory lock taken (see dueEndpoints). An
 * endpoint is listed while this worker may hold more there: $5 * (cap - others) > what it holds.
 */
const PG_CANDIDATES = preparedOnPostgres(`
with recursive ${PG_PENDING_ENDPOINTS.trim()}
select c.endpoint_id, c.due, c.others
  from (select e.id as endpoint_id, probe.due, probe.oldest_due, busy.others
          from pending_endpoints p
          cross join lateral ${endpointOf('p')}
          cross join lateral ${dueProbe('$1', '($2::integer * $5::integer)')}
          cross join lateral (
            select coalesce(sum(f.sends) filter (where f.worker_id <> $4::text), 0) as others,
                   coalesce(sum(f.sends) filter (where f.worker_id = $4::text), 0) as mine
              from webhook_in_flight f where f.endpoint_id = e.id and f.held_until > $1::bigint
          ) as busy
         where e.state = 'active' and probe.due > 0 and $5::integer * ($2::integer - busy.others) > busy.mine
         order by probe.oldest_due asc, e.id asc
         limit $3::integer) as c
 where pg_try_advisory_xact_lock(hashtext('cds.webhooks.claim.' || c.endpoint_id))
 order by c.oldest_due asc, c.endpoint_id asc`);

/**
 * The claim ($1 endpoint ids, $2 how many each, $3 cap, $4 now, $5 lease end, $6 lease token,
 * $7 worker id, $8 what this worker holds at each endpoint before the claim, $9 how far ahead of
 * its sends it claims, 1 to 4): read what every other worker holds at each endpoint again, pick
 * at most $9 * (cap - others) - held due rows, lease them by primary key, write this worker's new
 * counts, return the rows with their endpoint and event, and with `slots`, how many this worker
 * may send at once there (cap - others; see claimPostgres and ADR 0031).
 */
const PG_CLAIM = preparedOnPostgres(`
with want as (
       select w.endpoint_id, w.n, w.base from unnest($1::text[], $2::integer[], $8::integer[]) as w(endpoint_id, n, base)
     ),
     room as (
       select busy.endpoint_id, busy.others, least(busy.n, $9::integer * ($3::integer - busy.others) - busy.base)::integer as n
         from (select want.endpoint_id, want.n, want.base, ${othersHold('want.endpoint_id', '$7', '$4')}::integer as others from want) as busy
     ),
     pick as (
       select p.id
         from room
         cross join lateral (
           select d.id from webhook_deliveries d
            where d.endpoint_id = room.endpoint_id and d.state = 'pending' and d.next_attempt_at <= $4::bigint
              and (d.leased_until is null or d.leased_until <= $4::bigint)
            order by d.next_attempt_at
            limit greatest(room.n, 0)
            for update skip locked
         ) as p
     ),
     claimed as (
       update webhook_deliveries as d
          set leased_until = $5::bigint, lease_token = $6::text, updated_at = $4::bigint
        where d.id = any(array(select pick.id from pick))
       returning d.id, d.attempts, d.endpoint_id, d.tenant_id, d.event_id, d.next_attempt_at
     ),
     counted as (
       insert into webhook_in_flight (endpoint_id, worker_id, sends, held_until)
       select want.endpoint_id, $7::text, want.base + (select count(*) from claimed c where c.endpoint_id = want.endpoint_id)::integer, $5::bigint
         from want
       on conflict (endpoint_id, worker_id) do update set sends = excluded.sends, held_until = excluded.held_until
     )
select c.id, c.attempts, c.endpoint_id, c.tenant_id, e.url, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at,
       ev.id as event_id, ev.type as event_type, ev.created_at as event_created_at, ev.data_json,
       $3::integer - (select room.others from room where room.endpoint_id = c.endpoint_id) as slots
  from claimed c
  -- Each claimed row's endpoint and event by primary key (LIMIT keeps the planner from turning
  -- these into joins that may scan the events table when its statistics are missing).
  cross join lateral (select e.url, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at
                        from webhook_endpoints e where e.id = c.endpoint_id limit 1) as e
  cross join lateral (select ev.id, ev.type, ev.created_at, ev.data_json from events ev where ev.id = c.event_id limit 1) as ev
 order by c.next_attempt_at, c.id`);

/**
 * A batch of results, one array per column ($1..$17, row i of each array is one result; the
 * request's headers and body and the response's body, $13..$15, as JSON arrays of strings: pg
 * writes a text[] parameter by escaping each element in JavaScript, two regular-expression
 * passes over every body (5% of the worker's samples), which JSON.stringify does natively
 * (docs/performance.md, thirty-fourth session); each made well-formed first, as PostgreSQL's JSON
 * refuses a lone surrogate, which text[] turned into U+FFFD; $18 the
 * endpoints whose failure count may only reset; $19 worker id, $20 endpoints and $21 what this
 * worker holds at each once the batch is written, $22 until when): next steps where the lease
 * token still matches, every attempt row (once), the resets, the counts. Returns the deliveries
 * whose next step was written, and (`already`) those a cycle whose COMMIT was in doubt had written.
 */
// `recursive`: PG_RESULTS_THEN_CANDIDATES appends the recursive listing of the pending endpoints,
// and the keyword heads the whole list (it changes nothing for the others).
const PG_RESULT_CTES = `
with recursive v as (
       select * from rows from (unnest($1::text[]), unnest($2::text[]), unnest($3::integer[]), unnest($4::text[]), unnest($5::bigint[]),
                                unnest($6::bigint[]), unnest($7::integer[]), unnest($8::text[]), unnest($9::bigint[]), unnest($10::bigint[]),
                                unnest($11::text[]), unnest($12::text[]), json_array_elements_text($13::json), json_array_elements_text($14::json),
                                json_array_elements_text($15::json), unnest($16::integer[]), unnest($17::text[]))
                as v(id, token, attempts, state, next_attempt_at, last_attempt_at, last_response_status, last_error_kind, finished_at, updated_at,
                     attempt_id, endpoint_id, request_headers_json, request_body, response_body, duration_ms, error_detail)
     ),
     stepped as (
       update webhook_deliveries as d
          set attempts = v.attempts, state = v.state, next_attempt_at = v.next_attempt_at, leased_until = null, lease_token = null,
              last_attempt_at = v.last_attempt_at, last_response_status = v.last_response_status, last_error_kind = v.last_error_kind,
              finished_at = v.finished_at, updated_at = v.updated_at
         from v
        -- = any(...) lets the rows be found by primary key whatever the planner guesses of v.
        where d.id = any($1::text[]) and d.id = v.id and d.lease_token = v.token
       returning d.id, d.endpoint_id, d.state
     ),
     recorded as (
       insert into webhook_attempts (id, delivery_id, endpoint_id, attempt, request_headers_json, request_body, response_status, response_body,
                                     duration_ms, error_kind, error_detail, created_at)
       select attempt_id, id, endpoint_id, attempts, request_headers_json, request_body, last_response_status, response_body,
              duration_ms, last_error_kind, error_detail, last_attempt_at
         from v
       -- A result written again after a cycle whose COMMIT was in doubt (attempt ids are fixed
       -- when the send ends): its attempt is there already if that COMMIT happened.
       on conflict (id) do nothing
       returning id
     ),
     -- Results whose attempt that earlier cycle did record (and, in the same commit, their step).
     already as (
       select v.id from v where v.attempt_id not in (select r.id from recorded r)
     ),
     healthy as (
       update webhook_endpoints as e
          set consecutive_failures = 0
        where e.id in (select s.endpoint_id from stepped s where s.state = 'delivered' and s.endpoint_id = any($18::text[]))
          and e.consecutive_failures <> 0
     ),
     counted as (${heldUpsert('$19', '$20', '$21', '$22')}
     )`;

/** Lone surrogates as U+FFFD for the results' JSON arrays (String#toWellFormed: Node 20, ES2024, past this project's lib). */
function wellFormed(text: string): string {
  return (text as unknown as { toWellFormed(): string }).toWellFormed();
}

const PG_RESULTS = preparedOnPostgres(`${PG_RESULT_CTES}
select id, false as already from stepped
union all
select id, true from already`);

/**
 * The results (PG_RESULT_CTES, $1..$22) and then the candidates (as PG_CANDIDATES: $23 now, $24
 * cap, $25 how many endpoints at most, $28 how far ahead of its sends this worker claims;
 * advisory locks taken) in one statement: one round trip fewer per cycle. Its snapshot is the
 * statement's, so it does not see the results' own writes: the deliveries they record were leased
 * in it, and so not due, as they are not after; and this worker's counts in it are the ones
 * before the results, so the candidates count every other worker's live rows (`others`) and take
 * this worker's counts after the results from the caller ($26 endpoints, $27 sends: what it holds,
 * less its sends still out, as writeResultsPostgres says).
 * Rows: a recorded delivery (`id`, `already` as in PG_RESULTS), or a candidate (`id` null, the
 * other columns).
 */
const PG_RESULTS_THEN_CANDIDATES = preparedOnPostgres(`${PG_RESULT_CTES},${PG_PENDING_ENDPOINTS},
     mine as (
       select m.endpoint_id, m.sends from unnest($26::text[], $27::integer[]) as m(endpoint_id, sends)
     ),
     listed as (
       select e.id as endpoint_id, probe.due, probe.oldest_due, busy.others
         from pending_endpoints p
         cross join lateral ${endpointOf('p')}
         cross join lateral ${dueProbe('$23', '($24::integer * $28::integer)')}
         cross join lateral (
           select ${othersHold('e.id', '$19', '$23')} as others,
                  coalesce((select mine.sends from mine where mine.endpoint_id = e.id), 0) as mine
         ) as busy
        where e.state = 'active' and probe.due > 0 and $28::integer * ($24::integer - busy.others) > busy.mine
        order by probe.oldest_due asc, e.id asc
        limit $25::integer
     )
select s.id, false as already, null::text as endpoint_id, null::bigint as due, null::bigint as others, null::bigint as oldest_due from stepped s
union all
select a.id, true, null, null, null, null from already a
union all
select null, null, l.endpoint_id, l.due, l.others, l.oldest_due from listed l
 where pg_try_advisory_xact_lock(hashtext('cds.webhooks.claim.' || l.endpoint_id))`);

/**
 * Undoes claims in doubt ($1 their endpoints, $2 their lease tokens, $3 now, $4 this worker's
 * counts at those endpoints, $5 worker id; see `claimsInDoubt`): whatever rows they leased are
 * due again, and this worker's stored counts there are what it really holds. Rows another claim
 * has leased since carry another token and are left alone, so running it twice changes nothing.
 */
const PG_UNDO_CLAIMS = preparedOnPostgres(`
with undone as (
       update webhook_deliveries as d
          set leased_until = null, lease_token = null, updated_at = $3::bigint
        where d.endpoint_id = any($1::text[]) and d.state = 'pending' and d.lease_token = any($2::text[])
       returning d.id
     ),
     recounted as (
       update webhook_in_flight as f
          set sends = h.sends
         from unnest($1::text[], $4::integer[]) as h(endpoint_id, sends)
        where f.endpoint_id = h.endpoint_id and f.worker_id = $5::text
     )
select count(*)::integer as undone from undone`);

/**
 * Claimed rows given back unsent ($1 ids, $2 their lease tokens, $3 now; ADR 0031): due again at
 * once where the token is still the claim's; this worker's counts ($4 worker id, $5 endpoints,
 * $6 what it holds at each once they are given back, $7 until when) in the same statement.
 */
const PG_RELEASE = preparedOnPostgres(`
with released as (
       update webhook_deliveries as d
          set leased_until = null, lease_token = null, updated_at = $3::bigint
         from unnest($1::text[], $2::text[]) as v(id, token)
        where d.id = any($1::text[]) and d.id = v.id and d.lease_token = v.token
       returning d.id
     ),
     counted as (${heldUpsert('$4', '$5', '$6', '$7')}
     )
select count(*)::integer as released from released`);

/**
 * How a PostgreSQL cycle's transaction begins. Its commit does not wait for the disk (see
 * `inTransaction`). And its statements run with generic plans: PostgreSQL plans each once per
 * connection instead of at every execution. Left to itself it made a custom plan for every claim
 * (a custom plan's estimate, from the values, beat the generic one's, so it never switched), which
 * was 7% of PostgreSQL's CPU per delivery in a profile; forced, PostgreSQL's CPU per delivery fell
 * 6% on average over ten alternating pairs (docs/performance.md, "twenty-third session", ADR 0039).
 * The plans do not depend on the values: every statement reaches the queue by endpoint or primary
 * key whatever the statistics say, which delivery-pipelined-cycle.test.ts checks on a queue
 * without statistics.
 */
const CYCLE_BEGIN = 'begin; set local synchronous_commit = off; set local plan_cache_mode = force_generic_plan';

/** The claim's listing statements, for the suite that checks what they read (many-endpoints.test.ts). */
export const LISTING_STATEMENTS = { sqlite: SQLITE_CANDIDATES, postgres: PG_CANDIDATES, postgresAfterResults: PG_RESULTS_THEN_CANDIDATES } as const;

export interface DeliveryWorkerOptions {
  /** Per attempt (interface.md: 10 s). */
  timeoutMs: number;
  /** How long a claim holds a row; must exceed the time-out plus the time to record a result. */
  leaseMs: number;
  /** Deliveries in flight in this worker at most. */
  concurrency: number;
  /** Deliveries in flight per endpoint across all workers at most. */
  perEndpointConcurrency: number;
  /**
   * Claim up to as many again as this worker may send, so that a send slot freed by a finished
   * send starts the next claimed delivery at once instead of waiting for a cycle (ADR 0031).
   */
  claimAhead: boolean;
  /** How often a running worker looks for due work when nothing woke it. */
  pollIntervalMs: number;
  allowPrivateNetworks: boolean;
  /** CAs to trust instead of the default store (tests); production uses the store plus NODE_EXTRA_CA_CERTS. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** DNS resolution (tests simulate answers). */
  resolve?: Resolver;
  schedule: RetrySchedule;
  autoDisableThreshold: number;
  /**
   * PostgreSQL: a running worker vacuums the delivery queue itself once it holds more dead rows
   * than autovacuum would ever leave (queue-vacuum.ts, ADR 0041); false: never.
   */
  queueVacuum?: { deadRowsAbove: number; intervalMs: number } | false;
}

/**
 * How many times what it may send a worker holds at an endpoint (ADR 0031, amended 2026-12-03).
 * A claimed delivery waits in the worker behind at most `ahead - 1` sends at its endpoint (its
 * slots serve the endpoint's queue in turn, and each send ends within the time-out, a little
 * after it at worst: timers fire late, the next send starts a turn later, and the claim's clock
 * was read before its commit; `LATE_MS` covers all of that together). It may start only with
 * `timeout + (lease - timeout) / 2` of its lease left, so the wait must fit in the other half of
 * the lease's margin: `(ahead - 1) * timeout + LATE_MS <= (lease - timeout) / 2`. With the
 * defaults (75 s, 10 s) that is 4. Never below 2 (the factor before; a delivery whose lease runs
 * short is given back), never above 4: each step leases more rows to a worker that could die with
 * them. (A worker whose own concurrency binds starts waiting rows later still; those are given
 * back as before when their lease runs short.)
 * Why more than 2: under load a cycle takes several sends' time at a fast receiver (about 5 ms at
 * the bench's), longer than one send ahead covers, and a slot whose endpoint had nothing waiting
 * stayed empty until the next claim (docs/performance.md, thirty-fourth session).
 */
export function claimAheadFactor(options: Pick<DeliveryWorkerOptions, 'claimAhead' | 'leaseMs' | 'timeoutMs'>): number {
  if (!options.claimAhead) return 1;
  const margin = (options.leaseMs - options.timeoutMs) / 2;
  return Math.min(MAX_CLAIM_AHEAD, Math.max(2, 1 + Math.floor((margin - LATE_MS) / options.timeoutMs)));
}

const MAX_CLAIM_AHEAD = 4;
/** How late, all told, the sends a waiting delivery is behind may end (claimAheadFactor). */
const LATE_MS = 1_000;

export const DEFAULT_DELIVERY_OPTIONS: Readonly<DeliveryWorkerOptions> = Object.freeze({
  timeoutMs: DEFAULT_SEND_TIMEOUT_MS,
  // Seven and a half time-outs: room for a claimed delivery to wait behind three sends, and a
  // second more (claimAheadFactor).
  leaseMs: 75_000,
  concurrency: 64,
  perEndpointConcurrency: 8,
  claimAhead: true,
  pollIntervalMs: 250,
  allowPrivateNetworks: false,
  schedule: DEFAULT_RETRY_SCHEDULE,
  autoDisableThreshold: AUTO_DISABLE_THRESHOLD,
});

export interface DeliveryWorkerDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  clock: Clock;
  random: Random;
  secretBox: SecretBox;
  logger: Logger;
  /** SQLite in WAL mode: the API's commits become durable off the event loop (db/wal-sync.ts). */
  walSync?: WalSync | null;
  /** PostgreSQL: the storage's pipelined connections, on which the cycles run (required there). */
  pipelined?: PipelinedPool | null;
  /**
   * SQLite in WAL mode: the storage's write connection in a thread (db/sqlite-offloop-writer.ts),
   * on which the cycles' statements run while the event loop sends (ADR 0048). Without it they
   * run on the writer connection, on the event loop.
   */
  offLoopWriter?: OffLoopWriter | null;
  /**
   * Asked as each SQLite cycle begins: whether it runs on `offLoopWriter` (true) or on the writer
   * connection. Default `eventLoopBusy()` (db/group-commit.ts, the writer thread's rule, ADR 0030):
   * only while the event loop is saturated.
   */
  offload?: () => boolean;
}

/**
 * What a cycle's statements run on: a PostgreSQL connection in pipeline mode, or the SQLite
 * writer's transaction (see `inTransaction`).
 */
type CycleTx = PostgresCycleTx | SqliteCycleTx;

interface PostgresCycleTx {
  kind: 'postgres';
  run<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
  /**
   * The transaction's last statement. PostgreSQL sends the COMMIT right behind it, without waiting
   * for its answer, and this resolves once both have answered and the COMMIT took effect.
   */
  runLast<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
}

/**
 * SQLite: the cycle's statements go in lists (ADR 0048). With the off-loop writer each list is a
 * message to its thread and back, so what does not depend on another statement's answer travels
 * together: `batch` sends several, `defer` keeps one whose answer nobody reads for the front of the
 * next list (or the COMMIT's), `run` is a list of one. Without the thread the same lists run in the
 * same order on the writer connection.
 */
interface SqliteCycleTx {
  kind: 'sqlite';
  run<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
  /** `last`: the transaction's last list, the COMMIT sent behind it (as PostgreSQL's `runLast`). */
  batch(statements: readonly SqliteCycleStatement[], options?: { last?: boolean }): Promise<QueryResult<unknown>[]>;
  defer(query: CompiledQuery): void;
}

/** A statement of a list, and how it passes ids to a later one of the same list (OffLoopStatement). */
interface SqliteCycleStatement {
  query: CompiledQuery;
  collectIds?: boolean;
  withCollectedIds?: boolean;
}

/** Runs a list in order; stops at the first statement that fails, with its error. */
type SqliteListRunner = (list: readonly OffLoopStatement[]) => Promise<QueryResult<unknown>[]>;

/** The writer connection (Kysely's, on the event loop) as a list runner, ids passed as the thread passes them. */
function connectionRunner(connection: Kysely<Database>): SqliteListRunner {
  return async (list) => {
    const results: QueryResult<unknown>[] = [];
    const collected: unknown[] = [];
    for (const s of list) {
      const parameters = s.withCollectedIds ? [...s.parameters, JSON.stringify(collected)] : s.parameters;
      const result = await connection.executeQuery(CompiledQuery.raw(s.sql, parameters as unknown[]));
      if (s.collectIds) for (const row of result.rows as { id: unknown }[]) collected.push(row.id);
      results.push(result);
    }
    return results;
  };
}

/**
 * The off-loop writer as a list runner: one message each way per list. `wrote()`: whether any list
 * so far had a statement that may write (OffLoopAnswer), which is when the transaction's COMMIT is a
 * write for the WAL sync to count; a cycle that only listed and found nothing is not.
 */
function threadRunner(writer: OffLoopWriter): SqliteListRunner & { wrote(): boolean } {
  let wrote = false;
  const run = async (list: readonly OffLoopStatement[]) => {
    const answer = await writer.run(list);
    wrote ||= answer.wrote;
    return answer.results.map((r): QueryResult<unknown> => (r.rows !== undefined ? { rows: r.rows } : { rows: [], numAffectedRows: BigInt(r.changes) }));
  };
  return Object.assign(run, { wrote: () => wrote });
}

/**
 * A SQLite cycle's transaction over a list runner: BEGIN IMMEDIATE rides with the first list, the
 * COMMIT (`commit`, its text) with the list marked last, or with what is deferred at `end`.
 */
function sqliteCycleTx(runList: SqliteListRunner, commit: string): SqliteCycleTx & { end(): Promise<void> } {
  let front: OffLoopStatement[] = [{ sql: 'begin immediate', parameters: [] }];
  let ended = false;
  const send = async (statements: readonly SqliteCycleStatement[], options?: { last?: boolean }): Promise<QueryResult<unknown>[]> => {
    if (ended) throw new Error('a statement after the cycle\'s COMMIT');
    const head = front;
    front = [];
    const list = statements.map(({ query, collectIds, withCollectedIds }): OffLoopStatement => ({ sql: query.sql, parameters: query.parameters, collectIds: collectIds === true, withCollectedIds: withCollectedIds === true }));
    if (options?.last) {
      ended = true;
      list.push({ sql: commit, parameters: [] });
    }
    return (await runList([...head, ...list])).slice(head.length, head.length + statements.length);
  };
  return {
    kind: 'sqlite',
    run: async <R>(query: CompiledQuery<R>) => (await send([{ query }]))[0] as QueryResult<R>,
    batch: send,
    defer: (query) => {
      if (ended) throw new Error('a statement deferred after the cycle\'s COMMIT');
      front.push({ sql: query.sql, parameters: query.parameters });
    },
    end: async () => {
      if (!ended) await send([], { last: true });
    },
  };
}

/** A claimed delivery with everything needed to send it. */
interface ClaimedDelivery {
  id: string;
  token: string;
  /** When its lease ends (a claimed delivery may wait for a send slot: ADR 0031). */
  leasedUntil: number;
  /** How many sends this worker may have in flight at its endpoint, as the claim found it: cap minus what every other worker held there. */
  slots: number;
  endpointId: string;
  tenantId: string;
  attempts: number;
  url: string;
  secretSealed: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: number | null;
  eventId: string;
  eventType: string;
  eventCreatedAt: number;
  dataJson: string;
}

/** A finished send: what the next cycle writes down. */
interface Outcome {
  delivery: ClaimedDelivery;
  attempt: number;
  headers: Record<string, string>;
  body: string;
  result: SendResult;
  step: NextStep;
  startedAt: number;
  finishedAt: number;
  /** The attempt row's id, fixed when the send ends so that writing the result twice records it once. */
  attemptId: string;
}

interface PendingResult {
  outcome: Outcome;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** A claim sent to PostgreSQL whose commit was not confirmed: its lease token and endpoints. */
interface ClaimInDoubt {
  token: string;
  endpointIds: string[];
}

interface WrittenResults {
  /** Deliveries whose lease token still matched (their next step was written). */
  applied: Set<string>;
  /** Endpoints this batch auto-disabled. */
  disabled: Set<string>;
  /**
   * PostgreSQL: results written again after a cycle whose COMMIT was in doubt, which that cycle
   * had in fact recorded (their attempt row was there). Not in `applied`: their effects on the
   * endpoint's failure count were committed with them. Always empty on SQLite.
   */
  recordedBefore: Set<string>;
  /** PostgreSQL: the claim's candidates, listed by the results' statement (PG_RESULTS_THEN_CANDIDATES). */
  candidates?: Listed[];
}

interface CandidateRow {
  endpoint_id: string;
  due: number | string;
  /** What every other worker holds at the endpoint (its live `webhook_in_flight` rows). */
  others: number | string;
}

/** A listed endpoint: due deliveries (up to what this worker may hold there) and what the other workers hold there. */
interface Listed {
  endpointId: string;
  due: number;
  others: number;
}

/** A row of PG_RESULTS_THEN_CANDIDATES: a recorded delivery's id, or a candidate (id null). */
type ResultOrCandidateRow = ResultRow | ({ id: null; oldest_due: number | string } & CandidateRow);

/** A row of the results' statements: a delivery whose step was written now, or had been already (`already`; see PG_RESULT_CTES). */
interface ResultRow {
  id: string;
  already: boolean;
}

interface ClaimedRow {
  id: string;
  /** PostgreSQL: cap minus what the other workers held at the endpoint when the claim recounted it. */
  slots?: number | string;
  attempts: number;
  endpoint_id: string;
  tenant_id: string;
  url: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: number | null;
  event_id: string;
  event_type: string;
  event_created_at: number;
  data_json: string;
}

/** A delivery's next step as the result batch writes it (its columns as in the schema, plus the lease token it must still hold). */
type NextStepRow = Pick<WebhookDeliveriesTable, 'id' | 'attempts' | 'next_attempt_at' | 'last_response_status' | 'last_error_kind' | 'finished_at' | 'updated_at'> & {
  token: string;
  state: 'pending' | 'delivered' | 'failed';
  last_attempt_at: number;
};

export interface DeliveryWorker {
  /** Claim what is due now (up to the free slots) and start sending it; resolves once claimed. */
  tick(): Promise<number>;
  /** Wait until nothing is being claimed or sent. */
  settle(): Promise<void>;
  /** tick + settle until a tick claims nothing: everything due at the clock's current time is attempted (tests). */
  deliverDue(): Promise<number>;
  /** Run: poll every pollIntervalMs, and tick again as soon as a send finishes. */
  start(): void;
  /** Stop claiming, let in-flight sends finish and record, close sockets. */
  stop(): Promise<void>;
  /** In flight right now in this worker. */
  inFlight(): number;
  /** What this worker has done since it was created (for logs and tests). */
  stats(): DeliveryWorkerStats;
}

export interface DeliveryWorkerStats {
  attempts: number;
  delivered: number;
  failed: number;
  leasesLost: number;
  /** Claim transactions that claimed something, and result-writing transactions. */
  claims: number;
  writes: number;
}

export function createDeliveryWorker(deps: DeliveryWorkerDeps, overrides: Partial<DeliveryWorkerOptions> = {}): DeliveryWorker {
  const options: DeliveryWorkerOptions = Object.assign({}, DEFAULT_DELIVERY_OPTIONS, overrides);
  if (options.leaseMs <= options.timeoutMs) throw new RangeError('leaseMs must exceed timeoutMs, or a live send could be claimed twice');
  const { db, clock, logger } = deps;
  const postgres = deps.dialect === 'postgres';
  const pipelined = deps.pipelined ?? null;
  const offload = deps.offload ?? eventLoopBusy();
  if (postgres && pipelined === null) throw new TypeError('a PostgreSQL delivery worker runs its cycles on the storage\'s pipelined connections: pass `pipelined`');
  const sender: WebhookSender = createWebhookSender(
    Object.assign(
      { timeoutMs: options.timeoutMs, allowPrivateNetworks: options.allowPrivateNetworks },
      options.ca !== undefined ? { ca: options.ca } : null,
      options.resolve ? { resolve: options.resolve } : null,
    ),
  );

  /** Sends in progress (they hold the slots). */
  const inFlight = new Map<string, Promise<void>>();
  /**
   * Per endpoint, the deliveries this worker holds: claimed and not yet sent to the end (sending,
   * or waiting for a slot). What each transaction that claims or records writes to
   * `webhook_in_flight` under `workerId`, for the per-endpoint cap (ADR 0021). A delivery leaves it
   * when its send ends, not when its result is written: the cap is on sends, and a result written
   * by the next cycle would otherwise keep room from the claim of the cycle that runs meanwhile
   * (ADR 0031, amended; the sends at the bench's receiver end within a cycle).
   */
  const held = new Map<string, number>();
  /**
   * Claiming ahead (ADR 0031): a worker may hold up to `ahead` times what it may send, at each
   * endpoint and in all. What it may send at an endpoint (`slotsAt`) is the cap minus what every
   * other worker held there when this worker last claimed there; its sends there never exceed it.
   * Claimed deliveries wait in `waiting` (per endpoint, in due order) until a send slot of theirs
   * frees, and start then, without a cycle in between.
   */
  const ahead = claimAheadFactor(options);
  const slotsAt = new Map<string, number>();
  const sendingAt = new Map<string, number>();
  /** Per endpoint, claimed deliveries waiting for a send slot (never an empty list: an endpoint with none has no entry). */
  const waiting = new Map<string, ClaimedDelivery[]>();
  const waitingTotal = () => {
    let n = 0;
    for (const queue of waiting.values()) n += queue.length;
    return n;
  };
  /**
   * A waiting delivery starts only with this much of its lease left: its send's time-out plus
   * half the margin the lease keeps for recording. One that waited longer (an endpoint whose sends
   * all ran to the time-out) is given back instead of sent on a lease that could pass mid-send.
   */
  const leaseToStart = options.timeoutMs + (options.leaseMs - options.timeoutMs) / 2;
  /** Claimed deliveries given back unsent (stopping, endpoint disabled, lease too short): the next cycle releases them. */
  const toRelease: ClaimedDelivery[] = [];
  /** Per endpoint, what the running cycle gives back (heldAfter subtracts it). */
  let releasingNow = new Map<string, number>();
  const workerId = deps.random.uuid();
  const attemptId = timeOrderedUuids(deps.random);
  /** Results not yet written (their rows are still leased); each settles when its cycle commits. */
  const recording = new Set<Promise<void>>();
  const resultQueue: PendingResult[] = [];
  const counters: DeliveryWorkerStats = { attempts: 0, delivered: 0, failed: 0, leasesLost: 0, claims: 0, writes: 0 };
  /**
   * PostgreSQL: claims whose COMMIT went out but whose answer never came back (the connection was
   * lost in between, or the cycle failed for any reason after the claim was sent). The server may
   * have committed them: then their rows are leased to a token nobody is sending, and this
   * worker's stored count at those endpoints includes sends it never started, which can fill the
   * endpoint's cap. Left alone, that endpoint would get nothing until the lease passed (75 s).
   * So the next cycle undoes them (PG_UNDO_CLAIMS) before anything else in its transaction, and
   * forgets them once that commits; a claim that did not commit leased nothing, and undoing it
   * finds nothing. The list is bounded: past it, the oldest are left to their leases. SQLite's
   * commit is in doubt only if the off-loop writer's thread died between its COMMIT and its answer
   * (ADR 0048); its claims are then left to their leases, and its results written again find their
   * attempt rows there.
   */
  const claimsInDoubt: ClaimInDoubt[] = [];
  /** The claim the running cycle has sent, if any (it is in doubt should the cycle fail). */
  let claimSent: ClaimInDoubt | null = null;
  /** The cycle loop while it runs; resolves with what it claimed. */
  let cycling: Promise<number> | null = null;
  /** Someone (a tick, the poll, a freed slot of a running worker) asked for a claim. */
  let claimWanted = false;
  let running = false;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  /** PostgreSQL: the queue vacuumed when autovacuum does not (ADR 0041), checked while the worker runs. */
  const queueVacuum = postgres && options.queueVacuum !== false ? createQueueVacuum({ db, logger }, options.queueVacuum) : null;

  /** Many sends finish in the same turn of the event loop: one cycle for all of them. */
  let wakePending = false;
  function wake(): void {
    if (wakePending) return;
    wakePending = true;
    setImmediate(() => {
      wakePending = false;
      // Sends that ended in the same turn start their successors together (ADR 0031): started one
      // by one as each ended, their writes reached the receiver one by one, and on a busy machine
      // each cost both processes a wake-up (docs/performance.md, "sixteenth session").
      startWaiting();
      // A stopped or merely ticked worker still writes its results; only a running one claims more.
      if (running && !stopped) claimWanted = true;
      void pump();
    });
  }

  function tick(): Promise<number> {
    if (stopped) return Promise.resolve(0);
    claimWanted = true;
    return pump();
  }

  /**
   * Runs cycles one after another while results wait or a claim is wanted. Whatever arrives during
   * a cycle is taken by the next one, so under load each cycle carries every result that finished
   * meanwhile. The loop's last check and its end happen in the same synchronous step, so a request
   * can never fall between a finished loop and the next.
   */
  function pump(): Promise<number> {
    if (cycling) return cycling;
    let finish!: (total: number) => void;
    cycling = new Promise<number>((resolve) => (finish = resolve));
    void (async () => {
      let total = 0;
      try {
        while (resultQueue.length > 0 || toRelease.length > 0 || (claimWanted && !stopped)) {
          const claim = claimWanted && !stopped;
          claimWanted = false;
          total += await cycle(claim);
        }
      } catch (err) {
        // A database hiccup must not kill the loop; the next poll or freed slot tries again. A cycle
        // is both the results' write and the claim, so the message names the cycle.
        logger.warn({ err: errorMessage(err) }, 'webhook delivery cycle failed; will retry');
      } finally {
        cycling = null;
        finish(total);
      }
    })();
    return cycling;
  }

  /**
   * One cycle, one transaction, one commit: write the results that are waiting (their leases end
   * with it), then claim due work for the free send slots, then launch it.
   */
  async function cycle(claim: boolean): Promise<number> {
    const batch = resultQueue.splice(0, RECORD_BATCH);
    const outcomes = batch.map((b) => b.outcome);
    const releasing = toRelease.splice(0);
    // Results left for the next cycle still hold their leases: don't run ahead of the writer.
    const free = claim ? ahead * options.concurrency - inFlight.size - waitingTotal() - resultQueue.length : 0;
    if (batch.length === 0 && releasing.length === 0 && free <= 0) return 0;
    let done: { written: WrittenResults; claimed: ClaimedDelivery[]; released: number };
    const doubted = claimsInDoubt.slice();
    claimSent = null;
    releasingNow = new Map();
    for (const d of releasing) releasingNow.set(d.endpointId, (releasingNow.get(d.endpointId) ?? 0) + 1);
    try {
      done = await inTransaction(async (tx) => {
        if (doubted.length > 0) await undoClaims(tx, doubted);
        const released = releasing.length > 0 ? await releaseClaims(tx, releasing) : 0;
        const written = outcomes.length > 0 ? await writeResults(tx, outcomes, free) : { applied: new Set<string>(), disabled: new Set<string>(), recordedBefore: new Set<string>() };
        const claimed = free > 0 ? await claimDue(tx, free, written.candidates) : [];
        return { written, claimed, released };
      });
      claimsInDoubt.splice(0, doubted.length);
    } catch (err) {
      releasingNow = new Map();
      if (claimSent !== null) {
        claimsInDoubt.push(claimSent);
        if (claimsInDoubt.length > MAX_CLAIMS_IN_DOUBT) claimsInDoubt.shift();
      }
      if (running && !stopped) toRelease.unshift(...releasing);
      else {
        // A stopping (or only ticked) worker gives up on them: their leases pass and they are due again then.
        for (const d of releasing) release(d.endpointId);
        if (releasing.length > 0) logger.warn({ deliveries: releasing.length, err: errorMessage(err) }, 'claimed webhook deliveries could not be given back; they are due again when their leases pass');
      }
      if (batch.length === 0) throw err;
      if (running && !stopped && isDatabaseUnavailable(err)) {
        // The database is away (a restart, a network cut). The results stay queued, first in line,
        // and the next poll writes them: their rows are still leased to this worker, so writing
        // them late is as good as on time, and it spares the receiver a second copy, and the
        // endpoint its slots, until the lease would pass. No new claim meanwhile (they hold slots).
        resultQueue.unshift(...batch);
        throw err;
      }
      // Otherwise the results on their own and one by one: one that cannot be written must not
      // sink the others. A worker that is stopping (or only ticked by a caller) gives up on what
      // it cannot write, so stop() returns: those rows are claimed again when their lease passes.
      for (const b of batch) {
        try {
          const written = await inTransaction((tx) => writeResults(tx, [b.outcome]));
          counters.writes += 1;
          report([b.outcome], written);
          b.resolve();
        } catch (single) {
          b.reject(single);
        }
      }
      throw err;
    }
    releasingNow = new Map();
    for (const d of releasing) release(d.endpointId);
    // (Rows whose lease is no longer this claim's, a deletion's cancellation say, are not counted.)
    if (releasing.length > 0) logger.info({ deliveries: done.released, endpoints: new Set(releasing.map((d) => d.endpointId)).size }, 'claimed webhook deliveries given back unsent; they are due again');
    if (batch.length > 0) {
      counters.writes += 1;
      report(outcomes, done.written);
      for (const b of batch) b.resolve();
      // What waits for an endpoint this batch disabled is not sent.
      for (const endpointId of done.written.disabled) giveBack(endpointId);
    }
    if (done.claimed.length > 0) counters.claims += 1;
    for (const delivery of done.claimed) {
      held.set(delivery.endpointId, (held.get(delivery.endpointId) ?? 0) + 1);
      slotsAt.set(delivery.endpointId, delivery.slots);
      const queue = waiting.get(delivery.endpointId);
      if (queue) queue.push(delivery);
      else waiting.set(delivery.endpointId, [delivery]);
    }
    startWaiting();
    return done.claimed.length;
  }

  /** Its send ended, or it was given back unsent: this worker no longer holds the delivery. */
  function release(endpointId: string): void {
    const n = (held.get(endpointId) ?? 0) - 1;
    if (n > 0) held.set(endpointId, n);
    else {
      held.delete(endpointId);
      slotsAt.delete(endpointId);
    }
  }

  /**
   * Starts the claimed deliveries that have a send slot: at their endpoint fewer sends than
   * `slotsAt`, in all fewer than the concurrency. Runs after each cycle and whenever a send ends.
   * A stopping worker sends nothing more: what waits is given back.
   */
  function startWaiting(): void {
    if (stopped) {
      for (const endpointId of [...waiting.keys()]) giveBack(endpointId);
      return;
    }
    const now = clock.now().getTime();
    for (const [endpointId, queue] of waiting) {
      while (queue.length > 0 && inFlight.size < options.concurrency && (sendingAt.get(endpointId) ?? 0) < (slotsAt.get(endpointId) ?? 0)) {
        const next = queue.shift()!;
        if (next.leasedUntil - now < leaseToStart) toRelease.push(next);
        else launch(next);
      }
      if (queue.length === 0) waiting.delete(endpointId);
    }
    if (toRelease.length > 0) wake();
  }

  /** What waits for this endpoint is given back by the next cycle, unsent. */
  function giveBack(endpointId: string): void {
    const queue = waiting.get(endpointId);
    if (!queue) return;
    waiting.delete(endpointId);
    toRelease.push(...queue);
    wake();
  }

  /**
   * What this worker will hold at each endpoint `recorded` or `claimed` touches once the
   * transaction that writes them commits (ADR 0021): written in that transaction, so the counts
   * commit with the results and leases they describe, and a rolled-back transaction leaves the
   * previous counts, an overcount at most. A recorded delivery left `held` when its send ended, so
   * its endpoint's count is written as it stands, which may have fallen since last written. Sorted
   * by endpoint.
   */
  function heldAfter(recorded: readonly Outcome[], claimed: readonly ClaimPlanEntry[]): [string, number][] {
    const after = new Map<string, number>();
    for (const o of recorded) after.set(o.delivery.endpointId, heldNow(o.delivery.endpointId));
    for (const c of claimed) after.set(c.endpointId, (after.get(c.endpointId) ?? heldNow(c.endpointId)) + c.count);
    return [...after].map(([id, n]): [string, number] => [id, Math.max(0, n)]).sort((a, b) => compare(a[0], b[0]));
  }

  /** What this worker holds at an endpoint once the running cycle's releases are written. */
  function heldNow(endpointId: string): number {
    return (held.get(endpointId) ?? 0) - (releasingNow.get(endpointId) ?? 0);
  }

  /**
   * SQLite: this worker's counts, sent at the front of the cycle's next list (PostgreSQL writes them
   * inside the result and claim statements). Nothing later in the cycle reads this worker's own
   * row: the listing takes what it holds from `listingOf`, and other workers read it after the
   * COMMIT.
   */
  function deferHeldSqlite(tx: SqliteCycleTx, counts: [string, number][]): void {
    if (counts.length > 0) tx.defer(heldSqlite(counts));
  }

  function heldSqlite(counts: [string, number][]): CompiledQuery {
    return CompiledQuery.raw(SQLITE_HELD, [workerId, clock.now().getTime() + options.leaseMs, JSON.stringify(counts)]);
  }

  /**
   * A transaction on the write connection. SQLite: `begin immediate`, so the claim's reads and
   * writes happen under the write lock (nothing can change between counting and claiming).
   *
   * Its commit does not wait for the disk: PostgreSQL `synchronous_commit = off` for this
   * transaction; SQLite commits with `COMMIT_BOOKKEEPING` (db/wal-sync.ts) and starts a sync
   * that nobody waits for. What the worker writes is bookkeeping of at-least-once delivery:
   * should an OS crash or power loss undo the last moments of it, those claims are void (the rows
   * are due again) and those results unwritten (the rows still leased), so the deliveries are sent
   * again, exactly as when a worker dies between a send and its record. A process crash loses
   * nothing (the commit is in the OS's hands), and the sync started after each cycle (and every
   * commit of the API, which waits for the disk) makes it durable a sync later.
   *
   * What the claim read must be durable before anything is sent, though: on SQLite the events it
   * claims may come from a batch of the API whose WAL sync is still running, and a webhook must
   * never announce a decision that a power loss could undo. So the worker notes, when its
   * transaction begins, the WAL position of the last commit that needs the disk
   * (`requiredPosition`: every commit it can see is at or before its own, and its own earlier
   * cycles need not count) and waits for that one after giving the connection back; usually it is
   * durable already. Waiting for the plain position instead made every cycle wait for the sync of
   * the cycle before it: a slot freed by a finished send stayed taken for a sync longer
   * (docs/performance.md, "fifteenth session").
   */
  async function inTransaction<T>(unit: (tx: CycleTx) => Promise<T>): Promise<T> {
    if (postgres) return pipelinedTransaction(pipelined!, unit);
    const walSync = deps.walSync ?? null;
    // In the thread only while the event loop is saturated (ADR 0048): below that, a list's round
    // trip to it only makes the cycle, and its hold on the writer connection, longer.
    const writer = deps.offLoopWriter && offload() ? deps.offLoopWriter : null;
    let seen = 0;
    // The writer connection is held from BEGIN to COMMIT even when the statements run in the
    // thread: no other write of this process meets the cycle's transaction (ADR 0048).
    const value = await db.connection().execute(async (connection) => {
      seen = walSync?.requiredPosition() ?? 0;
      const thread = writer ? threadRunner(writer) : null;
      const value = await transaction(thread ?? connectionRunner(connection), unit, walSync ? COMMIT_BOOKKEEPING : 'commit');
      // The thread's COMMIT ended a write transaction while nothing else wrote: a position of the
      // WAL sync like the writer connection's own, so the sync started below covers it. Not when
      // nothing was written (a poll that found nothing due), as database.ts does not count those.
      if (thread?.wrote()) walSync?.noteStatement(false, false, true);
      return value;
    });
    if (walSync) {
      // This cycle's own writes: a sync started now (not waited for) keeps what a power loss could undo short.
      walSync.whenDurable()?.catch(() => undefined);
      const durable = walSync.whenDurable(seen);
      if (durable) await durable;
    }
    return value;
  }

  /** SQLite: the cycle's lists on the thread or the writer connection, under the write lock from the start (`begin immediate`). */
  async function transaction<T>(runList: SqliteListRunner, unit: (tx: SqliteCycleTx) => Promise<T>, commit: string): Promise<T> {
    const tx = sqliteCycleTx(runList, commit);
    try {
      const value = await unit(tx);
      await tx.end();
      return value;
    } catch (err) {
      // A thread that died took its transaction with it (SQLite rolls back what its connection
      // left); a ROLLBACK sent now would only start another thread to refuse it.
      if ((err as { code?: unknown }).code !== 'SQLITE_IOERR_OFFLOOP_WRITER') await runList([{ sql: 'rollback', parameters: [] }]).catch(() => undefined);
      throw err;
    }
  }

  /**
   * PostgreSQL: the cycle's transaction on a connection in pipeline mode (ADR 0023). The BEGIN
   * goes out together with the first statement and the COMMIT together with the statement the
   * cycle marks as its last (`runLast`), so a cycle that records and claims takes two round trips
   * instead of four. Under load each answer waits for the worker's event loop, busy with sends,
   * and every send slot held by a finished result waits for the cycle that writes it: a round trip
   * saved is that wait saved for each of them.
   * PostgreSQL runs what arrives in order. A statement that fails aborts the transaction, and the
   * COMMIT sent behind it answers ROLLBACK, which `runLast` turns into an error: nothing is taken
   * as committed that was not. The ROLLBACK sent on any error goes out behind whatever is still
   * unanswered, so once it answers the connection is idle and can go back to the pool.
   */
  async function pipelinedTransaction<T>(pool: PipelinedPool, unit: (tx: CycleTx) => Promise<T>): Promise<T> {
    const connection = await pool.connect();
    let begun: Promise<unknown> | null = null;
    /** Set when the COMMIT goes out: a statement sent after it would run outside the transaction. */
    let ended = false;
    const begin = () => (begun ??= connection.query(CYCLE_BEGIN));
    const send = <R>(query: CompiledQuery<R>) => {
      if (ended) throw new Error('a statement after the cycle\'s COMMIT');
      return connection.query<R>(query.sql, query.parameters) as Promise<QueryResult<R>>;
    };
    const commitBehind = async (): Promise<void> => {
      ended = true;
      const commit = await connection.query('commit');
      if (commit.command !== 'COMMIT') throw new Error(`the cycle's transaction ended in ${commit.command}`);
    };
    const tx: PostgresCycleTx = {
      kind: 'postgres',
      // Arguments are evaluated in order: BEGIN (the first time), then the statement, then the COMMIT.
      run: async (query) => (await Promise.all([begin(), send(query)]))[1],
      runLast: async (query) => (await Promise.all([begin(), send(query), commitBehind()]))[1],
    };
    try {
      const value = await unit(tx);
      if (begun !== null && !ended) await commitBehind();
      connection.release();
      return value;
    } catch (err) {
      let broken = false;
      await connection.query('rollback').catch(() => (broken = true));
      connection.release(broken);
      throw err;
    }
  }

  /**
   * Claims due work for up to `free` more deliveries held, fairly between endpoints (fairness.ts),
   * after the cycle's results were written in the same transaction; writes this worker's new
   * counts. What it holds is `held` as it stands (a result's delivery left it when its send
   * ended, so writing results does not change it). At each
   * endpoint it may hold up to `ahead` times what it may send there (ADR 0031): the planner sees
   * a cap of `ahead * cap` and, in flight, `ahead` times what the other workers hold plus what this
   * one holds, so its room is ahead * (cap - others) - mine.
   */
  async function claimDue(tx: CycleTx, free: number, listed?: Listed[]): Promise<ClaimedDelivery[]> {
    const now = clock.now().getTime();
    const candidates = listed ?? (await dueEndpoints(tx, now, free));
    if (candidates.length === 0) return [];
    const mineAt = (endpointId: string) => Math.max(0, heldNow(endpointId));
    const cap = options.perEndpointConcurrency;
    // Ahead only while the endpoints' caps bind, not this worker's concurrency: when the listed
    // endpoints could take more sends than it may have in flight, what it held ahead would wait
    // for its own slots and keep other workers from sending it.
    const sendRoom = candidates.reduce((sum, c) => sum + Math.max(0, cap - c.others), 0);
    const factor = sendRoom <= options.concurrency ? ahead : 1;
    // `free` is room to hold up to `ahead` times the concurrency; without claiming ahead, once.
    const room = free - (ahead - factor) * options.concurrency;
    const plan = planClaims(
      candidates.map((c): ClaimCandidate => ({ endpointId: c.endpointId, due: c.due, inFlight: factor * c.others + mineAt(c.endpointId) })),
      { slots: room, perEndpointCap: factor * cap },
    );
    if (plan.length === 0) return [];
    const token = deps.random.uuid();
    if (tx.kind === 'postgres') {
      claimSent = { token, endpointIds: plan.map((p) => p.endpointId) };
      return claimPostgres(tx, plan, now, token, plan.map((p) => mineAt(p.endpointId)), factor);
    }
    // One writer under `begin immediate`: what the listing found the others hold is still true.
    const slots = new Map(candidates.map((c) => [c.endpointId, cap - c.others]));
    return claimSqlite(tx, plan, now, token, slots);
  }

  /**
   * Endpoints with due, unleased deliveries where this worker may hold more, oldest due first,
   * with how many are due (up to what it may hold) and what every other worker holds there: the
   * sum of their live counts in `webhook_in_flight` (one row per worker, by primary key, whatever
   * the planner's statistics say). Each per-endpoint probe reads the due index in due order and
   * stops after that many rows, so its cost does not grow with the backlog; and only endpoints
   * with pending deliveries are probed (one step through the queue's index each), so it does not
   * grow with the endpoints that have none either (ADR 0025).
   *
   * On PostgreSQL the same statement takes each listed endpoint's advisory lock (held until the
   * cycle commits; one claimer per endpoint across processes) and leaves out the endpoints whose
   * lock another process holds: their claimer is at work.
   */
  async function dueEndpoints(tx: CycleTx, now: number, limit: number): Promise<Listed[]> {
    if (tx.kind === 'postgres') {
      const result = await tx.run(CompiledQuery.raw(PG_CANDIDATES, [now, options.perEndpointConcurrency, limit, workerId, ahead]) as CompiledQuery<CandidateRow>);
      return result.rows.map(toListed);
    }
    const result = await tx.run(sqliteCandidates(now, limit));
    return result.rows.map(toListed);
  }

  /**
   * What the listing counts as this worker's at each endpoint: what it holds now, less the sends
   * still out. Those may end before the claim is planned (on PostgreSQL their answers come while
   * the listing's statement runs; on SQLite with the off-loop writer, while its list is in the
   * thread), and the claim counts what it holds then (claimDue), so an endpoint is only left out
   * where deliveries wait for its slots. Counted in full, an endpoint just claimed to its limit was
   * left out of the next cycle, however many of its sends ended meanwhile: every other cycle
   * claimed there (ADR 0031, amended). An endpoint where it holds nothing is absent (the
   * statements count it as 0). And the LIMIT for `free` slots.
   */
  function listingOf(free: number): { mine: Map<string, number>; limit: number } {
    const mine = new Map([...held.keys()].map((endpointId) => [endpointId, Math.max(0, heldNow(endpointId) - (sendingAt.get(endpointId) ?? 0))]));
    // The listing may offer an endpoint with no room once the claim is planned: at most one per
    // endpoint with sends out. Its LIMIT grows by as many, or such endpoints, listed first for
    // their older due rows, could fill it and leave out one with room (it would wait until their
    // sends ended: a slow receiver holding up a fast one, what fairness.ts is there to stop).
    return { mine, limit: free + sendingAt.size };
  }

  /** SQLite: the listing (SQLITE_CANDIDATES) with its parameters, as PostgreSQL's after the results (`listingOf`). */
  function sqliteCandidates(now: number, free: number): CompiledQuery<CandidateRow> {
    const cap = options.perEndpointConcurrency;
    const { mine, limit } = listingOf(free);
    return CompiledQuery.raw(SQLITE_CANDIDATES, [now, now, ahead * cap, workerId, now, now, now, now, now, ahead * cap, ahead, workerId, now, JSON.stringify([...mine]), limit]);
  }

  /**
   * SQLite: the transaction holds the write lock (one writer, one worker process), so the
   * in-flight counts read by dueEndpoints are still true, and each endpoint's claim takes exactly
   * what the plan gives it (the listing counted that many due rows, and `now` has only moved on).
   * One list, the cycle's last, with the COMMIT behind it: per endpoint one UPDATE ... RETURNING
   * id, the read of everything the sends need by the ids those returned, and this worker's counts
   * from the plan (were a claim ever to take fewer, the count would be over until the next write
   * there: an overcount only holds back other workers, never lets the cap be passed).
   */
  async function claimSqlite(tx: SqliteCycleTx, plan: ClaimPlanEntry[], now: number, token: string, slots: ReadonlyMap<string, number>): Promise<ClaimedDelivery[]> {
    const claims = plan.map((entry): SqliteCycleStatement => ({
      query: CompiledQuery.raw(SQLITE_CLAIM, [now + options.leaseMs, token, now, entry.endpointId, now, now, entry.count]),
      collectIds: true,
    }));
    const read = claims.length;
    const results = await tx.batch(
      [...claims, { query: CompiledQuery.raw(SQLITE_CLAIMED, []), withCollectedIds: true }, { query: heldSqlite(heldAfter([], plan)) }],
      { last: true },
    );
    const rows = results[read]!.rows as ClaimedRow[];
    return rows.map((r) => toClaimed(r, token, now + options.leaseMs, slots.get(r.endpoint_id) ?? 0));
  }

  /** PostgreSQL: see `claimsInDoubt`. */
  async function undoClaims(tx: CycleTx, claims: readonly ClaimInDoubt[]): Promise<void> {
    const endpointIds = [...new Set(claims.flatMap((c) => c.endpointIds))].sort(compare);
    const parameters = [endpointIds, claims.map((c) => c.token), clock.now().getTime(), endpointIds.map((id) => held.get(id) ?? 0), workerId];
    const result = await tx.run(CompiledQuery.raw(PG_UNDO_CLAIMS, parameters) as CompiledQuery<{ undone: number }>);
    const undone = result.rows[0]?.undone ?? 0;
    if (undone > 0) logger.warn({ deliveries: undone, endpoints: endpointIds.length }, 'webhook claim whose commit was in doubt undone; its deliveries are due again');
  }

  /**
   * PostgreSQL: one statement for the whole plan. It runs after the statement that took the
   * endpoints' advisory locks, so its snapshot sees every claim another process committed before
   * we got a lock: what the other workers hold at each endpoint is read again here, and it takes
   * at most ahead * (cap - others) - heldBefore rows (`FOR UPDATE SKIP LOCKED`), leases them by
   * primary key, writes this worker's counts (`heldBefore` plus what it took) and returns the rows
   * with their endpoint and event, and how many this worker may send at once there (`slots`):
   * one round trip instead of three per endpoint and two more.
   */
  async function claimPostgres(tx: PostgresCycleTx, plan: ClaimPlanEntry[], now: number, token: string, heldBefore: number[], factor: number): Promise<ClaimedDelivery[]> {
    const parameters = [plan.map((p) => p.endpointId), plan.map((p) => p.count), options.perEndpointConcurrency, now, now + options.leaseMs, token, workerId, heldBefore, factor];
    // The cycle's last statement: its COMMIT goes out right behind it.
    const result = await tx.runLast(CompiledQuery.raw(PG_CLAIM, parameters) as CompiledQuery<ClaimedRow>);
    return result.rows.map((r) => toClaimed(r, token, now + options.leaseMs, Number(r.slots)));
  }

  /**
   * Gives claimed deliveries back unsent (ADR 0031): due again at once where their lease is still
   * this worker's, and this worker's counts at their endpoints lowered in the same transaction.
   */
  async function releaseClaims(tx: CycleTx, deliveries: readonly ClaimedDelivery[]): Promise<number> {
    const now = clock.now().getTime();
    const counts = [...new Set(deliveries.map((d) => d.endpointId))].sort(compare).map((endpointId): [string, number] => [endpointId, Math.max(0, heldNow(endpointId))]);
    const pairs = deliveries.map((d) => [d.id, d.token]);
    if (tx.kind === 'postgres') {
      const parameters = [pairs.map((p) => p[0]), pairs.map((p) => p[1]), now, workerId, counts.map((c) => c[0]), counts.map((c) => c[1]), now + options.leaseMs];
      const result = await tx.run(CompiledQuery.raw(PG_RELEASE, parameters) as CompiledQuery<{ released: number }>);
      return result.rows[0]?.released ?? 0;
    }
    const result = await tx.run(CompiledQuery.raw(SQLITE_RELEASE, [now, JSON.stringify(pairs)]));
    deferHeldSqlite(tx, counts);
    return Number(result.numAffectedRows ?? 0);
  }

  function toClaimed(r: ClaimedRow, token: string, leasedUntil: number, slots: number): ClaimedDelivery {
    return {
      id: r.id,
      token,
      leasedUntil,
      slots,
      endpointId: r.endpoint_id,
      tenantId: r.tenant_id,
      attempts: r.attempts,
      url: r.url,
      secretSealed: r.secret_sealed,
      previousSecretSealed: r.previous_secret_sealed,
      previousSecretExpiresAt: r.previous_secret_expires_at,
      eventId: r.event_id,
      eventType: r.event_type,
      eventCreatedAt: r.event_created_at,
      dataJson: r.data_json,
    };
  }

  /**
   * A send slot is held for the HTTP exchange only; recording happens after the slot is freed (the
   * row's lease still covers it until the result is written), so sending and writing overlap.
   */
  function launch(delivery: ClaimedDelivery): void {
    sendingAt.set(delivery.endpointId, (sendingAt.get(delivery.endpointId) ?? 0) + 1);
    const p = send(delivery)
      .then((outcome) => {
        const written = record(outcome)
          .catch((err: unknown) => logger.error({ deliveryId: delivery.id, endpointId: delivery.endpointId, err: errorMessage(err) }, 'webhook result could not be recorded; its lease will expire and it will be retried'))
          .finally(() => recording.delete(written));
        recording.add(written);
      })
      .finally(() => {
        inFlight.delete(delivery.id);
        // Its send has ended: it no longer counts against the cap, though its row stays leased
        // until its result is written (ADR 0031, amended).
        release(delivery.endpointId);
        const n = (sendingAt.get(delivery.endpointId) ?? 0) - 1;
        if (n > 0) sendingAt.set(delivery.endpointId, n);
        else sendingAt.delete(delivery.endpointId);
        // A free slot: what waits for it starts, and more work is looked for, now rather than at the next poll.
        wake();
      });
    inFlight.set(delivery.id, p);
  }

  async function send(delivery: ClaimedDelivery): Promise<Outcome> {
    const attempt = delivery.attempts + 1;
    const body = envelopeJson(delivery, attempt);
    const startedAt = clock.now();
    let headers: Record<string, string> = {};
    let result: SendResult;
    try {
      headers = requestHeaders(delivery, body, startedAt);
      result = await sender.send({ url: delivery.url, headers, body });
    } catch (err) {
      // A secret that no longer opens (changed DATA_ENCRYPTION_KEY) must still advance the schedule.
      result = { ok: false, status: null, responseBody: null, durationMs: 0, errorKind: 'internal', errorDetail: errorMessage(err).slice(0, 200).replaceAll('\u0000', '\uFFFD') };
    }
    const finishedAt = clock.now();
    const step = scheduleNextAttempt({ attempt, succeeded: result.ok, finishedAt }, options.schedule);
    return { delivery, attempt, headers, body, result, step, startedAt: startedAt.getTime(), finishedAt: finishedAt.getTime(), attemptId: attemptId(startedAt.getTime()) };
  }

  /** The envelope, built around the stored `data` text so `data` is byte-identical on every attempt. */
  function envelopeJson(delivery: ClaimedDelivery, attempt: number): string {
    return eventEnvelopeJson({ id: delivery.eventId, type: delivery.eventType, createdAtMs: delivery.eventCreatedAt, dataJson: delivery.dataJson }, attempt);
  }

  function requestHeaders(delivery: ClaimedDelivery, body: string, at: Date): Record<string, string> {
    const secrets = [openSecret(delivery.endpointId, delivery.secretSealed)];
    if (delivery.previousSecretSealed && delivery.previousSecretExpiresAt !== null && delivery.previousSecretExpiresAt > at.getTime()) {
      secrets.push(openSecret(delivery.endpointId, delivery.previousSecretSealed));
    }
    return {
      'Svc-Signature': signatureHeader({ timestamp: Math.floor(at.getTime() / 1000), body, secrets }),
      'Svc-Webhook-Id': delivery.eventId,
      'Svc-Webhook-Type': delivery.eventType,
      'Content-Type': 'application/json',
      'User-Agent': USER_AGENT,
    };
  }

  /** Opening a secret was the costliest step of preparing a send after the HTTP request itself. */
  const openedSecrets = openedTextCache(deps.secretBox, OPENED_SECRETS_LIMIT);
  function openSecret(endpointId: string, sealed: string): string {
    return openedSecrets(sealed, secretAssociatedData(endpointId));
  }

  /** Queues a finished send's result for the next cycle; settles when that cycle has committed. */
  function record(outcome: Outcome): Promise<void> {
    return new Promise((resolve, reject) => {
      resultQueue.push({ outcome, resolve, reject });
    });
  }

  /**
   * Writes a batch of results in the cycle's transaction: each delivery's next step, only where
   * this worker's lease token still holds; every attempt row; each final outcome's move of its
   * endpoint's consecutive-failure count, the threshold disabling it.
   */
  async function writeResults(tx: CycleTx, outcomes: Outcome[], free = 0): Promise<WrittenResults> {
    // Rows in id order, endpoints in id order: two workers' batches always lock in the same order.
    const sorted = [...outcomes].sort((a, b) => compare(a.delivery.id, b.delivery.id));
    const rows: NextStepRow[] = sorted.map((o) => ({
      id: o.delivery.id,
      token: o.delivery.token,
      attempts: o.attempt,
      state: o.step.kind === 'retry' ? 'pending' : o.step.kind,
      next_attempt_at: o.step.kind === 'retry' ? o.step.at.getTime() : null,
      last_attempt_at: o.startedAt,
      last_response_status: o.result.status,
      last_error_kind: o.result.errorKind,
      finished_at: o.step.kind === 'retry' ? null : o.finishedAt,
      updated_at: o.finishedAt,
    }));
    // Every attempt happened, whatever became of its lease: all belong in the history.
    const attempts: WebhookAttemptsTable[] = sorted.map((o) => ({
      id: o.attemptId,
      delivery_id: o.delivery.id,
      endpoint_id: o.delivery.endpointId,
      attempt: o.attempt,
      request_headers_json: JSON.stringify(Object.assign({}, o.headers, { 'Content-Length': String(Buffer.byteLength(o.body)) })),
      request_body: o.body,
      response_status: o.result.status,
      response_body: o.result.responseBody,
      duration_ms: o.result.durationMs,
      error_kind: o.result.errorKind,
      error_detail: o.result.errorDetail,
      created_at: o.startedAt,
    }));
    // Endpoints with no failed final outcome in this batch only ever reset their failure count
    // (the common case; on PostgreSQL folded into the same statement). Endpoints with one take the
    // read-count-write path below, in the order their deliveries finished.
    const failing = new Set(outcomes.filter((o) => o.step.kind === 'failed').map((o) => o.delivery.endpointId));
    const resettable = [...new Set(outcomes.filter((o) => o.step.kind === 'delivered' && !failing.has(o.delivery.endpointId)).map((o) => o.delivery.endpointId))].sort(compare);

    // What this worker holds once the batch is written: read by the claim that follows in the same
    // transaction, and by other workers after the commit.
    const counts = heldAfter(outcomes, []);
    let applied: Set<string>;
    let recordedBefore = new Set<string>();
    let candidates: Listed[] | undefined;
    // The claim's candidates come with the results unless a final failure may disable an endpoint
    // below, after that statement: the listing must not offer it.
    const listFree = failing.size === 0 ? free : 0;
    if (tx.kind === 'postgres') {
      // Nothing follows it when there is no final failure to count and no claim: then it is the last statement.
      ({ applied, recordedBefore, candidates } = await writeResultsPostgres(tx, rows, attempts, resettable, counts, listFree, failing.size === 0 && free <= 0));
    } else {
      const steps = rows.map((r) => [r.id, r.token, r.attempts, r.state, r.next_attempt_at, r.last_attempt_at, r.last_response_status, r.last_error_kind, r.finished_at, r.updated_at]);
      const attemptRows = attempts.map((a) => [
        a.id, a.delivery_id, a.endpoint_id, a.attempt, a.request_headers_json, a.request_body, a.response_status, a.response_body,
        a.duration_ms, a.error_kind, a.error_detail, a.created_at,
      ]);
      // One list: the counts (deferred, so they go first), the next steps, the attempt rows and,
      // when a claim follows, its listing.
      deferHeldSqlite(tx, counts);
      const [stepped, , listed] = await tx.batch([
        { query: CompiledQuery.raw(SQLITE_NEXT_STEPS, [JSON.stringify(steps)]) },
        { query: CompiledQuery.raw(SQLITE_ATTEMPTS, [JSON.stringify(attemptRows)]) },
        ...(listFree > 0 ? [{ query: sqliteCandidates(clock.now().getTime(), listFree) }] : []),
      ]);
      applied = new Set((stepped!.rows as { id: string }[]).map((r) => r.id));
      if (listed) candidates = (listed.rows as CandidateRow[]).map(toListed);
      // Which endpoints' failure counts go back to 0 depends on the next steps' answer; nothing
      // the listing or the claim reads, so it goes with the next list.
      const reset = resettable.filter((endpointId) => outcomes.some((o) => o.delivery.endpointId === endpointId && o.step.kind === 'delivered' && applied.has(o.delivery.id)));
      if (reset.length > 0) tx.defer(CompiledQuery.raw(SQLITE_RESET, [JSON.stringify(reset)]));
    }

    const finals = new Map<string, Outcome[]>();
    for (const o of [...outcomes].sort((a, b) => a.finishedAt - b.finishedAt)) {
      if (!failing.has(o.delivery.endpointId) || !applied.has(o.delivery.id) || o.step.kind === 'retry') continue;
      finals.set(o.delivery.endpointId, [...(finals.get(o.delivery.endpointId) ?? []), o]);
    }
    const disabled = new Set<string>();
    for (const endpointId of [...finals.keys()].sort(compare)) {
      const list = finals.get(endpointId)!;
      if (list.every((o) => o.step.kind === 'delivered')) {
        await tx.run(db.updateTable('webhook_endpoints').set({ consecutive_failures: 0 }).where('id', '=', endpointId).where('consecutive_failures', '<>', 0).compile());
        continue;
      }
      let current = db.selectFrom('webhook_endpoints').select(['consecutive_failures', 'state']).where('id', '=', endpointId);
      if (tx.kind === 'postgres') current = current.forUpdate();
      const endpoint = (await tx.run(current.compile())).rows[0];
      if (!endpoint) continue;
      let count = endpoint.consecutive_failures;
      let crossedWith: Outcome | null = null;
      for (const o of list) {
        const health = endpointHealthAfter(count, o.step.kind === 'delivered' ? 'delivered' : 'failed', options.autoDisableThreshold);
        count = health.consecutiveFailures;
        if (health.disable && crossedWith === null) crossedWith = o;
      }
      const disable = crossedWith !== null && endpoint.state === 'active';
      const at = list[list.length - 1]!.finishedAt;
      await tx.run(
        db
        .updateTable('webhook_endpoints')
        .set({
          consecutive_failures: count,
          ...(disable
            ? {
                state: 'disabled' as const,
                disabled_at: at,
                disabled_reason: `Auto-disabled after ${options.autoDisableThreshold} consecutive failed deliveries (last: ${describeFailure(crossedWith!.result)}).`,
                updated_at: at,
              }
            : {}),
        })
        .where('id', '=', endpointId)
        .compile(),
      );
      if (disable) disabled.add(endpointId);
    }
    return { applied, disabled, recordedBefore, ...(candidates ? { candidates } : {}) };
  }

  /**
   * PostgreSQL: the batch's next steps, its attempt rows, the reset of its all-success endpoints'
   * failure counts and this worker's counts in ONE statement (one round trip): data-modifying CTEs over the
   * batch passed as one array per column (PG_RESULTS). Returns the deliveries whose lease token
   * still matched, and those already recorded by a cycle whose COMMIT was in doubt.
   */
  async function writeResultsPostgres(
    tx: PostgresCycleTx,
    rows: NextStepRow[],
    attempts: WebhookAttemptsTable[],
    resettable: string[],
    counts: [string, number][],
    free: number,
    last: boolean,
  ): Promise<{ applied: Set<string>; recordedBefore: Set<string>; candidates?: Listed[] }> {
    const parameters = [
      rows.map((r) => r.id), rows.map((r) => r.token), rows.map((r) => r.attempts), rows.map((r) => r.state), rows.map((r) => r.next_attempt_at),
      rows.map((r) => r.last_attempt_at), rows.map((r) => r.last_response_status), rows.map((r) => r.last_error_kind), rows.map((r) => r.finished_at),
      rows.map((r) => r.updated_at), attempts.map((a) => a.id), attempts.map((a) => a.endpoint_id), JSON.stringify(attempts.map((a) => wellFormed(a.request_headers_json))),
      JSON.stringify(attempts.map((a) => wellFormed(a.request_body))), JSON.stringify(attempts.map((a) => (a.response_body === null ? null : wellFormed(a.response_body)))), attempts.map((a) => a.duration_ms), attempts.map((a) => a.error_detail),
      resettable, workerId, counts.map((c) => c[0]), counts.map((c) => c[1]), clock.now().getTime() + options.leaseMs,
    ];
    let answer: ResultOrCandidateRow[];
    if (free <= 0) {
      const results = CompiledQuery.raw(PG_RESULTS, parameters) as CompiledQuery<ResultRow>;
      answer = (await (last ? tx.runLast(results) : tx.run(results))).rows;
    } else {
      const { mine, limit } = listingOf(free);
      parameters.push(clock.now().getTime(), options.perEndpointConcurrency, limit, [...mine.keys()], [...mine.values()], ahead);
      answer = (await tx.run(CompiledQuery.raw(PG_RESULTS_THEN_CANDIDATES, parameters) as CompiledQuery<ResultOrCandidateRow>)).rows;
    }
    const applied = new Set<string>();
    const recordedBefore = new Set<string>();
    const listed: Extract<ResultOrCandidateRow, { id: null }>[] = [];
    for (const r of answer) {
      if (r.id === null) listed.push(r);
      else (r.already ? recordedBefore : applied).add(r.id);
    }
    if (free <= 0) return { applied, recordedBefore };
    // Oldest due first, as PG_CANDIDATES returns them (fairness.ts deals slots in this order).
    listed.sort((a, b) => Number(a.oldest_due) - Number(b.oldest_due) || compare(a.endpoint_id, b.endpoint_id));
    return { applied, recordedBefore, candidates: listed.map(toListed) };
  }

  function report(outcomes: Outcome[], written: WrittenResults): void {
    for (const o of outcomes) {
      counters.attempts += 1;
      const { delivery, step, result, attempt } = o;
      if (!written.applied.has(delivery.id) && !written.recordedBefore.has(delivery.id)) {
        counters.leasesLost += 1;
        logger.warn({ deliveryId: delivery.id, endpointId: delivery.endpointId }, 'webhook lease was lost before the result was recorded (another worker took over)');
        continue;
      }
      if (step.kind === 'delivered') counters.delivered += 1;
      if (step.kind === 'failed') counters.failed += 1;
      const logFields = { deliveryId: delivery.id, endpointId: delivery.endpointId, tenantId: delivery.tenantId, eventType: delivery.eventType, attempt, status: result.status, errorKind: result.errorKind, durationMs: result.durationMs };
      if (step.kind === 'failed') logger.warn(logFields, 'webhook delivery failed after its last attempt');
      else if (logger.isLevelEnabled('debug')) logger.debug(Object.assign(logFields, { next: step.kind === 'retry' ? step.at.toISOString() : step.kind }), 'webhook attempt');
    }
    for (const endpointId of written.disabled) {
      const tenantId = outcomes.find((o) => o.delivery.endpointId === endpointId)?.delivery.tenantId;
      logger.warn({ endpointId, tenantId }, 'webhook endpoint auto-disabled');
    }
  }

  async function settle(): Promise<void> {
    for (;;) {
      if (cycling) await cycling;
      // A stopping worker gives back what waits; otherwise what has a slot starts.
      startWaiting();
      if (waiting.size > 0 && inFlight.size === 0) {
        // Nothing in flight frees a slot for them (cannot happen: a claim leaves a slot for every endpoint it claims at).
        logger.error({ deliveries: waitingTotal() }, 'claimed webhook deliveries without a send slot; giving them back');
        for (const endpointId of [...waiting.keys()]) giveBack(endpointId);
      }
      if (inFlight.size === 0 && recording.size === 0 && waiting.size === 0 && toRelease.length === 0 && !cycling) return;
      // Results a cycle put back (the database was away) are written by the running worker's next
      // poll; a stopped or merely ticked worker has no poll, so it writes (or gives up on) them
      // now. What is to be given back, any worker gives back now (nothing else would wait for it).
      if ((resultQueue.length > 0 && (!running || stopped)) || toRelease.length > 0) {
        await pump();
        continue;
      }
      await Promise.allSettled([...inFlight.values(), ...recording]);
    }
  }

  return {
    tick,
    settle,
    async deliverDue() {
      let total = 0;
      for (;;) {
        const n = await tick();
        await settle();
        total += n;
        if (n === 0) return total;
      }
    },
    start() {
      if (running || stopped) return;
      running = true;
      // Not unref'd: a started loop is what keeps a `--role worker` process alive (nothing else may).
      timer = setInterval(() => void tick(), options.pollIntervalMs);
      queueVacuum?.start();
      void tick();
    },
    async stop() {
      stopped = true;
      running = false;
      if (timer) clearInterval(timer);
      await queueVacuum?.stop();
      await settle();
      sender.close();
    },
    inFlight: () => inFlight.size,
    stats: () => ({ ...counters }),
  };
}

function toListed(r: CandidateRow): Listed {
  return { endpointId: r.endpoint_id, due: Number(r.due), others: Number(r.others) };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function describeFailure(result: SendResult): string {
  if (result.errorKind === 'http_status') return `HTTP ${result.status}`;
  return result.errorKind ?? 'unknown error';
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
