/**
 * docs/webhooks.md documents the `data` of every event type the code knows, and decision.finalized
 * exactly as interface.md fixes it. (The integration suite checks real payloads against these tables.)
 */
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../../src/modules/events/outbox.js';
import { documentedEventFields } from '../../support/webhook-docs.js';

describe('docs/webhooks.md', () => {
  const documented = documentedEventFields();

  it('has a payload table for exactly the event types of the code', () => {
    expect([...documented.keys()].sort()).toEqual([...EVENT_TYPES].sort());
    for (const [type, fields] of documented) expect(fields.length, type).toBeGreaterThan(0);
  });

  it('documents decision.finalized with exactly the fields of the interface specification', () => {
    expect(documented.get('decision.finalized')).toEqual([
      'decision_id', 'application_id', 'outcome', 'score', 'confidence', 'recommended_amount', 'recommended_rate_pct', 'risk_grade', 'reason_codes', 'engine_version',
    ]);
  });

  it('documents no field that would carry PII', () => {
    const forbidden = /^(first_name|last_name|name|email|phone|dob|date_of_birth|address|line1|city|zip|ssn|ssn_last4)$/;
    for (const [type, fields] of documented) for (const f of fields) expect(f, `${type}.${f}`).not.toMatch(forbidden);
  });
});
