import { describe, expect, it } from 'vitest';
import { CHECKPOINT_HOLD_WARN_MS, logCheckpoint, type CheckpointResult } from '../../../src/db/wal-checkpointer.js';

function recorder() {
  const lines: Array<{ level: 'warn' | 'debug'; fields: object; message: string }> = [];
  return {
    lines,
    warn: (fields: object, message: string) => void lines.push({ level: 'warn', fields, message }),
    debug: (fields: object, message: string) => void lines.push({ level: 'debug', fields, message }),
  };
}

const pass = (over: Partial<CheckpointResult>): CheckpointResult => ({ frames: 40, copied: 40, walBytes: 0, held: true, truncated: false, checkpointMs: 1.234, heldMs: 2.345, ...over });

describe('logCheckpoint: what a WAL checkpoint tells the operator', () => {
  it('logs a hold at debug, a hold of CHECKPOINT_HOLD_WARN_MS or more as a warning with how long writes waited, and nothing for a pass without a hold', () => {
    const log = recorder();
    logCheckpoint(log, pass({ held: false, heldMs: 0, checkpointMs: 900 }));
    expect(log.lines).toEqual([]);
    logCheckpoint(log, pass({ heldMs: CHECKPOINT_HOLD_WARN_MS - 0.01 }));
    expect(log.lines.map((l) => l.level)).toEqual(['debug']);
    logCheckpoint(log, pass({ heldMs: 1512.3456, checkpointMs: 1500.111, truncated: true, frames: 9000 }));
    expect(log.lines[1]).toEqual({ level: 'warn', fields: { frames: 9000, truncated: true, checkpointMs: 1500.11, heldMs: 1512.35 }, message: 'WAL checkpoint held writes; they waited for it' });
  });
});
