/**
 * A reproducible load of BNPL creates for crash and fault tests. A seeded generator (mulberry32)
 * draws every choice, so a failing run is replayed by its seed (tests print it and accept
 * `CDS_FAULT_SEED`). Each request carries its own Idempotency-Key and names that key in its
 * `merchant_name`, so the decisions a key produced can be counted in SQL, whatever else happens.
 *
 * The mix: the seeded soft consumer (complete, approved), new consumers at soft amounts (complete,
 * any outcome; some with the magic SSN 3333: referred with AA-25 and score.errored) and new
 * consumers at enhanced amounts (pending, `needs_consumer_action`).
 *
 * `catchUpDeliveries` runs the real delivery worker in a process whose clock is ahead: sends that a
 * killed or cut-off worker had leased are claimed again once the lease passes (60 s in production);
 * moving the worker's clock (time is passed in, lib/clock.ts) stands for waiting that out.
 */
import { DIST_URL, httpRequest, startNodeScript, type ChildEnv, type HttpResponse } from './server-process.js';

/** mulberry32: a small, fast, seedable generator; good enough to pick moments and mixes. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seed of this run: CDS_FAULT_SEED if given (to replay a failure), else a fresh one. */
export function faultSeed(): number {
  const given = process.env.CDS_FAULT_SEED;
  return given !== undefined && /^\d+$/.test(given) ? Number(given) : Math.floor(Math.random() * 2 ** 31);
}

export type LoadKind = 'seeded_soft' | 'new_soft' | 'new_unavailable' | 'new_enhanced';

export interface CreateSpec {
  key: string;
  kind: LoadKind;
  /** The exact JSON text sent (the same bytes on every retry). */
  body: string;
}

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'Ken', 'Radia', 'Tim', 'Shafi', 'Leslie'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'Thompson', 'Perlman', 'Lee', 'Goldwasser', 'Lamport'];

const cents = (n: number) => `${Math.floor(n / 100)}.${String(n % 100).padStart(2, '0')}`;

/** Draws create requests; `prefix` keeps keys of different tests and runs apart. */
export function createSpecGenerator(random: () => number, options: { prefix: string; softConsumerId: string }): () => CreateSpec {
  let n = 0;
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const between = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
  return () => {
    n += 1;
    const key = `${options.prefix}-${n}`;
    const roll = random();
    const kind: LoadKind = roll < 0.4 ? 'seeded_soft' : roll < 0.7 ? 'new_soft' : roll < 0.78 ? 'new_unavailable' : 'new_enhanced';
    const transaction = {
      amount: cents(kind === 'new_enhanced' ? between(50_000, 499_999) : between(2_500, 49_999)),
      currency: 'USD',
      merchant_name: `Load ${key}`,
      merchant_category: 'electronics',
    };
    const consumer =
      kind === 'seeded_soft'
        ? { consumer_id: options.softConsumerId }
        : {
            first_name: pick(FIRST),
            last_name: `${pick(LAST)}${n}`,
            email: `applicant${n}@example.com`,
            dob: `19${between(50, 99)}-0${between(1, 9)}-1${between(0, 9)}`,
            // 3333 is the sandbox's "credit data unavailable"; others avoid the magic 0000-3333.
            ssn_last4: kind === 'new_unavailable' ? '3333' : String(between(4_000, 9_999)),
            address: { line1: `${n} Main Street`, city: 'Austin', state: 'TX', zip: '73301' },
          };
    return { key, kind, body: JSON.stringify({ consumer, transaction }) };
  };
}

/** POST the create with its key; never rejects for HTTP statuses (only for transport failures). */
export function sendCreate(baseUrl: string, apiKey: string, spec: CreateSpec, timeoutMs = 15_000): Promise<HttpResponse> {
  return httpRequest(`${baseUrl}/v1/decisions/bnpl`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': spec.key },
    body: spec.body,
    timeoutMs,
  });
}

/** Run `fn` over `items` with at most `concurrency` at once; results in input order. */
export async function mapConcurrent<T, R>(items: readonly T[], concurrency: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  });
  await Promise.all(lanes);
  return results;
}

export interface CatchUpReport {
  stats: { attempts: number; delivered: number; failed: number };
  /** Deliveries not delivered afterwards. */
  left: Array<{ id: string; state: string; attempts: number; last_error_kind: string | null }>;
}

/** Deliver everything due `offsetMs` from now with the real worker in its own process (the service stopped or not). */
export async function catchUpDeliveries(env: ChildEnv, offsetMs = 15 * 60_000): Promise<CatchUpReport> {
  const source = `
const { loadConfig } = await import(${JSON.stringify(`${DIST_URL}config/config.js`)});
const { createContext } = await import(${JSON.stringify(`${DIST_URL}app/context.js`)});
const clock = { now: () => new Date(Date.now() + ${offsetMs}) };
const ctx = createContext(loadConfig(process.env), { clock, webhookDelivery: { timeoutMs: 5000, leaseMs: 10000 } });
await ctx.webhookDelivery.deliverDue();
const left = await ctx.storage.db.selectFrom('webhook_deliveries').select(['id', 'state', 'attempts', 'last_error_kind']).where('state', '<>', 'delivered').execute();
process.stdout.write(JSON.stringify({ stats: ctx.webhookDelivery.stats(), left }) + '\\n');
await ctx.close();
`;
  const done = await startNodeScript(source, { LOG_LEVEL: 'warn', WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1', ...env }, { timeoutMs: 90_000 }).result;
  const line = done.stdout.split('\n').find((l) => l.includes('"stats"'));
  if (done.code !== 0 || line === undefined) throw new Error(`catch-up worker failed (code ${done.code}, signal ${done.signal}): ${done.stderr}`);
  return JSON.parse(line) as CatchUpReport;
}
