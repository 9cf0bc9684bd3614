/**
 * The order of the documentation site's navigation. Every markdown file in docs/ becomes a page
 * whether or not it is listed here: a listed page appears in its section at its place, an unlisted
 * one at the end of DEFAULT_SECTION (alphabetically by title), and docs/adr/* always form the
 * "Architecture decisions" section in file-name order. A name listed here with no file is skipped,
 * so a page another branch is still writing can be listed before it exists.
 */
export interface NavSectionSpec {
  title: string;
  /** Page slugs (file name without `.md`); `api` is the interactive API reference. */
  pages: readonly string[];
}

export const API_REFERENCE_SLUG = 'api';

export const NAV_SECTIONS: readonly NavSectionSpec[] = [
  { title: 'Get started', pages: ['quickstart', 'sandbox'] },
  { title: 'Guides', pages: ['decisions', 'auto-loan', 'apr', 'verification', 'webhooks', 'events', 'portal'] },
  { title: 'Reference', pages: [API_REFERENCE_SLUG, 'errors', 'adverse-action-codes', 'idempotency', 'rate-limits', 'versioning'] },
  { title: 'Operating the service', pages: ['configuration', 'deployment', 'architecture', 'engine', 'credit-gateway', 'performance', 'performance-runs', 'reliability'] },
];

/** Where a page the manifest does not name goes. */
export const DEFAULT_SECTION = 'Guides';

export const ADR_SECTION = 'Architecture decisions';

/** Files in docs/ that are not pages (the OpenAPI document is served at /v1/openapi.json). */
export const NOT_PAGES: readonly string[] = ['README.md'];
