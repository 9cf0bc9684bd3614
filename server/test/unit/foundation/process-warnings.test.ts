/**
 * Process warnings become JSON log lines (lib/logger.ts `logProcessWarnings`), Node's plain-text
 * printer taken off: a retired compiled credit policy (ADR 0020) is announced with
 * `process.emitWarning`, and a log pipeline reads one JSON object per line.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger, logProcessWarnings } from '../../../src/lib/logger.js';

function captured() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger('info', stream) };
}

/** Warnings are emitted on the next tick. */
const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('process warnings as log lines', () => {
  let restore: (() => void) | null = null;
  afterEach(() => {
    restore?.();
    restore = null;
  });

  it('logs each warning at warn with its name and code, and Node prints nothing of its own', async () => {
    const before = process.listeners('warning');
    expect(before.length).toBeGreaterThan(0); // Node's printer (and the test runner's, if any)
    const { lines, logger } = captured();
    restore = logProcessWarnings(logger);
    expect(process.listeners('warning')).toHaveLength(1);
    expect(before.every((l) => !process.listeners('warning').includes(l))).toBe(true);

    process.emitWarning('credit policy bnpl-policy-v1: the compiled graph answered differently; ZEN evaluates it from now on', { code: 'CDS_POLICY_COMPILED_RETIRED' });
    await nextTick();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 40,
      msg: 'credit policy bnpl-policy-v1: the compiled graph answered differently; ZEN evaluates it from now on',
      warning: { name: 'Warning', code: 'CDS_POLICY_COMPILED_RETIRED' },
    });

    restore();
    restore = null;
    expect(process.listeners('warning')).toEqual(before);
  });
});
