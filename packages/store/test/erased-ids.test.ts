// Goal: the erased ids are read from LevelDB, found through an in-memory Bloom filter that never
// rules out an erased id however many there are (it grows by adding filters) and rules out
// nearly every other id; a view sees an erasure only once it is committed, and says so by its
// version; a store reopened finds every id an erasure recorded before.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeErasureDetails, INTEGRITY_ACTIONS } from '@auditlake/integrity';
import { encodeEvent, SELF_SOURCE, type AuditEvent } from '@auditlake/model';
import { Level } from 'level';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ErasedIds } from '../src/erased-ids.js';
import { FILTER_CAPACITY_MAX, GrowingBloomFilter } from '../src/growing-bloom-filter.js';
import { AuditStore } from '../src/index.js';

async function db(): Promise<{ db: Level<string, string>; reopen: () => Promise<Level<string, string>> }> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-erased-ids-'));
  const open = async () => {
    const level = new Level<string, string>(join(dir, 'db'), { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await level.open();
    onTestFinished(() => level.close());
    return level;
  };
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return { db: await open(), reopen: open };
}

const event = (eventId: string, query: string) => encodeEvent({ eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query, details: '', timestamp: 1 });

describe('GrowingBloomFilter', () => {
  it('never rules out an id it was given, across growth, and rules out nearly every other', () => {
    const filter = new GrowingBloomFilter();
    // 300,000 ids: the first filter (65,536) and two grown after it.
    const added = Array.from({ length: 300_000 }, (_, i) => `0194${i.toString(16).padStart(8, '0')}-7c00-7c43-9069-c43a8c3b7cf3`);
    for (const id of added) filter.add(id);
    expect(added.every((id) => filter.mayHave(id))).toBe(true);
    const others = Array.from({ length: 100_000 }, (_, i) => `other-${i}`);
    const falsePositives = others.filter((id) => filter.mayHave(id)).length;
    // Under 0.5% per full filter, and a lookup asks each of the three.
    expect(falsePositives / others.length).toBeLessThan(0.015);
    expect(new GrowingBloomFilter().mayHave('anything')).toBe(false);
  });

  it('sized for the ids expected, holds them in one filter of 1.5 bytes an id, with fewer false positives than grown ones', () => {
    const added = Array.from({ length: 300_000 }, (_, i) => `id-${i}`);
    const sized = new GrowingBloomFilter({ expectedIds: added.length });
    for (const id of added) sized.add(id);
    expect(added.every((id) => sized.mayHave(id))).toBe(true);
    expect(sized.bytes).toBe(Math.ceil((300_000 * 12) / 32) * 4);
    const others = Array.from({ length: 100_000 }, (_, i) => `other-${i}`);
    expect(others.filter((id) => sized.mayHave(id)).length / others.length).toBeLessThan(0.006);
    // One more than expected starts a second filter: growth goes on as before.
    sized.add('one-more');
    expect(sized.mayHave('one-more')).toBe(true);
    expect(sized.bytes).toBeGreaterThan(Math.ceil((300_000 * 12) / 32) * 4);
  });

  it('sizes no filter past the 2^32 bits a probe reaches: past its capacity bound it adds filters of that size, not larger ones', () => {
    // A probe is a 32-bit hash modulo the filter's size: a filter of more bits never had the
    // ones past 2^32 set (sized for the ids of two months at 100 events/s, it ruled out ever fewer).
    expect(FILTER_CAPACITY_MAX * 12).toBeLessThanOrEqual(2 ** 32);
    expect(Math.ceil((FILTER_CAPACITY_MAX * 12) / 32) * 32).toBeLessThanOrEqual(2 ** 32);
    const capped = new GrowingBloomFilter({ capacityMax: 100_000 });
    const added = Array.from({ length: 400_000 }, (_, i) => `id-${i}`);
    for (const id of added) capped.add(id);
    expect(added.every((id) => capped.mayHave(id))).toBe(true);
    // 65,536, then 100,000 three times and the rest: never a filter above the bound.
    expect(capped.bytes).toBe([65_536, 100_000, 100_000, 100_000, 100_000].reduce((sum, capacity) => sum + Math.ceil((capacity * 12) / 32) * 4, 0));
    // Sized for more ids than one filter holds, the first is still bounded.
    const big = new GrowingBloomFilter({ expectedIds: 1e12, capacityMax: 100_000 });
    big.add('x');
    expect(big.bytes).toBe(Math.ceil((100_000 * 12) / 32) * 4);
  });

  it('takes at most bytesMax of memory: past it the filter is full and rules nothing out (every id is read), never a false negative', () => {
    const bounded = new GrowingBloomFilter({ bytesMax: 200_000 });
    const added = Array.from({ length: 300_000 }, (_, i) => `id-${i}`);
    for (const id of added) bounded.add(id);
    expect(bounded.bytes).toBeLessThanOrEqual(200_000);
    expect(bounded.full).toBe(true);
    expect(added.every((id) => bounded.mayHave(id))).toBe(true);
    expect(bounded.mayHave('never-added')).toBe(true);
    expect(new GrowingBloomFilter().full).toBe(false);
  });
});

describe('ErasedIds', () => {
  it('sees an erasure once committed (its version moves on), and again after a reopen', async () => {
    const { db: level, reopen } = await db();
    const ids = await ErasedIds.open(level);
    const before = await ids.view(['X', 'Y']);
    expect(before.size).toBe(0);
    const change = ids.begin();
    const batch = level.batch();
    await change.add(batch, 'X', ['query']);
    await batch.write();
    // Written but not committed: not seen yet.
    expect((await ids.view(['X'])).size).toBe(0);
    change.commit();
    expect(ids.version).toBe(before.version + 1);
    const after = await ids.view(['X', 'Y']);
    expect(after.size).toBe(1);
    expect(after.bringsBack(event('X', 'SELECT secret'))).toBe(true);
    expect(after.bringsBack(event('X', '[erased by auditlake]'))).toBe(false);
    expect(after.bringsBack(event('Y', 'SELECT secret'))).toBe(false);
    // A second erasure of the same id adds its fields to those before.
    const more = ids.begin();
    const batch2 = level.batch();
    await more.add(batch2, 'X', ['userId']);
    await batch2.write();
    more.commit();
    expect(await level.get('v!X')).toBe('["query","userId"]');
    await level.close();
    const reopened = await ErasedIds.open(await reopen());
    const view = await reopened.view(['X']);
    const markerCopy = event('X', '[erased by auditlake]');
    // userId erased too: the marker in query alone brings userId's value back.
    expect(view.bringsBack(markerCopy)).toBe(true);
    expect(view.bringsBack({ ...markerCopy, json: markerCopy.json.replace('"userId":"u"', '"userId":"[erased by auditlake]"') })).toBe(false);
  });

  it('an append is not chosen again for erasures of other events committed while it was chosen', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'auditlake-erased-ids-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const store = await AuditStore.open({ location: join(dir, 'store'), sequencer: () => 1 });
    onTestFinished(() => store.close());
    const OLD = Date.UTC(2026, 0, 1);
    const plain = (eventId: string, timestamp: number): AuditEvent => ({ eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: 'SELECT 1', details: '', timestamp });
    await store.append([plain('resent', OLD), plain('unrelated', Date.now())]);
    // Retention deletes `resent`: a re-send of it is looked up in the tier before it is written.
    expect((await store.pruneBefore(OLD + 1, 100, async () => true)).deleted).toBe(1);
    let lookups = 0;
    store.setTieredCopyLookup(async () => {
      lookups++;
      // While the tier is read, an erasure of another event commits.
      const details = encodeErasureDetails({ v: 1, fields: ['query'], records: [{ eventId: 'unrelated', seq: 2 }] });
      if (lookups <= 20) await store.append([{ ...plain(`erase-${lookups}`, Date.now()), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details }]);
      return new Map();
    });
    const result = await store.append([plain('resent', OLD)]);
    expect(result.stored).toHaveLength(1);
    expect(lookups).toBe(1);
  });
});
