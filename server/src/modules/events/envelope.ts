/**
 * The event envelope, the one JSON shape an event has on the wire: the body of every webhook
 * delivery and each element of the event history API (`GET /v1/events`). It is written around the
 * stored `data` text, so `data` is byte-for-byte what the outbox stored, on every attempt and in
 * every read. `attempt` belongs to a delivery, not to the event: the delivery worker passes it; the
 * history API omits it (docs/events.md).
 */
export interface EnvelopeSource {
  id: string;
  type: string;
  /** Epoch milliseconds (the outbox's `created_at`). */
  createdAtMs: number;
  /** The stored `data_json`. */
  dataJson: string;
}

/** `{"id","type","created","attempt"?,"data"}`, in this order; `created` in unix seconds. */
export function eventEnvelopeJson(event: EnvelopeSource, attempt?: number): string {
  const created = Math.floor(event.createdAtMs / 1000);
  const attemptPart = attempt === undefined ? '' : `"attempt":${attempt},`;
  return `{"id":${JSON.stringify(event.id)},"type":${JSON.stringify(event.type)},"created":${created},${attemptPart}"data":${event.dataJson}}`;
}
