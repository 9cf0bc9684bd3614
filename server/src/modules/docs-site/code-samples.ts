/**
 * Code samples in the markdown docs carry a tag, an HTML comment on the line(s) before their fence
 * (invisible on GitHub and on the site):
 *
 *   <!-- sample: run -->                  executed by server/test/integration/docs-samples.test.ts
 *   <!-- sample: run background -->       a command that keeps running (a webhook receiver): the
 *                                         test starts it, drives it, reads its output, stops it
 *   <!-- sample: file name=x.mjs -->      a program the reader saves as x.mjs; a later run block
 *                                         runs it exactly as the page says (`node x.mjs`)
 *   <!-- sample: output -->               what the run block before it prints; `…` matches anything
 *   <!-- sample: illustrative -->         shown, not executed (a payload shape, pseudo-code, a
 *                                         command that starts the service itself)
 *
 * Languages: sh/bash/shell run with bash, js/mjs with node (ES module), python/py with python3.
 * This scanner is line-based (fences at any indentation, ``` or ~~~), so it sees blocks inside
 * lists too; it is shared by the site renderer and the tests (ADR 0010).
 */
export type SampleKind = 'run' | 'file' | 'output' | 'illustrative';

export interface SampleTag {
  kind: SampleKind;
  /** `name=value` options and bare flags (value `true`). */
  options: Record<string, string | true>;
}

export interface CodeSample {
  /** 1-based line of the opening fence. */
  line: number;
  /** First word of the info string, lower-case ('' when none). */
  lang: string;
  code: string;
  tag: SampleTag | null;
}

const TAG = /^\s*<!--\s*sample:\s*([a-z]+)([^>]*?)\s*-->\s*$/;
const FENCE_OPEN = /^(\s*)(`{3,}|~{3,})\s*([^`\s]*)(.*)$/;

export function parseSampleTag(line: string): SampleTag | null {
  const m = TAG.exec(line);
  if (!m) return null;
  const kind = m[1] as SampleKind;
  if (kind !== 'run' && kind !== 'file' && kind !== 'output' && kind !== 'illustrative') throw new Error(`unknown sample tag "${m[1]}" in: ${line.trim()}`);
  const options: Record<string, string | true> = {};
  for (const word of (m[2] ?? '').trim().split(/\s+/).filter(Boolean)) {
    const eq = word.indexOf('=');
    if (eq > 0) options[word.slice(0, eq)] = word.slice(eq + 1);
    else options[word] = true;
  }
  return { kind, options };
}

export function extractCodeSamples(markdown: string): CodeSample[] {
  const lines = markdown.split('\n');
  const samples: CodeSample[] = [];
  let pendingTag: SampleTag | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const tag = parseSampleTag(line);
    if (tag) {
      pendingTag = tag;
      continue;
    }
    const open = FENCE_OPEN.exec(line);
    if (!open) {
      if (line.trim() !== '') pendingTag = null;
      continue;
    }
    const indent = open[1]!.length;
    const fence = open[2]!;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const l = lines[j]!;
      if (l.trim().startsWith(fence[0]!.repeat(fence.length)) && l.trim().replace(/[`~]/g, '') === '') break;
      body.push(l.slice(Math.min(indent, l.length - l.trimStart().length)));
    }
    samples.push({ line: i + 1, lang: open[3]!.toLowerCase(), code: body.join('\n') + (body.length ? '\n' : ''), tag: pendingTag });
    pendingTag = null;
    i = j;
  }
  return samples;
}

/** The interpreter family of a fence's language, or null when it is not a program (json, text...). */
export function sampleRunner(lang: string): 'bash' | 'node' | 'python' | null {
  if (['sh', 'bash', 'shell', 'console'].includes(lang)) return 'bash';
  if (['js', 'javascript', 'mjs'].includes(lang)) return 'node';
  if (['python', 'py', 'python3'].includes(lang)) return 'python';
  return null;
}

/**
 * Whether `actual` output matches the documented `expected` output: the same lines in the same
 * order, where `…` in an expected line matches any run of characters (possibly empty).
 */
export function outputMatches(expected: string, actual: string): boolean {
  const exp = expected.trimEnd().split('\n');
  const act = actual.trimEnd().split('\n');
  if (exp.length !== act.length) return false;
  return exp.every((line, i) => {
    const pattern = line
      .trimEnd()
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*');
    return new RegExp(`^${pattern}$`, 's').test(act[i]!.trimEnd());
  });
}
