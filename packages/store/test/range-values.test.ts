// Goal: a time-range read in growing batches returns every value once, last key first, and closes its iterator however the reader stops.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { describe, expect, it, onTestFinished } from 'vitest';
import { FIRST_READ_VALUES, READ_VALUES_MAX, rangeValuesNewestFirst } from '../src/range-values.js';

async function openDb(count: number): Promise<Level<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-range-'));
  const db = new Level<string, string>(join(dir, 'db'));
  await db.open();
  onTestFinished(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });
  const batch = db.batch();
  for (let i = 0; i < count; i++) batch.put(`k${String(i).padStart(6, '0')}`, `v${i}`);
  await batch.write();
  return db;
}

describe('rangeValuesNewestFirst', () => {
  it('reads across every batch boundary, each value once, in reverse key order', async () => {
    // Past the largest batch: 256 + 512 + … + 8192 + 8192 … crosses each doubling and the cap.
    const count = 2 * READ_VALUES_MAX + FIRST_READ_VALUES * 7 + 3;
    const db = await openDb(count);
    const read: string[] = [];
    for await (const value of rangeValuesNewestFirst(db, { gte: 'k', lt: 'l' })) read.push(value);
    expect(read).toEqual(Array.from({ length: count }, (_, i) => `v${count - 1 - i}`));
  });

  it('keeps to the range bounds: gte included, lt excluded', async () => {
    const db = await openDb(1000);
    const read: string[] = [];
    for await (const value of rangeValuesNewestFirst(db, { gte: 'k000100', lt: 'k000400' })) read.push(value);
    expect(read[0]).toBe('v399');
    expect(read.at(-1)).toBe('v100');
    expect(read).toHaveLength(300);
  });

  it('closes its iterator when the reader stops early', async () => {
    const db = await openDb(5000);
    const opened: Array<ReturnType<typeof db.values>> = [];
    const values = db.values.bind(db);
    db.values = ((options: Parameters<typeof db.values>[0]) => {
      const iterator = values(options);
      opened.push(iterator);
      return iterator;
    }) as typeof db.values;
    let n = 0;
    for await (const value of rangeValuesNewestFirst(db, { gte: 'k', lt: 'l' })) {
      expect(value).toBe(`v${4999 - n}`);
      if (++n === 300) break;
    }
    expect(opened).toHaveLength(1);
    await expect((opened[0] as (typeof opened)[number]).next()).rejects.toMatchObject({ code: 'LEVEL_ITERATOR_NOT_OPEN' });
  });
});
