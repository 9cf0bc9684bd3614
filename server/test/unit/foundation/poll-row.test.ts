import { describe, expect, it } from 'vitest';
import { POLL_COLUMNS, pollRowOf } from '../../../src/modules/decisions/decisions.service.js';

describe('pollRowOf', () => {
  it('maps each value to the column at its position in POLL_COLUMNS, and no other key', () => {
    const row = pollRowOf(POLL_COLUMNS.map((column) => `value of ${column}`));
    expect(Object.keys(row).sort()).toEqual([...POLL_COLUMNS].sort());
    for (const column of POLL_COLUMNS) expect(row[column], column).toBe(`value of ${column}`);
  });
});
