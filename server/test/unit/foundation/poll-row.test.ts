import { describe, expect, it } from 'vitest';
import { POLL_COLUMNS, pollRowOf } from '../../../src/modules/decisions/decisions.service.js';

describe('pollRowOf', () => {
  it('maps each value to the column at its position in POLL_COLUMNS, and no other key (the stored answer, last, is not a row column)', () => {
    const columns = POLL_COLUMNS.filter((c) => c !== 'answer_json');
    expect(POLL_COLUMNS.at(-1)).toBe('answer_json');
    const row = pollRowOf(POLL_COLUMNS.map((column) => `value of ${column}`)) as unknown as Record<string, unknown>;
    expect(Object.keys(row).sort()).toEqual([...columns].sort());
    for (const column of columns) expect(row[column], column).toBe(`value of ${column}`);
  });
});
