// Goal: retention never leaves an erased copy without the erasure record that names it. It
// deletes by event time, so an erased event timed after its erasure record (a client clock
// ahead) outlived the record, and `verify` of the log reported the copy altered ("erased without
// an erasure record") until retention reached the copy's own time (review, on a single node).
// The record now stays while a copy it names stays, and goes with the copy. Real LevelDB in a
// temp dir; the real ChainVerifier over the log as retention leaves it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChainVerifier, encodeErasureDetails, ERASED_MARKER, INTEGRITY_ACTIONS, type VerifyReport } from '@auditlake/integrity';
import { SELF_SOURCE, type AuditEvent } from '@auditlake/model';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AuditStore } from '../src/index.js';

const T0 = 1_700_000_000_000;
const HOUR = 3_600_000;

async function openStore(): Promise<AuditStore> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-erasure-retention-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const store = await AuditStore.open({ location: join(dir, 'store'), chain: true });
  onTestFinished(() => store.close());
  return store;
}

function ev(eventId: string, timestamp: number, overrides: Partial<AuditEvent> = {}): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t1'], query: 'SELECT 1', details: '', timestamp, ...overrides };
}

function erasure(eventId: string, timestamp: number, records: Array<{ eventId: string; seq: number }>): AuditEvent {
  return { ...ev(eventId, timestamp, { userId: 'admin', resource: `events:${records.length}`, tables: [], query: '' }), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details: encodeErasureDetails({ v: 1, fields: ['userId'], records }) };
}

async function verify(store: AuditStore): Promise<VerifyReport> {
  const verifier = new ChainVerifier({ startSeq: 1, pruned: store.prunedRanges, head: { seq: store.chainHead.seq, chainHash: store.chainHead.chainHash, where: 'the head' } });
  for (const event of await store.readBySeq(0, 1_000_000)) verifier.add(event);
  return verifier.finish();
}

async function prune(store: AuditStore, cutoffMs: number): Promise<number> {
  await store.countTieredThrough(store.position.lastSeq);
  return (await store.pruneBefore(cutoffMs, 100, async () => true)).deleted;
}

describe('retention and erasure records', () => {
  it('keeps an erasure record while a copy it names, timed after it, is still held; deletes it with the copy', async () => {
    const store = await openStore();
    // seq 1: an old event; seq 2: one timed an hour ahead (its client's clock); seq 3: their erasure, timed now.
    await store.append([ev('old', T0, { userId: 'old-user' }), ev('ahead', T0 + HOUR, { userId: 'ahead-user' })]);
    await store.append([erasure('erase-1', T0 + 1, [{ eventId: 'old', seq: 1 }, { eventId: 'ahead', seq: 2 }])]);
    await store.append([ev('latest', T0 + 2 * HOUR)]);
    expect((await store.getBySeq(2))?.userId).toBe(ERASED_MARKER);

    // Past the record's time, before the copy's: the old copy goes, the record stays with the other.
    expect(await prune(store, T0 + 2)).toBe(1);
    expect((await store.readBySeq(0, 10)).map((e) => e.seq)).toEqual([2, 3, 4]);
    const held = await verify(store);
    expect(held.ok, held.message).toBe(true);

    // Past the copy's time: both go, in the same run.
    expect(await prune(store, T0 + HOUR + 1)).toBe(2);
    expect((await store.readBySeq(0, 10)).map((e) => e.seq)).toEqual([4]);
    const after = await verify(store);
    expect(after.ok, after.message).toBe(true);
  });

  for (const at of [999, 1000, 1500]) {
    it(`finds a held copy wherever among the names it is (read 1,000 names at a time): name ${at} of 1,501`, async () => {
      const store = await openStore();
      // seq 1..1500: old events; seq 1501: one timed an hour ahead; seq 1502: the erasure naming all.
      await store.append(Array.from({ length: 1500 }, (_, i) => ev(`old-${i}`, T0)));
      await store.append([ev('ahead', T0 + HOUR)]);
      const names = Array.from({ length: 1500 }, (_, i) => ({ eventId: `old-${i}`, seq: i + 1 }));
      names.splice(at, 0, { eventId: 'ahead', seq: 1501 });
      await store.append([erasure('erase-1', T0 + 1, names)]);
      await store.append([ev('latest', T0 + 2 * HOUR)]);
      // The old copies go; the record stays with the copy it still names.
      expect(await prune(store, T0 + 2)).toBe(1500);
      expect((await store.readBySeq(0, 2000)).map((e) => e.seq)).toEqual([1501, 1502, 1503]);
      const report = await verify(store);
      expect(report.ok, report.message).toBe(true);
    });
  }

  it('deletes an erasure record whose named copies are all gone, or that names only a later seq or another event there', async () => {
    const store = await openStore();
    await store.append([ev('a', T0), ev('b', T0 + HOUR)]);
    // Names (a, 1), which it deletes with it, and (x, 2): seq 2 holds b, not x.
    await store.append([erasure('erase-1', T0 + 1, [{ eventId: 'a', seq: 1 }, { eventId: 'x', seq: 2 }])]);
    expect(await prune(store, T0 + 2)).toBe(2);
    expect((await store.readBySeq(0, 10)).map((e) => e.seq)).toEqual([2]);
    const report = await verify(store);
    expect(report.ok, report.message).toBe(true);
  });
});
