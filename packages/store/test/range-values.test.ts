// Goal: a time-range read in growing batches returns every value once, last key first, and closes its iterator however the reader stops.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { describe, expect, it, onTestFinished } from 'vitest';
import { FIRST_READ_VALUES, READ_VALUES_MAX, rangeBatchesNewestFirst } from '../src/range-values.js';

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

describe('rangeBatchesNewestFirst', () => {
  it('reads across every batch boundary, each value once, in reverse key order', async () => {
    // Past the largest batch: 256 + 512 + … + 8192 + 8192 … crosses each doubling and the cap.
    const count = 2 * READ_VALUES_MAX + FIRST_READ_VALUES * 7 + 3;
    const db = await openDb(count);
    const read: string[] = [];
    const sizes: number[] = [];
    for await (const batch of rangeBatchesNewestFirst(db, { gte: 'k', lt: 'l' })) {
      sizes.push(batch.length);
      read.push(...batch);
    }
    expect(read).toEqual(Array.from({ length: count }, (_, i) => `v${count - 1 - i}`));
    // Each batch is one native read: doubling from the first, capped, the rest in the last.
    const expected: number[] = [];
    for (let left = count, size = FIRST_READ_VALUES; left > 0; size = Math.min(size * 2, READ_VALUES_MAX)) {
      expected.push(Math.min(size, left));
      left -= size;
    }
    expect(sizes).toEqual(expected);
  });

  it('reads the first batch at the size the caller expects', async () => {
    const db = await openDb(1000);
    const sizes: number[] = [];
    for await (const batch of rangeBatchesNewestFirst(db, { gte: 'k', lt: 'l' }, { first: 209 })) sizes.push(batch.length);
    expect(sizes).toEqual([209, 418, 373]);
  });

  it('fills the block cache only when asked (a page read), not for a scan', async () => {
    const db = await openDb(100);
    const asked: Array<boolean | undefined> = [];
    const values = db.values.bind(db);
    db.values = ((options: Parameters<typeof db.values>[0]) => {
      asked.push(options?.fillCache);
      return values(options);
    }) as typeof db.values;
    for await (const batch of rangeBatchesNewestFirst(db, { gte: 'k', lt: 'l' }, { first: 10, fillCache: true })) {
      expect(batch).toHaveLength(10);
      break;
    }
    for await (const batch of rangeBatchesNewestFirst(db, { gte: 'k', lt: 'l' })) expect(batch).toHaveLength(100);
    expect(asked).toEqual([true, false]);
  });

  it('keeps to the range bounds: gte included, lt excluded', async () => {
    const db = await openDb(1000);
    const read: string[] = [];
    for await (const batch of rangeBatchesNewestFirst(db, { gte: 'k000100', lt: 'k000400' })) read.push(...batch);
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
    for await (const batch of rangeBatchesNewestFirst(db, { gte: 'k', lt: 'l' })) {
      expect(batch[0]).toBe(`v${4999 - n}`);
      n += batch.length;
      // Stops after the first read (FIRST_READ_VALUES values), with more in the range.
      break;
    }
    expect(n).toBe(FIRST_READ_VALUES);
    expect(opened).toHaveLength(1);
    await expect((opened[0] as (typeof opened)[number]).next()).rejects.toMatchObject({ code: 'LEVEL_ITERATOR_NOT_OPEN' });
  });
});
