/**
 * Renders the markdown in docs/ into the documentation site, once (the routes cache the result):
 *
 *   files ─▶ one page per file (slug = path without `.md`; docs/adr/* under `adr/`)
 *         ─▶ marked, with a renderer that gives headings GitHub's anchor ids (so `webhooks.md#x`
 *            links work on GitHub and here alike), rewrites links between markdown files to site
 *            URLs, wraps code blocks with a copy button (and a "tested" badge for samples tagged
 *            `<!-- sample: run -->`, see code-samples.ts) and hides the sample tags
 *         ─▶ the navigation (docs-manifest.ts), one layout, a search index of every section's
 *            heading and text, the home page, the API reference page and the 404 page.
 *
 * The errors page is docs/errors.md with its table regenerated from the error registry: status and
 * code come from the registry, the "When" and "Retry?" explanations from the markdown.
 * Pure: files, the registry and asset URLs come in, strings come out.
 */
import path from 'node:path/posix';
import { Marked, type Token, type Tokens } from 'marked';
import { parseSampleTag, type SampleKind } from './code-samples.js';
import { ADR_SECTION, API_REFERENCE_SLUG, DEFAULT_SECTION, NAV_SECTIONS, NOT_PAGES } from './docs-manifest.js';

export interface DocsFile {
  /** Path inside docs/, with forward slashes: `webhooks.md`, `adr/0005-webhook-delivery.md`. */
  path: string;
  markdown: string;
}

export interface DocsAssetUrls {
  css: string;
  js: string;
  searchIndex: string;
  swaggerCss: string;
  swaggerJs: string;
  apiReferenceJs: string;
}

export interface RenderInput {
  files: DocsFile[];
  errorRegistry: Readonly<Record<string, { status: number; message: string }>>;
  assets: DocsAssetUrls;
  /** Where the interactive reference loads the OpenAPI document from. */
  openApiUrl: string;
}

export interface PageHeading {
  depth: number;
  text: string;
  id: string;
}

export interface RenderedPage {
  slug: string;
  url: string;
  file: string;
  title: string;
  section: string;
  summary: string;
  headings: PageHeading[];
  /** The full HTML document. */
  html: string;
}

export interface SearchEntry {
  /** URL with the section's anchor. */
  u: string;
  /** Page title. */
  p: string;
  /** Section heading. */
  h: string;
  /** Section text (plain, shortened). */
  t: string;
}

export interface DocsSite {
  /** By slug (`quickstart`, `adr/0005-webhook-delivery`). */
  pages: Map<string, RenderedPage>;
  home: string;
  apiReference: string;
  notFound: string;
  searchIndex: SearchEntry[];
  nav: NavSection[];
}

export interface NavSection {
  title: string;
  id: string;
  items: Array<{ slug: string; title: string; url: string }>;
}

export const DOCS_BASE = '/docs';

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'", '&nbsp;': ' ' };

/** Text content of an HTML fragment (tags removed, the few entities marked emits decoded). */
export function htmlToText(html: string): string {
  return html
    .replace(/<[^>]*>/g, '')
    .replace(/&(amp|lt|gt|quot|nbsp|#39);/g, (m) => ENTITIES[m] ?? m)
    .replace(/\s+/g, ' ')
    .trim();
}

/** GitHub's heading anchors: lower-case, punctuation dropped, each space a hyphen; repeats get -1, -2. */
export function createSlugger(): (text: string) => string {
  const seen = new Map<string, number>();
  return (text: string) => {
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base);
    seen.set(base, (n ?? -1) + 1);
    return n === undefined ? base : `${base}-${n + 1}`;
  };
}

export function slugOf(file: string): string {
  return file.replace(/\.md$/, '');
}

export function pageUrl(slug: string): string {
  return `${DOCS_BASE}/${slug}`;
}

/**
 * Where a link written in `fromFile` points on the site: another page (with its anchor), the
 * OpenAPI document, or null for a file that is not part of the site (source code, the README):
 * those are shown as plain text, since the site cannot serve them.
 */
export function resolveDocLink(href: string, fromFile: string, pages: ReadonlySet<string>): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('#') || href.startsWith('/')) return href;
  const hashAt = href.indexOf('#');
  const target = hashAt >= 0 ? href.slice(0, hashAt) : href;
  const hash = hashAt >= 0 ? href.slice(hashAt) : '';
  const resolved = path.normalize(path.join(path.dirname(fromFile), target));
  if (resolved.startsWith('..')) return null;
  if (resolved.endsWith('.md')) {
    const slug = slugOf(resolved);
    return pages.has(slug) ? pageUrl(slug) + hash : null;
  }
  if (resolved === 'openapi.json') return '/v1/openapi.json';
  if (resolved === 'adr' || resolved === 'adr/') return `${DOCS_BASE}#${sectionId(ADR_SECTION)}`;
  return null;
}

function sectionId(title: string): string {
  return createSlugger()(title);
}

/** docs/errors.md with its code table rebuilt from the registry (explanations kept from the markdown). */
export function withRegistryErrorTable(markdown: string, registry: RenderInput['errorRegistry']): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => /^\|\s*Status\s*\|\s*error\s*\|/i.test(l));
  if (start < 0) return markdown;
  let end = start;
  while (end < lines.length && lines[end]!.startsWith('|')) end++;
  const explained = new Map<string, string[]>();
  for (const row of lines.slice(start + 2, end)) {
    const cells = splitRow(row);
    const code = /^`([a-z_]+)`$/.exec(cells[1] ?? '')?.[1];
    if (code) explained.set(code, cells.slice(2));
  }
  const header = splitRow(lines[start]!);
  const extra = header.slice(2);
  const table = [
    `| Status | error | Message | ${extra.join(' | ')} |`,
    `|---|---|---|${extra.map(() => '---|').join('')}`,
    ...Object.entries(registry)
      .sort(([a, x], [b, y]) => x.status - y.status || a.localeCompare(b))
      .map(([code, entry]) => {
        const cells = explained.get(code) ?? extra.map(() => '');
        return `| ${entry.status} | \`${code}\` | ${entry.message.replace(/\|/g, '\\|')} | ${extra.map((_, i) => cells[i] ?? '').join(' | ')} |`;
      }),
  ];
  const note = '_This table is generated from the error registry (`server/src/http/errors/error-registry.ts`) when the service starts._';
  return [...lines.slice(0, start), note, '', ...table, ...lines.slice(end)].join('\n');
}

function splitRow(row: string): string[] {
  // Split on pipes that are not escaped; drop the empty cells outside the outer pipes.
  return row
    .replace(/^\s*\|/, '')
    .replace(/\|\s*$/, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim());
}

interface PageRender {
  body: string;
  title: string;
  headings: PageHeading[];
  summary: string;
}

function renderMarkdown(file: string, markdown: string, pageSlugs: ReadonlySet<string>): PageRender {
  const slugger = createSlugger();
  const headings: PageHeading[] = [];
  const marked = new Marked({ gfm: true });
  let pendingSample: SampleKind | null = null;
  marked.use({
    walkTokens(token: Token) {
      if (token.type === 'html') {
        const tag = parseSampleTag((token as Tokens.HTML).text.trim());
        if (tag) pendingSample = tag.kind;
        return;
      }
      if (token.type === 'code') {
        (token as Tokens.Code & { sample?: SampleKind | null }).sample = pendingSample;
        pendingSample = null;
        return;
      }
      if (token.type !== 'space') pendingSample = null;
    },
    renderer: {
      heading(token: Tokens.Heading) {
        const inner = this.parser.parseInline(token.tokens);
        const text = htmlToText(inner);
        const id = slugger(text);
        headings.push({ depth: token.depth, text, id });
        const anchor = token.depth === 1 ? '' : ` <a class="anchor" href="#${id}" aria-label="Link to this section">#</a>`;
        return `<h${token.depth} id="${id}">${inner}${anchor}</h${token.depth}>\n`;
      },
      link(token: Tokens.Link) {
        const inner = this.parser.parseInline(token.tokens);
        const href = resolveDocLink(token.href, file, pageSlugs);
        if (href === null) return `<span class="doc-ref">${inner}</span>`;
        const title = token.title ? ` title="${escapeHtml(token.title)}"` : '';
        return `<a href="${escapeHtml(href)}"${title}>${inner}</a>`;
      },
      html(token: Tokens.HTML | Tokens.Tag) {
        return parseSampleTag(token.text.trim()) ? '' : token.text;
      },
      code(token: Tokens.Code) {
        const sample = (token as Tokens.Code & { sample?: SampleKind | null }).sample ?? null;
        const lang = (token.lang ?? '').split(/\s+/)[0]!.toLowerCase();
        const label = lang === '' ? 'text' : lang;
        const badge = sample === 'run' ? '<span class="code-badge" title="Executed against a live service by the test suite">tested</span>' : '';
        const kind = sample ? ` data-sample="${sample}"` : '';
        return (
          `<div class="code-block"${kind}><div class="code-head"><span class="code-lang">${escapeHtml(label)}</span>${badge}` +
          `<button type="button" class="copy-button">Copy</button></div>` +
          `<pre><code${lang ? ` class="language-${escapeHtml(lang)}"` : ''}>${escapeHtml(token.text)}</code></pre></div>\n`
        );
      },
      table(token: Tokens.Table) {
        // The default table, in a box that scrolls sideways on a narrow screen instead of the page.
        const head = token.header.map((cell) => `<th${cell.align ? ` class="align-${cell.align}"` : ''}>${this.parser.parseInline(cell.tokens)}</th>`).join('');
        const rows = token.rows.map((row) => `<tr>${row.map((cell) => `<td${cell.align ? ` class="align-${cell.align}"` : ''}>${this.parser.parseInline(cell.tokens)}</td>`).join('')}</tr>`).join('\n');
        return `<div class="table-wrap"><table><thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table></div>\n`;
      },
    },
  });
  const body = marked.parse(markdown, { async: false });
  const title = headings.find((h) => h.depth === 1)?.text ?? headings[0]?.text ?? slugOf(path.basename(file));
  const firstParagraph = /<p>([\s\S]*?)<\/p>/.exec(body)?.[1] ?? '';
  const summary = shorten(htmlToText(firstParagraph), 170);
  return { body, title, headings, summary };
}

function shorten(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  return `${cut.slice(0, Math.max(cut.lastIndexOf(' '), max - 20))}…`;
}

/** Each section of a rendered page (from one heading to the next) as a search entry. */
function searchEntries(page: { url: string; title: string; body: string }): SearchEntry[] {
  const withoutCode = page.body.replace(/<pre>[\s\S]*?<\/pre>/g, ' ').replace(/<div class="code-head">[\s\S]*?<\/div>/g, ' ');
  const parts = withoutCode.split(/(?=<h[1-6] id=")/);
  const entries: SearchEntry[] = [];
  for (const part of parts) {
    const m = /^<h([1-6]) id="([^"]*)">([\s\S]*?)<\/h\1>/.exec(part);
    if (!m) continue;
    const heading = htmlToText(m[3]!.replace(/<a class="anchor"[\s\S]*?<\/a>/, ''));
    const text = shorten(htmlToText(part.slice(m[0].length)), 300);
    entries.push({ u: m[1] === '1' ? page.url : `${page.url}#${m[2]}`, p: page.title, h: heading, t: text });
  }
  return entries;
}

function buildNav(pages: Map<string, { title: string }>): NavSection[] {
  const placed = new Set<string>();
  const sections: NavSection[] = NAV_SECTIONS.map((spec) => ({
    title: spec.title,
    id: sectionId(spec.title),
    items: spec.pages.flatMap((slug) => {
      if (slug === API_REFERENCE_SLUG) return [{ slug, title: 'API reference', url: pageUrl(slug) }];
      const page = pages.get(slug);
      if (!page) return [];
      placed.add(slug);
      return [{ slug, title: page.title, url: pageUrl(slug) }];
    }),
  }));
  const byTitle = (a: { title: string }, b: { title: string }) => a.title.localeCompare(b.title);
  const unplaced = [...pages].filter(([slug]) => !placed.has(slug) && !slug.startsWith('adr/'));
  const fallback = sections.find((s) => s.title === DEFAULT_SECTION)!;
  fallback.items.push(...unplaced.map(([slug, p]) => ({ slug, title: p.title, url: pageUrl(slug) })).sort(byTitle));
  const adrs = [...pages].filter(([slug]) => slug.startsWith('adr/')).sort(([a], [b]) => a.localeCompare(b));
  sections.push({ title: ADR_SECTION, id: sectionId(ADR_SECTION), items: adrs.map(([slug, p]) => ({ slug, title: p.title.replace(/^ADR (\d+):\s*/, '$1 · '), url: pageUrl(slug) })) });
  return sections.filter((s) => s.items.length > 0);
}

interface LayoutInput {
  title: string;
  body: string;
  nav: NavSection[];
  current: string | null;
  assets: DocsAssetUrls;
  extraHead?: string;
  extraScripts?: string;
  footer?: string;
  mainClass?: string;
}

function layout(input: LayoutInput): string {
  const nav = input.nav
    .map(
      (section) =>
        `<section class="nav-section" aria-labelledby="nav-${section.id}"><h2 id="nav-${section.id}">${escapeHtml(section.title)}</h2><ul>` +
        section.items
          .map((item) => `<li><a href="${escapeHtml(item.url)}"${item.slug === input.current ? ' aria-current="page"' : ''}>${escapeHtml(item.title)}</a></li>`)
          .join('') +
        '</ul></section>',
    )
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(input.title)} · Credit Decisioning Service docs</title>
<link rel="stylesheet" href="${input.assets.css}">
${input.extraHead ?? ''}<script src="${input.assets.js}" defer></script>
</head>
<body data-search-index="${input.assets.searchIndex}">
<a class="skip-link" href="#content">Skip to the content</a>
<header class="topbar">
<button type="button" class="nav-toggle" aria-controls="sidebar" aria-expanded="false">Menu</button>
<a class="brand" href="${DOCS_BASE}">Credit Decisioning Service <span>Docs</span></a>
<div class="search" role="search">
<label class="visually-hidden" for="docs-search">Search the documentation</label>
<input id="docs-search" type="search" placeholder="Search the docs" autocomplete="off" spellcheck="false" aria-controls="search-results" aria-expanded="false">
<ul id="search-results" class="search-results" role="listbox" aria-label="Search results" hidden></ul>
</div>
<nav class="topnav" aria-label="Site"><a href="${pageUrl(API_REFERENCE_SLUG)}">API reference</a><a href="/portal">Portal</a></nav>
</header>
<div class="layout">
<nav id="sidebar" class="sidebar" aria-label="Documentation">${nav}</nav>
<main id="content" class="content${input.mainClass ? ` ${input.mainClass}` : ''}" tabindex="-1">
<article class="doc">
${input.body}
</article>
${input.footer ?? ''}
</main>
</div>
${input.extraScripts ?? ''}</body>
</html>
`;
}

export function renderDocsSite(input: RenderInput): DocsSite {
  const files = input.files
    .filter((f) => f.path.endsWith('.md') && !NOT_PAGES.includes(f.path))
    .sort((a, b) => a.path.localeCompare(b.path));
  const slugs = new Set(files.map((f) => slugOf(f.path)));
  slugs.delete(API_REFERENCE_SLUG); // the reserved slug of the interactive reference
  const rendered = new Map<string, PageRender & { file: string }>();
  for (const f of files) {
    const slug = slugOf(f.path);
    if (!slugs.has(slug)) continue;
    const markdown = f.path === 'errors.md' ? withRegistryErrorTable(f.markdown, input.errorRegistry) : f.markdown;
    rendered.set(slug, { ...renderMarkdown(f.path, markdown, slugs), file: f.path });
  }
  const nav = buildNav(rendered);
  const order = nav.flatMap((s) => s.items);
  const sectionOf = new Map(nav.flatMap((s) => s.items.map((i) => [i.slug, s.title] as const)));

  const pages = new Map<string, RenderedPage>();
  const searchIndex: SearchEntry[] = [];
  for (const [slug, page] of rendered) {
    const url = pageUrl(slug);
    const at = order.findIndex((i) => i.slug === slug);
    const prev = order[at - 1];
    const next = order[at + 1];
    const footer =
      `<footer class="doc-footer"><nav class="pager" aria-label="Previous and next page">` +
      (prev ? `<a class="prev" href="${escapeHtml(prev.url)}"><span>Previous</span>${escapeHtml(prev.title)}</a>` : '<span></span>') +
      (next ? `<a class="next" href="${escapeHtml(next.url)}"><span>Next</span>${escapeHtml(next.title)}</a>` : '<span></span>') +
      `</nav><p class="source">Source: <code>docs/${escapeHtml(page.file)}</code></p></footer>`;
    pages.set(slug, {
      slug,
      url,
      file: page.file,
      title: page.title,
      section: sectionOf.get(slug) ?? DEFAULT_SECTION,
      summary: page.summary,
      headings: page.headings,
      html: layout({ title: page.title, body: page.body, nav, current: slug, assets: input.assets, footer }),
    });
    searchIndex.push(...searchEntries({ url, title: page.title, body: page.body }));
  }
  searchIndex.push({ u: pageUrl(API_REFERENCE_SLUG), p: 'API reference', h: 'API reference', t: 'Every operation, its parameters, request and response schemas, rendered from the OpenAPI document; try requests with a sandbox key.' });

  const homeBody =
    `<h1 id="documentation">Credit Decisioning Service documentation</h1>\n` +
    `<p class="lead">Real-time credit decisions for lenders: decisions with their Truth-in-Lending disclosure or adverse-action reasons, identity verification, signed webhooks and a free sandbox that behaves like live. New here? Start with the <a href="${pageUrl('quickstart')}">quickstart</a>: a first approved decision in five minutes.</p>\n` +
    nav
      .map(
        (section) =>
          `<section class="home-section"><h2 id="${section.id}">${escapeHtml(section.title)}</h2><ul class="cards">` +
          section.items
            .map((item) => {
              const summary = item.slug === API_REFERENCE_SLUG ? 'Every operation and schema from the OpenAPI document; try requests with your sandbox key.' : (pages.get(item.slug)?.summary ?? '');
              return `<li><a href="${escapeHtml(item.url)}">${escapeHtml(item.title)}</a><p>${escapeHtml(summary)}</p></li>`;
            })
            .join('') +
          '</ul></section>',
      )
      .join('\n');
  const home = layout({ title: 'Documentation', body: homeBody, nav, current: null, assets: input.assets });

  const apiBody =
    `<h1 id="api-reference">API reference</h1>\n` +
    `<p>Rendered from the OpenAPI document the service serves at <a href="${escapeHtml(input.openApiUrl)}"><code>${escapeHtml(input.openApiUrl)}</code></a>. ` +
    `To send requests from this page, choose <strong>Authorize</strong>, paste a <strong>sandbox</strong> key (<code>svc_test_…</code>, from the portal or <code>cds tenants create</code>), then <strong>Try it out</strong> on an operation. Requests go to this service, from your browser.</p>\n` +
    `<div id="swagger-ui" class="swagger-host" data-openapi-url="${escapeHtml(input.openApiUrl)}"><p class="swagger-loading">Loading the API reference…</p></div>`;
  const apiReference = layout({
    title: 'API reference',
    body: apiBody,
    nav,
    current: API_REFERENCE_SLUG,
    assets: input.assets,
    mainClass: 'wide',
    extraHead: `<link rel="stylesheet" href="${input.assets.swaggerCss}">\n`,
    extraScripts: `<script src="${input.assets.swaggerJs}" defer></script>\n<script src="${input.assets.apiReferenceJs}" defer></script>\n`,
  });
  searchIndex.push(...nav.map((s) => ({ u: `${DOCS_BASE}#${s.id}`, p: 'Documentation', h: s.title, t: s.items.map((i) => i.title).join(', ') })));

  const notFound = layout({
    title: 'Page not found',
    body: `<h1 id="page-not-found">Page not found</h1>\n<p>There is no documentation page at this address. Try the search box, the navigation, or the <a href="${DOCS_BASE}">documentation home</a>.</p>`,
    nav,
    current: null,
    assets: input.assets,
  });
  return { pages, home, apiReference, notFound, searchIndex, nav };
}
