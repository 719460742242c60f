// Goal: on the leader, an erasure record forwarded from a log that diverged (it names that log's
// seqs) is re-applied by eventId: it erases the event where this log holds it, never the
// unrelated event now at the named seq; a retried forward repeats it as a duplicate; one naming
// a record retention deleted here after the tier took it still names it (the tier's copy is
// erased, and its id recorded as erased); one naming nothing anywhere is dropped. Real LevelDB
// in a temp dir.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeErasureDetails, ERASED_MARKER, INTEGRITY_ACTIONS } from '@auditlake/integrity';
import { encodeEvent, SELF_SOURCE, type AuditEvent } from '@auditlake/model';
import { describe, expect, it, onTestFinished } from 'vitest';
import { appendForwarded, AuditStore } from '../src/index.js';

async function openStore(): Promise<AuditStore> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-forwarded-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const store = await AuditStore.open({ location: join(dir, 'store'), chain: true });
  onTestFinished(() => store.close());
  return store;
}

function ev(eventId: string, overrides: Partial<AuditEvent> = {}): AuditEvent {
  return { eventId, userId: 'x', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t1'], query: 'SELECT 1', details: '', timestamp: 1_700_000_000_000, ...overrides };
}

function erasure(eventId: string, records: Array<{ eventId: string; seq: number }>): AuditEvent {
  return { ...ev(eventId, { userId: 'admin', resource: `events:${records.length}`, tables: [], query: '' }), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details: encodeErasureDetails({ v: 1, fields: ['userId'], records }) };
}

describe('appendForwarded', () => {
  it('re-aims a forwarded erasure at the eventId where this log holds it, and a retry is a duplicate', async () => {
    const store = await openStore();
    await store.append([ev('x1'), ev('x2'), ev('x3')]);
    // The cut log held E at seq 2 and its erasure at 3; here seq 2 is x2.
    const forward = [encodeEvent(ev('div-E', { userId: 'victim' })), encodeEvent(erasure('erase-1', [{ eventId: 'div-E', seq: 2 }]))];
    const result = await appendForwarded(store, forward, {});
    expect(result).toMatchObject({ duplicates: 0, conflicts: [] });
    expect(result.stored.map((s) => [s.eventId, s.seq])).toEqual([['div-E', 4], ['erase-1', 5]]);
    expect(await store.getByEventId('div-E')).toMatchObject({ seq: 4, userId: ERASED_MARKER, erased: { userId: expect.any(String) as unknown } });
    expect((await store.getBySeq(2))?.userId).toBe('x');
    expect(JSON.parse((await store.getBySeq(5))!.details)).toEqual({ v: 1, fields: ['userId'], records: [{ eventId: 'div-E', seq: 4 }] });
    // The same batch again (the forward's answer was lost): nothing new.
    expect(await appendForwarded(store, forward, {})).toEqual({ stored: [], duplicates: 2, conflicts: [] });
  });

  it('keeps a record only the tier holds now (retention deleted it here after tiering): the erasure names it, and its values are refused from then on', async () => {
    const store = await openStore();
    await store.append([ev('old', { userId: 'secret-user' }), ev('x2', { timestamp: 1_700_000_100_000 })]);
    // Tiered through seq 1, then deleted here by retention.
    await store.countTieredThrough(1);
    expect((await store.pruneBefore(1_700_000_000_001, 100, async () => true, 1)).deleted).toBe(1);
    const result = await appendForwarded(store, [encodeEvent(erasure('erase-3', [{ eventId: 'old', seq: 1 }, { eventId: 'gone', seq: 7 }]))], {});
    expect(result.stored.map((s) => s.eventId)).toEqual(['erase-3']);
    // seq 7 was never this log's (nor the tier's): not named.
    expect(JSON.parse((await store.getByEventId('erase-3'))!.details)).toEqual({ v: 1, fields: ['userId'], records: [{ eventId: 'old', seq: 1 }] });
    // A re-send of it without ts (a new time) is not stored again.
    expect((await store.append([ev('old', { userId: 'secret-user', timestamp: 1_700_000_200_000 })])).stored).toEqual([]);
  });

  it('keeps a record of a gap this log skipped while catching up (its leader had deleted it), before any tiering was counted here', async () => {
    const leader = await openStore();
    await leader.append([ev('a'), ev('old', { userId: 'secret-user' }), ev('c', { timestamp: 1_700_000_100_000 })]);
    const standby = await openStore();
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 1), []);
    // The leader tiers and deletes seq 2; the standby catches up across the hole.
    await leader.countTieredThrough(2);
    expect((await leader.pruneBefore(1_700_000_000_001, 100, async () => true, 2)).deleted).toBe(2);
    const rest = await leader.readEncodedBySeq(1, 10);
    await standby.applyReplicated(rest, [], await leader.skippedByRetention(1, rest));
    expect(await standby.getBySeq(2)).toBeUndefined();
    const result = await appendForwarded(standby, [encodeEvent(erasure('erase-4', [{ eventId: 'old', seq: 2 }]))], {});
    expect(result.stored.map((s) => s.eventId)).toEqual(['erase-4']);
    expect((await standby.append([ev('old', { userId: 'secret-user', timestamp: 1_700_000_200_000 })])).stored).toEqual([]);
  });

  it('a leader without the record chain applies a forwarded erasure too: its copy is erased and the id refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'auditlake-forwarded-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const store = await AuditStore.open({ location: join(dir, 'store'), chain: false });
    onTestFinished(() => store.close());
    await store.append([ev('x1', { userId: 'secret-user' })]);
    const result = await appendForwarded(store, [encodeEvent(erasure('erase-5', [{ eventId: 'x1', seq: 1 }]))], {});
    expect(result.stored.map((s) => s.eventId)).toEqual(['erase-5']);
    expect((await store.getByEventId('x1'))?.userId).toBe(ERASED_MARKER);
    expect((await store.readBySeq(0, 10)).filter((e) => JSON.stringify(e).includes('secret-user'))).toEqual([]);
  });

  it('drops a forwarded erasure that names nothing this log holds', async () => {
    const store = await openStore();
    await store.append([ev('x1')]);
    const result = await appendForwarded(store, [encodeEvent(erasure('erase-2', [{ eventId: 'gone', seq: 1 }]))], {});
    expect(result).toEqual({ stored: [], duplicates: 0, conflicts: [] });
    expect((await store.getBySeq(1))?.userId).toBe('x');
  });

  it('stores as it is the record of a refused erase request (decision DENY, its details the refusal\'s words), forwarded from another node: no erasure to re-apply, no record dropped', async () => {
    const store = await openStore();
    await store.append([ev('x1')]);
    const refusal: AuditEvent = { ...ev('deny-1', { userId: 'ingest', resource: 'POST /admin/audit/erase', decision: 'DENY', tables: [], query: '' }), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details: 'HTTP 403: role ingest may not audit:EraseFields' };
    const result = await appendForwarded(store, [encodeEvent(refusal)], {});
    expect(result.stored.map((s) => [s.eventId, s.seq])).toEqual([['deny-1', 2]]);
    expect(await store.getBySeq(2)).toMatchObject({ eventId: 'deny-1', decision: 'DENY', details: refusal.details });
    expect((await store.getBySeq(1))?.userId).toBe('x');
  });
});
