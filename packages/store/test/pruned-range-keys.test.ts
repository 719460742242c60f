// Goal: the ranges retention deleted are kept one key per range, and a batch writes only the
// ranges it changed (one value rewritten whole by every prune batch was 1.1 MB a batch at the
// bound of 10,000 ranges); a store an earlier version wrote, with every range in one value, has
// them moved to their own keys when opened, and reads the same ranges.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { describe, expect, it, onTestFinished } from 'vitest';
import { localKey } from '../src/event-keys.js';
import { prunedRangeOps, readPrunedRanges } from '../src/pruned-range-keys.js';
import { PRUNED_RANGES_MAX, PrunedRanges, type PrunedRange } from '../src/pruned-ranges.js';

async function openDb(): Promise<Level<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-pruned-keys-'));
  const db = new Level<string, string>(dir);
  await db.open();
  onTestFinished(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });
  return db;
}

describe('pruned range keys', () => {
  it('writes only the ranges a change made, deleted or moved, and reads back what was written', async () => {
    const db = await openDb();
    const before = new PrunedRanges([]);
    for (let i = 0; i < 100; i++) before.add(i * 10 + 1, `h${i}`);
    await db.batch(prunedRangeOps([], before.all), { sync: true });
    expect(await readPrunedRanges(db)).toEqual(before.all);
    // One range grown (joined with its neighbour), one new: three writes, not a hundred.
    const after = new PrunedRanges(before.all);
    for (let seq = 2; seq <= 11; seq++) after.add(seq, seq === 11 ? 'h1' : undefined);
    after.add(2_000, 'late');
    const ops = prunedRangeOps(before.all, after.all);
    expect(ops.map((op) => `${op.type} ${op.key.slice(-6)}`)).toEqual(['put 000001', 'del 000011', 'put 002000']);
    await db.batch(ops, { sync: true });
    expect(await readPrunedRanges(db)).toEqual(after.all);
    expect(prunedRangeOps(after.all, after.all)).toEqual([]);
  });

  it('at the bound, a prune of one more seq writes a key or two, not every range', () => {
    const full = new PrunedRanges([]);
    for (let i = 0; i < PRUNED_RANGES_MAX - 1; i++) full.add(i * 3 + 1, undefined);
    const next = new PrunedRanges(full.all);
    next.add(2, undefined);
    expect(prunedRangeOps(full.all, next.all).length).toBeLessThanOrEqual(2);
  });

  it("moves an earlier version's single value to one key per range when read, and reads the same ranges", async () => {
    const db = await openDb();
    const legacy: PrunedRange[] = [
      { fromSeq: 40, toSeq: 55 },
      { fromSeq: 1, toSeq: 30, chainHash: 'c30' },
    ];
    await db.put(localKey('prunedRanges'), JSON.stringify(legacy));
    expect(await readPrunedRanges(db)).toEqual([legacy[1], legacy[0]]);
    expect(await db.get(localKey('prunedRanges'))).toBeUndefined();
    expect(await readPrunedRanges(db)).toEqual([legacy[1], legacy[0]]);
  });
});
