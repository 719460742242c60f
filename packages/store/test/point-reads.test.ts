// Goal: a point read split into reads side by side returns exactly what one read returns: every key's value in the keys' order, undefined where absent;
// and the entries at many seqs, read together, are what a read per seq finds.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { describe, expect, it, onTestFinished } from 'vitest';
import { encodeUint, seqKey, timeKey } from '../src/event-keys.js';
import { getManySideBySide, storedAtSeq, storedAtSeqs } from '../src/point-reads.js';

async function openDb(count: number): Promise<Level<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-points-'));
  const db = new Level<string, string>(join(dir, 'db'));
  await db.open();
  onTestFinished(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });
  const batch = db.batch();
  // Every third key is missing.
  for (let i = 0; i < count; i++) if (i % 3 !== 0) batch.put(`k${String(i).padStart(6, '0')}`, `v${i}`);
  await batch.write();
  return db;
}

describe('getManySideBySide', () => {
  it('answers as one getMany does, in the keys order, for sizes around the split', async () => {
    const db = await openDb(400);
    for (const size of [0, 1, 2, 63, 64, 65, 127, 128, 129, 301]) {
      // Descending and shuffled orders: the answer follows the keys, not the key space.
      const descending = Array.from({ length: size }, (_, i) => `k${String(399 - i).padStart(6, '0')}`);
      const shuffled = descending.map((k, i) => descending[(i * 7) % size] ?? k);
      for (const keys of [descending, shuffled]) {
        const answer = await getManySideBySide(db, keys);
        expect(answer, `${size} keys`).toEqual(await db.getMany(keys));
        expect(answer).toHaveLength(size);
      }
    }
  });
});

describe('storedAtSeqs', () => {
  it('finds what storedAtSeq finds at each seq: none where no seq key, or no entry at the time it names', async () => {
    const db = await openDb(0);
    const batch = db.batch();
    // seq 1..30, times out of seq order; 10 has no seq key, 20 a seq key whose entry is gone.
    for (let seq = 1; seq <= 30; seq++) {
      const ts = 1_700_000_000_000 + ((seq * 7919) % 31) * 1000;
      if (seq !== 10) batch.put(seqKey(seq), encodeUint(ts));
      if (seq !== 20) batch.put(timeKey(ts, seq), `{"seq":${seq}}`);
    }
    await batch.write();
    const seqs = [30, 1, 10, 20, 5, 5, 31, 17];
    const found = await storedAtSeqs(db, seqs);
    for (const seq of seqs) expect(found.get(seq), `seq ${seq}`).toEqual(await storedAtSeq(db, seq));
    expect([...found.keys()].sort((a, b) => a - b)).toEqual([1, 5, 17, 30]);
    expect((await storedAtSeqs(db, [])).size).toBe(0);
  });
});
