/**
 * The in-process cache of poll answers on PostgreSQL (ADR 0050): a decision's JSON text, as
 * `presentDecisionJson` built it, kept as UTF-8 bytes (`answerBytes`), by decision id, so that
 * polling a decision again (what a lender does every 2 to 3 s while the consumer verifies) costs
 * no read.
 *
 * How it works. A poll's answer depends on the decision's row alone (and on the clock, for a
 * pending decision past its deadline). Migration 0028's triggers `pg_notify` the decision's id in
 * the transaction that updates or deletes its row, and `*` when the table is truncated; the API-key
 * listener (api-key-invalidation.ts) LISTENs on that channel too and calls `invalidate`/`clear`. A
 * cached answer is served only after the listener's freshness barrier sent after the poll arrived
 * has come back, the same barrier a cached API key waits for (ADR 0015), so every change committed
 * before the poll arrived has been applied by then: a poll never sees an older state than a read
 * would have shown it. While the listener is down every poll reads, and the cache is emptied
 * whenever it is lost and again once it listens.
 *
 * What is kept: decisions that can still change (pending verification, referred), the ones a
 * lender polls again and again (decisions.service.ts `cachePoll` says why only those). Filled from
 * two places: a create, once its transaction has committed (its response body is the first poll's
 * answer), and a poll that read the row. Either fills only if nothing was invalidated since it
 * started (`generation`): a change whose notification is applied while the read or the create is
 * in flight can never be overwritten by the older state that read or create saw.
 *
 * Bounded by an estimate of its bytes (`DECISION_CACHE_MB`): the oldest insertion goes first, and
 * a hit does not reorder, so a hit costs one Map lookup. The insertion order is a queue of its own
 * (`orderIds`, `orderEntries`), not the Map's: finding a Map's first live entry walks past every
 * entry deleted since the Map last rehashed, up to half its capacity, and with tens of thousands
 * of entries that walk made every fill a scan (the full run of 2026-12-04 19:40: 0.079 ms of
 * server CPU a poll). What each entry carries besides its bytes (the scope a hit is checked
 * against, a pending decision's deadline) is what the read would have let the poll check.
 */
import type { DecisionsTable } from '../../db/schema.js';

export interface CachedDecision {
  /** The poll's body, byte for byte, as UTF-8 (`answerBytes`). */
  readonly body: Buffer;
  readonly tenantId: string;
  readonly environment: DecisionsTable['environment'];
  readonly product: DecisionsTable['product'];
  /** Past this instant (ms) the entry is not served: a pending decision's deadline (lazy expiry). Infinity otherwise. */
  readonly servedUntilMs: number;
}

/**
 * What an entry costs besides its bytes, as an estimate: the id (a 36-character key string), the
 * entry object, the Buffer's objects and its allocation, the Map's slot, the queue's two slots.
 * About 800 bytes measured with `process.memoryUsage()` (heap and external) over 100,000 entries
 * of 934-byte answers: 1,734 bytes an entry, and 2,323 of resident set (docs/performance.md,
 * thirty-sixth session).
 */
export const ENTRY_OVERHEAD_BYTES = 800;

/** What a consumed queue item holds instead of its entry. */
const RELEASED: CachedDecision = Object.freeze({ body: Buffer.alloc(0), tenantId: '', environment: 'sandbox', product: 'bnpl', servedUntilMs: 0 });

/**
 * A poll's JSON text as the bytes the cache keeps: outside V8's heap, where strings would enlarge
 * what V8 counts as live, and V8 lets its old generation grow to a multiple of that before it
 * collects (in the memory bench, with every create kept, 32 MiB of answers grew the resident set
 * by about 120 MB as strings and about 95 MB as bytes; keeping only decisions that can still
 * change did the rest). In a buffer of their own, never a slice of Node's shared 8 KiB pool, which
 * one cached answer would keep whole. A hit writes them to the socket with no encoding.
 */
export function answerBytes(json: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(json));
  bytes.write(json);
  return bytes;
}

export interface DecisionCacheStats {
  entries: number;
  bytes: number;
  hits: number;
  misses: number;
}

export class DecisionCache {
  private readonly entries = new Map<string, CachedDecision>();
  /**
   * Insertions in order, oldest at `head`: the id and the entry inserted. An item whose entry is no
   * longer the Map's for that id (invalidated, expired, replaced) is skipped when it comes up.
   */
  private orderIds: string[] = [];
  private orderEntries: CachedDecision[] = [];
  private head = 0;
  private bytes = 0;
  private current = 0;
  private hitCount = 0;
  private missCount = 0;

  constructor(readonly maxBytes: number) {}

  /** Bumped by every invalidation: a fill that started at another generation is refused. */
  get generation(): number {
    return this.current;
  }

  /** Whether a poll of `id` may be answered from here (once its barrier is back). Not counted. */
  has(id: string): boolean {
    return this.entries.has(id);
  }

  /** The entry of `id` still servable at `nowMs`, else undefined (and it is dropped if it expired). */
  get(id: string, nowMs: number): CachedDecision | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) {
      this.missCount++;
      return undefined;
    }
    if (nowMs >= entry.servedUntilMs) {
      this.remove(id, entry);
      this.missCount++;
      return undefined;
    }
    this.hitCount++;
    return entry;
  }

  /** Fill after a read or a create that started at `generation`; false when it is no longer safe to (or it would not fit). */
  set(id: string, entry: CachedDecision, generation: number): boolean {
    if (generation !== this.current) return false;
    const size = entry.body.length + ENTRY_OVERHEAD_BYTES;
    if (size > this.maxBytes) return false;
    const old = this.entries.get(id);
    if (old !== undefined) this.remove(id, old);
    this.entries.set(id, entry);
    this.orderIds.push(id);
    this.orderEntries.push(entry);
    this.bytes += size;
    while (this.bytes > this.maxBytes) this.evictOldest();
    // Items of entries since invalidated or replaced pile up while nothing needs evicting: rebuild
    // the queue from the Map, whose order is the same (a replaced entry was deleted and set again).
    if (this.orderIds.length - this.head > 2 * this.entries.size + 1024) {
      this.orderIds = [...this.entries.keys()];
      this.orderEntries = [...this.entries.values()];
      this.head = 0;
    }
    return true;
  }

  private evictOldest(): void {
    const id = this.orderIds[this.head]!;
    const entry = this.orderEntries[this.head]!;
    // Consumed: let go of the entry now (about a kilobyte), not when the front is dropped.
    this.orderEntries[this.head] = RELEASED;
    this.head++;
    if (this.entries.get(id) === entry) this.remove(id, entry);
    // Drop the consumed front now and then (amortised: each item is copied at most once).
    if (this.head >= 1024 && this.head * 2 >= this.orderIds.length) {
      this.orderIds = this.orderIds.slice(this.head);
      this.orderEntries = this.orderEntries.slice(this.head);
      this.head = 0;
    }
  }

  /** The decision changed (or is gone): drop it, and refuse fills that started before. */
  invalidate(id: string): void {
    this.current++;
    const entry = this.entries.get(id);
    if (entry !== undefined) this.remove(id, entry);
  }

  clear(): void {
    this.current++;
    this.entries.clear();
    this.orderIds = [];
    this.orderEntries = [];
    this.head = 0;
    this.bytes = 0;
  }

  stats(): DecisionCacheStats {
    return { entries: this.entries.size, bytes: this.bytes, hits: this.hitCount, misses: this.missCount };
  }

  private remove(id: string, entry: CachedDecision): void {
    this.entries.delete(id);
    this.bytes -= entry.body.length + ENTRY_OVERHEAD_BYTES;
  }
}
