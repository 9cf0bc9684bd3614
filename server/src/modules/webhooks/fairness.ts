/**
 * Fair sharing of a worker's free send slots between endpoints: pure.
 *
 * How it works: the worker lists endpoints with due deliveries, oldest due first, each with how
 * many of its deliveries are in flight anywhere (held by any worker, ADR 0021). Slots are dealt
 * one per endpoint per round, in that order, and no endpoint goes past its concurrency cap. So an
 * endpoint that hangs for the whole time-out holds at most `perEndpointCap` slots, and every other
 * endpoint with due work gets a slot in the same claim: a slow or failing receiver delays only
 * itself (the "one failing endpoint clogs the queue" failure of Convoy #1926).
 */

export interface ClaimCandidate {
  endpointId: string;
  /**
   * What already counts against `perEndpointCap` at this endpoint: the deliveries of it held by any
   * worker (the live counts of `webhook_in_flight`, ADR 0021). A worker that claims ahead (ADR 0031)
   * passes a cap and counts scaled to what it may hold rather than send.
   */
  inFlight: number;
  /** Due deliveries waiting (an upper bound is fine). */
  due: number;
}

export interface ClaimPlanEntry {
  endpointId: string;
  count: number;
}

/** How many due deliveries to claim per endpoint; candidates must come in fair (oldest-due-first) order. */
export function planClaims(candidates: readonly ClaimCandidate[], limits: { slots: number; perEndpointCap: number }): ClaimPlanEntry[] {
  const room = candidates.map((c) => Math.max(0, Math.min(limits.perEndpointCap - c.inFlight, c.due)));
  const counts = candidates.map(() => 0);
  let slots = Math.max(0, limits.slots);
  let progressed = true;
  while (slots > 0 && progressed) {
    progressed = false;
    for (let i = 0; i < candidates.length && slots > 0; i++) {
      if (counts[i]! < room[i]!) {
        counts[i]! += 1;
        slots -= 1;
        progressed = true;
      }
    }
  }
  return candidates.flatMap((c, i) => (counts[i]! > 0 ? [{ endpointId: c.endpointId, count: counts[i]! }] : []));
}
