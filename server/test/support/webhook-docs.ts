/**
 * Reads the event payload tables of docs/webhooks.md ("### `type`" followed by a field table), so
 * tests can hold the documentation and the payloads actually sent to each other.
 */
import { readFileSync } from 'node:fs';

export const WEBHOOKS_DOC = new URL('../../../docs/webhooks.md', import.meta.url);

/** Documented `data` fields per event type, in the order documented. */
export function documentedEventFields(): Map<string, string[]> {
  const text = readFileSync(WEBHOOKS_DOC, 'utf8');
  const part = text.slice(text.indexOf('## Event types and their `data`'));
  const out = new Map<string, string[]>();
  for (const section of part.split(/^### /m).slice(1)) {
    const heading = /^`([a-z_.]+)`/.exec(section);
    if (!heading) continue;
    const fields = [...section.matchAll(/^\|\s*`([a-z_]+)`\s*\|/gm)].map((m) => m[1]!);
    out.set(heading[1]!, fields);
  }
  return out;
}
