/**
 * The SDK's webhook event types match docs/webhooks.md ("Event types and their `data`") exactly:
 * every documented event type has a `...Data` interface in `EventDataByType`, with the documented
 * fields and no others, each the documented kind (string, number, array of strings, object) and
 * nullable exactly where the doc says "or null".
 *
 * The field lists below are not a second copy of the types: `satisfies FieldKinds<XData>` makes the
 * compiler (`npm run typecheck`) reject a list that misses a field of the interface, names one it
 * does not have, or gives a kind or nullability the interface does not; the runtime test then
 * compares the lists with the doc. So the doc and the interfaces can only agree through both.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { Event, EventDataByType, EventType, TypedEvent, TypedWebhookEvent, WebhookEvent } from '../src/index.js';
import { REPO_ROOT } from './support/service.js';

/** How docs/webhooks.md writes a field's type, by the kind of TypeScript value it is. */
type Kind<V> = [V] extends [string] ? 'string' : [V] extends [number] ? 'number' : [V] extends [readonly string[]] ? 'string[]' : [V] extends [object] ? 'object' : never;
/** Each field of `T` with its kind, `' | null'` added when the field can be null. */
type FieldKinds<T> = { [K in keyof T]-?: null extends T[K] ? `${Kind<NonNullable<T[K]>>} | null` : Kind<T[K]> };

const SDK_FIELDS = {
  'application.created': {
    application_id: 'string',
    decision_id: 'string',
    consumer_id: 'string',
    product: 'string',
    amount: 'string',
    currency: 'string',
    kyc_tier: 'string',
    merchant_name: 'string',
    merchant_category: 'string',
    channel: 'string | null',
    dealer_id: 'string | null',
  },
  'decision.created': { decision_id: 'string', application_id: 'string', status: 'string', kyc_tier: 'string', kyc_status: 'string' },
  'score.completed': {
    decision_id: 'string',
    application_id: 'string',
    score: 'number',
    confidence: 'number',
    risk_grade: 'string',
    engine_version: 'string',
    score_range: 'object | null',
    key_factor_codes: 'string[]',
    credit_file_source: 'string | null',
  },
  'score.errored': { decision_id: 'string', application_id: 'string', reason: 'string', engine_version: 'string' },
  'decision.finalized': {
    decision_id: 'string',
    application_id: 'string',
    outcome: 'string',
    score: 'number | null',
    confidence: 'number',
    recommended_amount: 'number',
    recommended_rate_pct: 'number',
    risk_grade: 'string | null',
    reason_codes: 'string[]',
    engine_version: 'string',
  },
  'decision.adjusted': {
    decision_id: 'string',
    application_id: 'string',
    previous_outcome: 'string',
    outcome: 'string',
    approved_amount: 'string | null',
    currency: 'string',
    plan: 'string | null',
    term_months: 'number | null',
    apr: 'string | null',
    reason_codes: 'string[]',
    adjusted_at: 'string',
    adjusted_by: 'string',
  },
  'application.kyc_completed': { application_id: 'string', decision_id: 'string', consumer_id: 'string', kyc_tier: 'string', kyc_status: 'string' },
  'application.kyc_failed': { application_id: 'string', decision_id: 'string', consumer_id: 'string', kyc_tier: 'string', reason_code: 'string' },
  'application.documents_requested': {
    application_id: 'string',
    decision_id: 'string',
    request_id: 'string',
    document_types: 'string[]',
    upload_url: 'string',
    expires_at: 'string',
    requested_at: 'string',
    requested_by: 'string',
  },
  'application.condition_added': { application_id: 'string', decision_id: 'string', condition_id: 'string', code: 'string', added_at: 'string', added_by: 'string' },
  'dealer.added': { dealer_id: 'string', dealer_name: 'string', status: 'string' },
  'dealer.removed': { dealer_id: 'string', dealer_name: 'string', status: 'string' },
  'webhook.test': { endpoint_id: 'string', message: 'string' },
} satisfies { [T in EventType]: FieldKinds<EventDataByType[T]> };

/** The doc's type column as a kind: UUID, timestamp and decimal string are strings on the wire. */
const DOC_KINDS: Record<string, string> = {
  UUID: 'string',
  string: 'string',
  'decimal string': 'string',
  timestamp: 'string',
  integer: 'number',
  number: 'number',
  'array of strings': 'string[]',
  object: 'object',
};

/** Event type -> field -> kind, from the "Event types and their `data`" section of docs/webhooks.md. */
function documentedFields(): Record<string, Record<string, string>> {
  const doc = readFileSync(path.join(REPO_ROOT, 'docs', 'webhooks.md'), 'utf8');
  const section = /^## Event types and their `data`\n([\s\S]*?)(?=^## )/m.exec(doc)?.[1];
  if (section === undefined) throw new Error('docs/webhooks.md has no "Event types and their `data`" section');
  const out: Record<string, Record<string, string>> = {};
  for (const [, type, body] of section.matchAll(/^### `([^`]+)`\n([\s\S]*?)(?=^### |(?![\s\S]))/gm)) {
    const fields: Record<string, string> = {};
    for (const [, name, docType] of body!.matchAll(/^\| `([^`]+)` \| ([^|]+?) \|/gm)) {
      const nullable = docType!.endsWith(' or null');
      const base = nullable ? docType!.slice(0, -' or null'.length) : docType!;
      fields[name!] = `${DOC_KINDS[base] ?? `unknown doc type "${base}"`}${nullable ? ' | null' : ''}`;
    }
    out[type!] = fields;
  }
  return out;
}

describe('webhook event types match docs/webhooks.md', () => {
  const documented = documentedFields();

  it('the doc section parses: every event type with a field table', () => {
    expect(Object.keys(documented).length).toBeGreaterThanOrEqual(13);
    for (const [type, fields] of Object.entries(documented)) expect(Object.keys(fields).length, type).toBeGreaterThan(0);
  });

  it('EventDataByType has exactly the documented event types', () => {
    expect(Object.keys(SDK_FIELDS).sort()).toEqual(Object.keys(documented).sort());
  });

  for (const type of Object.keys(SDK_FIELDS) as EventType[]) {
    it(`${type}: the SDK's fields are the documented fields, of the documented kinds`, () => {
      // Field names first, for a clear message on a missing or extra field; then name -> kind.
      expect(Object.keys(SDK_FIELDS[type]).sort()).toEqual(Object.keys(documented[type] ?? {}).sort());
      expect({ ...SDK_FIELDS[type] }).toEqual(documented[type]);
    });
  }
});

describe('typed events narrow on type (checked by npm run typecheck)', () => {
  it('EventType is exactly the keys of EventDataByType', () => {
    expectTypeOf<keyof EventDataByType>().toEqualTypeOf<EventType>();
  });

  it('TypedWebhookEvent and TypedEvent are unions over the event types', () => {
    expectTypeOf<TypedWebhookEvent['type']>().toEqualTypeOf<EventType>();
    expectTypeOf<TypedEvent['type']>().toEqualTypeOf<EventType>();
    expectTypeOf<TypedWebhookEvent<'decision.adjusted'>>().toEqualTypeOf<WebhookEvent<EventDataByType['decision.adjusted'], 'decision.adjusted'>>();
    expectTypeOf<TypedEvent<'score.completed'>>().toEqualTypeOf<Event<EventDataByType['score.completed'], 'score.completed'>>();
    expectTypeOf<TypedEvent>().not.toHaveProperty('attempt');
  });

  it('checking event.type narrows event.data', () => {
    const describeEvent = (event: TypedWebhookEvent): string => {
      // @ts-expect-error reason_codes is not on every event type's data
      void event.data.reason_codes;
      switch (event.type) {
        case 'decision.adjusted':
          return `${event.data.outcome} ${event.data.approved_amount ?? '-'} ${event.data.reason_codes.join(',')}`;
        case 'score.completed':
          return `${event.data.score} ${event.data.score_range?.max ?? '-'} ${event.data.key_factor_codes.join(',')}`;
        case 'decision.finalized':
          return `${event.data.recommended_amount.toFixed(2)}`;
        default:
          return event.type; // types added later arrive here too
      }
    };
    const adjusted: TypedWebhookEvent = {
      id: 'e',
      type: 'decision.adjusted',
      created: 1,
      attempt: 1,
      data: {
        decision_id: 'd',
        application_id: 'a',
        previous_outcome: 'referred',
        outcome: 'approved',
        approved_amount: '80.00',
        currency: 'USD',
        plan: 'pay_in_4',
        term_months: 2,
        apr: '0.00',
        reason_codes: ['AA-03'],
        adjusted_at: '2026-01-26T12:00:00Z',
        adjusted_by: 'u',
      },
    };
    expect(describeEvent(adjusted)).toBe('approved 80.00 AA-03');
  });
});
