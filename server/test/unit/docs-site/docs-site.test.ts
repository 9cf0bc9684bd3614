/**
 * The documentation site's renderer on the real docs/ folder and on made-up folders: every page
 * renders, every link between pages lands on a page and an anchor that exist, a new markdown file
 * appears in the navigation by itself, the errors page is the registry, the adverse-action page is
 * the registry, and the code samples of the pages we promise are tested are all tagged.
 */
import { describe, expect, it } from 'vitest';
import { ERROR_REGISTRY } from '../../../src/http/errors/error-registry.js';
import { ADVERSE_ACTION_REASONS } from '../../../src/modules/engine/adverse-action-reasons.js';
import { extractCodeSamples, outputMatches, parseSampleTag, sampleRunner } from '../../../src/modules/docs-site/code-samples.js';
import { DEFAULT_SECTION } from '../../../src/modules/docs-site/docs-manifest.js';
import { createSlugger, renderDocsSite, resolveDocLink, withRegistryErrorTable, type DocsFile } from '../../../src/modules/docs-site/docs-renderer.js';
import { DOCS_DIR, readDocsFiles } from '../../../src/modules/docs-site/docs-site.routes.js';

const ASSETS = { css: '/docs/assets/docs.css', js: '/docs/assets/docs.js', searchIndex: '/docs/assets/i.json', swaggerCss: '/s.css', swaggerJs: '/s.js', apiReferenceJs: '/a.js' };
const render = (files: DocsFile[], registry: Record<string, { status: number; message: string }> = ERROR_REGISTRY) =>
  renderDocsSite({ files, errorRegistry: registry, assets: ASSETS, openApiUrl: '/v1/openapi.json' });

/** Pages whose every code block must be tagged (run, file, output or illustrative). */
const FULLY_TESTED_PAGES = ['quickstart.md', 'webhooks.md', 'deployment.md'];

describe('docs site on the real docs/ folder', () => {
  const files = readDocsFiles(DOCS_DIR);
  const site = render(files);

  it('has a page for every markdown file, titled by its first heading', () => {
    expect(files.length).toBeGreaterThan(15);
    for (const f of files) {
      const page = site.pages.get(f.path.replace(/\.md$/, ''));
      expect(page, f.path).toBeDefined();
      expect(page!.title).toBe(/^# (.+)$/m.exec(f.markdown)![1]!.replace(/`/g, ''));
      expect(page!.html.match(/<h1[ >]/g)?.length, `${f.path}: exactly one h1`).toBe(1);
    }
    for (const required of ['quickstart', 'sandbox', 'decisions', 'apr', 'adverse-action-codes', 'verification', 'webhooks', 'errors', 'idempotency', 'rate-limits', 'versioning']) {
      expect(site.pages.has(required), required).toBe(true);
    }
  });

  it('every link between pages points at a page and an anchor that exist', () => {
    const idsOf = (html: string) => new Set([...html.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]!));
    const targets = new Map<string, Set<string>>([...site.pages].map(([slug, p]) => [`/docs/${slug}`, idsOf(p.html)]));
    targets.set('/docs', idsOf(site.home));
    targets.set('/docs/api', idsOf(site.apiReference));
    const broken: string[] = [];
    let checked = 0;
    for (const [slug, page] of site.pages) {
      const body = page.html.slice(page.html.indexOf('<article'), page.html.indexOf('</article>'));
      for (const m of body.matchAll(/<a href="([^"]+)"/g)) {
        const href = m[1]!.replace(/&amp;/g, '&');
        if (!href.startsWith('/docs') && !href.startsWith('#')) continue;
        const [target, anchor] = href.startsWith('#') ? [`/docs/${slug}`, href.slice(1)] : href.split('#');
        checked++;
        const ids = targets.get(target!);
        if (!ids) broken.push(`${slug}: ${href} (no such page)`);
        else if (anchor && !ids.has(decodeURIComponent(anchor))) broken.push(`${slug}: ${href} (no such anchor)`);
      }
    }
    expect(broken).toEqual([]);
    expect(checked).toBeGreaterThan(30);
  });

  it('places every page in the navigation: manifest order, the rest in the default section, ADRs last', () => {
    const titles = site.nav.map((s) => s.title);
    expect(titles[0]).toBe('Get started');
    expect(titles.at(-1)).toBe('Architecture decisions');
    expect(site.nav[0]!.items.map((i) => i.slug).slice(0, 2)).toEqual(['quickstart', 'sandbox']);
    const navSlugs = site.nav.flatMap((s) => s.items.map((i) => i.slug));
    expect(new Set(navSlugs).size).toBe(navSlugs.length);
    for (const slug of site.pages.keys()) expect(navSlugs, slug).toContain(slug);
    expect(site.nav.at(-1)!.items.every((i) => i.slug.startsWith('adr/'))).toBe(true);
  });

  it('renders the errors page from the error registry, keeping the explanations of docs/errors.md', () => {
    const html = site.pages.get('errors')!.html;
    for (const [code, entry] of Object.entries(ERROR_REGISTRY)) {
      const row = new RegExp(`<tr><td>${entry.status}</td><td><code>${code}</code></td><td>([^<]*)</td><td>([\\s\\S]*?)</td>`).exec(html);
      expect(row, code).not.toBeNull();
      expect(row![1]).toBe(entry.message.replace(/'/g, '&#39;'));
      expect(row![2]!.length, `${code} keeps its "When" explanation`).toBeGreaterThan(10);
    }
  });

  it('docs/adverse-action-codes.md lists exactly the registry, in order, with the exact wording', () => {
    const text = files.find((f) => f.path === 'adverse-action-codes.md')!.markdown;
    const documented = [...text.matchAll(/^\|\s*`(AA-\d+)`\s*\|\s*([^|]+?)\s*\|/gm)].map((m) => ({ code: m[1], reason: m[2] }));
    expect(documented).toEqual(ADVERSE_ACTION_REASONS.map((r) => ({ code: r.code, reason: r.reason })));
  });

  it('every code block of the quickstart and webhooks pages is tagged, and tagged consistently', () => {
    for (const name of FULLY_TESTED_PAGES) {
      const samples = extractCodeSamples(files.find((f) => f.path === name)!.markdown);
      const untagged = samples.filter((s) => s.tag === null).map((s) => `${name}:${s.line}`);
      expect(untagged, 'tag each block <!-- sample: run | file name=… | output | illustrative --> (ADR 0010)').toEqual([]);
      samples.forEach((s, i) => {
        const where = `${name}:${s.line}`;
        if (s.tag!.kind === 'run') expect(sampleRunner(s.lang), `${where}: a run block must be sh, js or python`).not.toBeNull();
        if (s.tag!.kind === 'output') expect(samples[i - 1]?.tag?.kind, `${where}: output follows a run block`).toBe('run');
        if (s.tag!.kind === 'file') {
          const fileName = s.tag!.options.name;
          expect(typeof fileName, `${where}: file needs name=`).toBe('string');
          expect(samples.slice(i + 1).some((later) => later.tag?.kind === 'run' && later.code.includes(String(fileName))), `${where}: a later run block runs ${String(fileName)}`).toBe(true);
        }
      });
      expect(samples.some((s) => s.tag!.kind === 'run')).toBe(true);
    }
  });

  it('on every page, every sh, js or python block is tagged: run, file, or explicitly illustrative', () => {
    const untagged = files.flatMap((f) =>
      extractCodeSamples(f.markdown)
        .filter((s) => sampleRunner(s.lang) !== null && s.tag === null)
        .map((s) => `docs/${f.path}:${s.line}`),
    );
    expect(untagged, 'tag each block (ADR 0010)').toEqual([]);
  });

  it('marks tested samples and hides the tags', () => {
    const html = site.pages.get('quickstart')!.html;
    expect(html).toContain('data-sample="run"');
    expect(html).toContain('class="code-badge"');
    expect(html).not.toContain('<!-- sample:');
    expect(html).toContain('<button type="button" class="copy-button">Copy</button>');
  });

  it('indexes every section of every page for the search box', () => {
    const webhooks = site.searchIndex.filter((e) => e.u.startsWith('/docs/webhooks'));
    expect(webhooks.map((e) => e.h)).toContain('Rotating the signing secret');
    const rotation = webhooks.find((e) => e.h === 'Rotating the signing secret')!;
    expect(rotation.u).toBe('/docs/webhooks#rotating-the-signing-secret');
    expect(rotation.t).toMatch(/overlap/);
    expect(site.searchIndex.some((e) => e.u === '/docs/api')).toBe(true);
  });
});

describe('docs site on made-up folders', () => {
  it('a new markdown file appears in the navigation by itself, titled by its first heading', () => {
    const site = render([
      { path: 'quickstart.md', markdown: '# Quickstart\n\nHello. See [the new page](zz-new-thing.md#details).\n' },
      { path: 'zz-new-thing.md', markdown: '# A brand new `thing`\n\nFirst paragraph.\n\n## Details\n\nText.\n' },
      { path: 'aa-another.md', markdown: 'No heading here.\n' },
      { path: 'adr/0099-something.md', markdown: '# ADR 0099: Something decided\n' },
    ]);
    const fallback = site.nav.find((s) => s.title === DEFAULT_SECTION)!;
    expect(fallback.items.map((i) => [i.slug, i.title])).toEqual([
      ['zz-new-thing', 'A brand new thing'],
      ['aa-another', 'aa-another'],
    ].sort((a, b) => a[1]!.localeCompare(b[1]!)));
    expect(site.pages.get('quickstart')!.html).toContain('<a href="/docs/zz-new-thing#details">the new page</a>');
    expect(site.pages.get('zz-new-thing')!.html).toContain('<h2 id="details">Details');
    expect(site.nav.at(-1)).toMatchObject({ title: 'Architecture decisions', items: [{ slug: 'adr/0099-something', title: '0099 · Something decided' }] });
    expect(site.pages.get('zz-new-thing')!.summary).toBe('First paragraph.');
  });

  it('regenerates the errors table from the registry: a code missing from the markdown still appears', () => {
    const markdown = '# Errors\n\n| Status | error | When | Retry? |\n|---|---|---|---|\n| 400 | `invalid_request` | Bad input. | No. |\n\nAfter.\n';
    const out = withRegistryErrorTable(markdown, { invalid_request: { status: 400, message: 'Bad.' }, teapot: { status: 418, message: 'I am a teapot.' } });
    expect(out).toContain('| 400 | `invalid_request` | Bad. | Bad input. | No. |');
    expect(out).toContain('| 418 | `teapot` | I am a teapot. |  |  |');
    expect(out).toContain('\n\nAfter.');
  });

  it('rewrites links between markdown files and drops links the site cannot serve', () => {
    const pages = new Set(['webhooks', 'errors', 'adr/0005-webhook-delivery']);
    expect(resolveDocLink('webhooks.md#signing', 'errors.md', pages)).toBe('/docs/webhooks#signing');
    expect(resolveDocLink('adr/0005-webhook-delivery.md', 'webhooks.md', pages)).toBe('/docs/adr/0005-webhook-delivery');
    expect(resolveDocLink('../webhooks.md', 'adr/0005-webhook-delivery.md', pages)).toBe('/docs/webhooks');
    expect(resolveDocLink('../README.md', 'webhooks.md', pages)).toBeNull();
    expect(resolveDocLink('missing.md', 'webhooks.md', pages)).toBeNull();
    expect(resolveDocLink('openapi.json', 'errors.md', pages)).toBe('/v1/openapi.json');
    expect(resolveDocLink('https://example.com/x.md', 'errors.md', pages)).toBe('https://example.com/x.md');
    expect(resolveDocLink('#local', 'errors.md', pages)).toBe('#local');
  });

  it('makes GitHub-style heading anchors', () => {
    const slug = createSlugger();
    expect(slug('Event types and their `data`'.replace(/`/g, ''))).toBe('event-types-and-their-data');
    expect(slug('Reset consumer state: what it does')).toBe('reset-consumer-state-what-it-does');
    expect(slug('2. Get a sandbox key')).toBe('2-get-a-sandbox-key');
    expect(slug('Details')).toBe('details');
    expect(slug('Details')).toBe('details-1');
  });
});

describe('code sample tags', () => {
  it('parses tags and finds fenced blocks, also inside lists', () => {
    expect(parseSampleTag('<!-- sample: file name=x.mjs -->')).toEqual({ kind: 'file', options: { name: 'x.mjs' } });
    expect(parseSampleTag('<!-- sample: run background -->')).toEqual({ kind: 'run', options: { background: true } });
    expect(parseSampleTag('<!-- just a comment -->')).toBeNull();
    expect(() => parseSampleTag('<!-- sample: runn -->')).toThrow(/unknown sample tag/);
    const samples = extractCodeSamples('<!-- sample: run -->\n```sh\necho hi\n```\n\n- item\n\n  ```json\n  {"a": 1}\n  ```\ntext\n<!-- sample: illustrative -->\n\n~~~\nx\n~~~\n');
    expect(samples).toEqual([
      { line: 2, lang: 'sh', code: 'echo hi\n', tag: { kind: 'run', options: {} } },
      { line: 8, lang: 'json', code: '{"a": 1}\n', tag: null },
      { line: 14, lang: '', code: 'x\n', tag: { kind: 'illustrative', options: {} } },
    ]);
  });

  it('matches documented output line by line, … standing for anything', () => {
    expect(outputMatches('svc_test_…', 'svc_test_abc123\n')).toBe(true);
    expect(outputMatches('approved … APR 0.00%', 'approved 149.97 APR 0.00%')).toBe(true);
    expect(outputMatches('approved … APR 0.00%', 'declined 149.97 APR 0.00%')).toBe(false);
    expect(outputMatches('a\nb', 'a\nb\nc')).toBe(false);
    expect(outputMatches('{"x":"…"}', '{"x":"y(1)"}')).toBe(true);
  });
});
