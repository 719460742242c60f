// Goal: a point read split into reads side by side returns exactly what one read returns: every key's value in the keys' order, undefined where absent.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { describe, expect, it, onTestFinished } from 'vitest';
import { getManySideBySide } from '../src/point-reads.js';

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
