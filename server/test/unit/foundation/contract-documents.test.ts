/**
 * The HTTP contract is a product: the committed OpenAPI document and docs/errors.md must say
 * exactly what the code does. Regenerate with `npm run openapi`; edit docs/errors.md by hand.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_REGISTRY } from '../../../src/http/errors/error-registry.js';
import { OPENAPI_PATH, generateOpenApiDocument } from '../../../src/http/openapi-document.js';

describe('contract documents', () => {
  it('docs/openapi.json is what the routes generate (run `npm run openapi` after changing a route)', async () => {
    expect(readFileSync(OPENAPI_PATH, 'utf8')).toBe(await generateOpenApiDocument());
  });

  it('docs/errors.md documents exactly the registry, with the same statuses', () => {
    const text = readFileSync(new URL('../../../../docs/errors.md', import.meta.url), 'utf8');
    const documented = new Map<string, number>();
    for (const match of text.matchAll(/^\|\s*(\d{3})\s*\|\s*`([a-z_]+)`\s*\|/gm)) documented.set(match[2]!, Number(match[1]));
    const registry = new Map(Object.entries(ERROR_REGISTRY).map(([code, v]) => [code, v.status as number]));
    expect(Object.fromEntries(documented)).toEqual(Object.fromEntries(registry));
  });
});
