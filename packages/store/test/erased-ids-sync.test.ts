// Goal: a log that skips seqs its leader's retention deleted, erasure records among them, takes
// the leader's erased ids page by page: until it has them it owes them (the cursor survives a
// reopen), each page records the ids and erases the copies it still holds, a page that does not
// follow the cursor changes nothing, a later skip starts the pages again, and once done a re-send
// of an erased event with a new time is not stored again. Real LevelDB in temp dirs.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeErasureDetails, ERASED_MARKER, INTEGRITY_ACTIONS } from '@auditlake/integrity';
import { SELF_SOURCE, type AuditEvent } from '@auditlake/model';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AuditStore, eventKeys } from '../src/index.js';

const T0 = 1_700_000_000_000;

async function storeDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-erased-sync-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'store');
}

async function openStore(location?: string): Promise<AuditStore> {
  const store = await AuditStore.open({ location: location ?? (await storeDir()), chain: true });
  onTestFinished(() => store.close());
  return store;
}

function ev(eventId: string, overrides: Partial<AuditEvent> = {}): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t1'], query: 'SELECT 1', details: '', timestamp: T0, ...overrides };
}

function erasure(eventId: string, records: Array<{ eventId: string; seq: number }>, fields: Array<'userId' | 'query'> = ['userId']): AuditEvent {
  return { ...ev(eventId, { userId: 'admin', resource: `events:${records.length}`, tables: [], query: '' }), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details: encodeErasureDetails({ v: 1, fields, records }) };
}

/** The standby pulls everything after its end, with what the leader's answer says it skips. */
async function pull(leader: AuditStore, standby: AuditStore): Promise<void> {
  const after = standby.position.lastSeq;
  const entries = await leader.readEncodedBySeq(after, 10_000);
  await standby.applyReplicated(entries, leader.termStarts(after), await leader.skippedByRetention(after, entries));
}

/** Tiered through `seq`, then deleted by retention: every entry timed at or before `ts`. */
async function tierAndPrune(leader: AuditStore, seq: number, ts: number): Promise<number> {
  await leader.countTieredThrough(seq);
  return (await leader.pruneBefore(ts + 1, 100, async () => true, seq)).deleted;
}

/** A leader whose retention deleted an erasure of `held` (which the standby holds) and of `unheld` (which it never got). */
async function skippedErasure(): Promise<{ leader: AuditStore; standby: AuditStore; standbyAt: string }> {
  const leader = await openStore();
  const standbyAt = await storeDir();
  const standby = await openStore(standbyAt);
  // seq 1..2: both hold them.
  await leader.append([ev('a'), ev('held', { userId: 'held-secret', query: 'SELECT held' })]);
  await pull(leader, standby);
  // seq 3..5 while the standby is away: a new event, the erasure of both, one later event.
  await leader.append([ev('unheld', { userId: 'unheld-secret' })]);
  await leader.append([
    erasure('erase-1', [
      { eventId: 'held', seq: 2 },
      { eventId: 'unheld', seq: 3 },
    ]),
  ]);
  await leader.append([ev('later', { timestamp: T0 + 100_000 })]);
  expect(await tierAndPrune(leader, 4, T0)).toBe(4);
  return { leader, standby, standbyAt };
}

describe('a log that skipped erasure records takes its leader\'s erased ids', () => {
  it('owes them from the skip on, and one page records every id, erases its held copy and refuses the re-send', async () => {
    const { leader, standby } = await skippedErasure();
    expect(standby.erasedIdsOwed?.after).toBeUndefined();
    await pull(leader, standby);
    expect(standby.position.lastSeq).toBe(5);
    expect(await standby.getBySeq(4)).toBeUndefined();
    // Skipped the erasure record: the ids are owed, through the highest seq skipped; the copy
    // held from before still has its values.
    expect(standby.erasedIdsOwed).toEqual({ after: '', throughSeq: 4 });
    const before = await standby.getByEventId('held');
    expect(before?.userId).toBe('held-secret');

    const page = await leader.erasedIdsPage('');
    // Each id with its fields, and each record that named it with the fields it erased.
    expect(page).toEqual({ after: '', ids: [['held', ['userId'], [[4, ['userId']]]], ['unheld', ['userId'], [[4, ['userId']]]]], done: true });
    expect(await standby.applyErasedIdsPage(page)).toBe(true);
    expect(standby.erasedIdsOwed?.after).toBeUndefined();
    // The held copy is erased as the record erased it on the leader: the field only, its hash kept.
    const held = await standby.getByEventId('held');
    expect(held).toMatchObject({ seq: 2, userId: ERASED_MARKER, query: 'SELECT held', erased: { userId: expect.any(String) as unknown } });
    expect(held?.chainHash).toBe(before?.chainHash);
    // Neither id is stored again with its values at a new time; nor found by its old user.
    expect((await standby.append([ev('unheld', { userId: 'unheld-secret', timestamp: T0 + 200_000 })])).stored).toEqual([]);
    expect((await standby.append([ev('held', { userId: 'held-secret', timestamp: T0 + 200_000 })])).stored).toEqual([]);
    const found: string[] = [];
    for await (const event of standby.search({ user: 'held-secret', action: 'all' })) found.push(event.eventId);
    expect(found).toEqual([]);
    // The same page again (an answer applied twice): not the cursor's, nothing changes.
    expect(await standby.applyErasedIdsPage(page)).toBe(false);
  });

  it('goes page by page, keeps the cursor across a reopen, ignores a page off the cursor, and starts again after a later skip', async () => {
    const leader = await openStore();
    const standbyAt = await storeDir();
    let standby = await openStore(standbyAt);
    await leader.append([ev('first')]);
    await pull(leader, standby);
    const ids = ['e1', 'e2', 'e3', 'e4', 'e5'];
    await leader.append(ids.map((id) => ev(id, { userId: `${id}-secret` })));
    await leader.append([erasure('erase-1', ids.map((id, i) => ({ eventId: id, seq: i + 2 })))]);
    await leader.append([ev('later', { timestamp: T0 + 100_000 })]);
    await tierAndPrune(leader, 7, T0);
    await pull(leader, standby);
    expect(standby.erasedIdsOwed).toEqual({ after: '', throughSeq: 7 });

    const first = await leader.erasedIdsPage('', 2);
    expect(first).toEqual({ after: '', ids: [['e1', ['userId'], [[7, ['userId']]]], ['e2', ['userId'], [[7, ['userId']]]]], done: false });
    expect(await standby.applyErasedIdsPage(first)).toBe(true);
    expect(standby.erasedIdsOwed?.after).toBe('e2');
    // A page that does not follow the cursor (an old answer, a malformed one): nothing applied.
    expect(await standby.applyErasedIdsPage(await leader.erasedIdsPage('e3', 2))).toBe(false);
    expect(await standby.applyErasedIdsPage({ after: 'e2', ids: [['e3', 'userId']], done: true })).toBe(false);
    expect(standby.erasedIdsOwed?.after).toBe('e2');

    // A crash between pages: the cursor is where the last page left it.
    await standby.close();
    standby = await openStore(standbyAt);
    expect(standby.erasedIdsOwed).toEqual({ after: 'e2', throughSeq: 7 });
    expect(await standby.applyErasedIdsPage(await leader.erasedIdsPage('e2', 2))).toBe(true);
    expect(standby.erasedIdsOwed?.after).toBe('e4');

    // Another skip meanwhile (the leader deleted more, another erasure among it): from the first again.
    await leader.append([ev('x1', { userId: 'x1-secret', timestamp: T0 + 100_000 })]);
    await leader.append([erasure('erase-2', [{ eventId: 'x1', seq: 9 }])]);
    await leader.append([ev('latest', { timestamp: T0 + 300_000 })]);
    await tierAndPrune(leader, 10, T0 + 100_000);
    await pull(leader, standby);
    expect(standby.erasedIdsOwed).toEqual({ after: '', throughSeq: 10 });
    expect(await standby.applyErasedIdsPage(await leader.erasedIdsPage('e4', 2))).toBe(false);
    for (let after = standby.erasedIdsOwed?.after; after !== undefined; after = standby.erasedIdsOwed?.after) {
      expect(await standby.applyErasedIdsPage(await leader.erasedIdsPage(after, 2))).toBe(true);
    }
    for (const id of [...ids, 'x1']) {
      expect((await standby.append([ev(id, { userId: `${id}-secret`, timestamp: T0 + 400_000 })])).stored, id).toEqual([]);
    }
  });

  it('leaves a held copy stored after the erasure, holding the marker as its value, as the leader holds it', async () => {
    const leader = await openStore();
    await leader.append([ev('a'), ev('held', { userId: 'secret' })]);
    await leader.append([erasure('erase-1', [{ eventId: 'held', seq: 2 }])]);
    expect(await tierAndPrune(leader, 3, T0)).toBe(3);
    // A re-send holding the marker brings nothing back: stored again, at seq 4, as sent.
    expect((await leader.append([ev('held', { userId: ERASED_MARKER, timestamp: T0 + 100_000 })])).stored.map((s) => s.seq)).toEqual([4]);
    const standby = await openStore();
    await pull(leader, standby);
    expect(standby.erasedIdsOwed?.after).toBe('');
    expect(await standby.applyErasedIdsPage(await leader.erasedIdsPage(''))).toBe(true);
    // Rewritten, it would be an erased copy that no erasure record names (verify: altered).
    expect(await standby.getBySeq(4)).toEqual(await leader.getBySeq(4));
    expect((await standby.getBySeq(4))?.erased).toBeUndefined();
    expect((await standby.append([ev('held', { userId: 'secret', timestamp: T0 + 200_000 })])).stored).toEqual([]);
  });

  it('never erases one of auditlake\'s own records a page names (no erasure may name one)', async () => {
    const { leader, standby } = await skippedErasure();
    await pull(leader, standby);
    // seq 1 is held on the standby; a forged page names it as if it were a settings record's id.
    await leader.append([{ ...ev('settings-change', { userId: 'admin', timestamp: T0 + 100_000 }), source: SELF_SOURCE, action: 'audit:UpdateSettings' }]);
    await pull(leader, standby);
    const before = await standby.getByEventId('settings-change');
    expect(before?.userId).toBe('admin');
    expect(await standby.applyErasedIdsPage({ after: '', ids: [['settings-change', ['userId']]], done: true })).toBe(true);
    expect(await standby.getByEventId('settings-change')).toEqual(before);
  });

  it('keeps field names it does not know, and an id sent with none as every field: a re-send is refused either way', async () => {
    const { leader, standby } = await skippedErasure();
    await pull(leader, standby);
    // What a newer leader may send: a field this version cannot erase, or no names at all.
    expect(await standby.applyErasedIdsPage({ after: '', ids: [['future', ['fieldOfANewerVersion']], ['unnamed', []]], done: true })).toBe(true);
    expect(standby.erasedIdsOwed).toBeUndefined();
    expect(await standby.erasedIdsPage('')).toEqual({ after: '', ids: [['future', ['fieldOfANewerVersion']], ['unnamed', ['details', 'query', 'resource', 'tables', 'userId']]], done: true });
    for (const id of ['future', 'unnamed']) expect((await standby.append([ev(id, { timestamp: T0 + 500_000 })])).stored, id).toEqual([]);
  });

  it('owes them through the end of a cut that removes the highest skipped seq, and keeps the cursor', async () => {
    const { leader, standby } = await skippedErasure();
    await pull(leader, standby);
    expect(standby.erasedIdsOwed).toEqual({ after: '', throughSeq: 4 });
    // A log cut from seq 3 on (the standby diverged from a new leader there): seqs 3.. are no
    // longer this log's, so only a node holding seq 2 in this log's term can give the ids.
    await standby.divertSuffixToOutbox(3);
    expect(standby.position.lastSeq).toBe(2);
    expect(standby.erasedIdsOwed).toEqual({ after: '', throughSeq: 2 });
  });

  it('applies no page given for a lower seq than is owed now (asked before a later skip)', async () => {
    const { leader, standby } = await skippedErasure();
    await pull(leader, standby);
    const stale = { ...(await leader.erasedIdsPage('')), throughSeq: 3 };
    expect(await standby.applyErasedIdsPage(stale)).toBe(false);
    expect(standby.erasedIdsOwed).toEqual({ after: '', throughSeq: 4 });
    expect(await standby.applyErasedIdsPage({ ...stale, throughSeq: 4 })).toBe(true);
  });

  it('leaves a copy after the skipped seqs with its values: stored after the erasure (by a leader that owed the ids), no record names it', async () => {
    const { leader, standby } = await skippedErasure();
    await pull(leader, standby);
    // The standby leads owing the ids and stores a re-send with its values at seq 6.
    expect((await standby.append([ev('unheld', { userId: 'unheld-secret', timestamp: T0 + 200_000 })])).stored.map((s) => s.seq)).toEqual([6]);
    const copy = await standby.getBySeq(6);
    expect(await standby.applyErasedIdsPage(await leader.erasedIdsPage(''))).toBe(true);
    // Erasing it here alone would leave it erased without a record on this node and not on the others.
    expect(await standby.getBySeq(6)).toEqual(copy);
    // The copy held from before the skip (seq 2) is erased as before.
    expect((await standby.getBySeq(2))?.userId).toBe(ERASED_MARKER);
  });

  it('leaves a copy between two skipped ranges that came after the record naming the id (the page says which record)', async () => {
    // L: a(1), x(2), its erasure(3), later(4); retention deletes 1..3.
    const l = await openStore();
    await l.append([ev('a'), ev('x', { userId: 'x-secret' })]);
    await l.append([erasure('erase-1', [{ eventId: 'x', seq: 2 }])]);
    await l.append([ev('later', { timestamp: T0 + 100_000 })]);
    expect(await tierAndPrune(l, 3, T0)).toBe(3);
    // B catches up across it, owes the ids, and (leading, owing) stores a re-send of x at seq 5.
    const b = await openStore();
    await pull(l, b);
    expect((await b.append([ev('x', { userId: 'x-secret', timestamp: T0 + 200_000 })])).stored.map((s) => s.seq)).toEqual([5]);
    // S takes B's log (skipping 1..3), then B takes the ids from L: its copy at 5 keeps its values.
    const s2 = await openStore();
    await pull(b, s2);
    expect(await b.applyErasedIdsPage({ ...(await l.erasedIdsPage('')), throughSeq: 3 })).toBe(true);
    expect((await b.getBySeq(5))?.userId).toBe('x-secret');
    // B orders 6..8 and its retention deletes 6..7: S skips them, owing the ids through 7.
    await b.append([ev('y', { timestamp: T0 + 1 }), ev('z', { timestamp: T0 + 1 })]);
    await b.append([ev('w', { timestamp: T0 + 300_000 })]);
    expect(await tierAndPrune(b, 7, T0 + 1)).toBe(2);
    expect(await s2.applyErasedIdsPage({ ...(await b.erasedIdsPage('')), throughSeq: 3 })).toBe(true);
    await pull(b, s2);
    expect(s2.erasedIdsOwed).toEqual({ after: '', throughSeq: 7 });
    const page = await b.erasedIdsPage('');
    expect(page.ids).toEqual([['x', ['userId'], [[3, ['userId']]]]]);
    expect(await s2.applyErasedIdsPage({ ...page, throughSeq: 7 })).toBe(true);
    // Seq 5 is below 7 but after the record at 3: left as B holds it.
    expect(await s2.getBySeq(5)).toEqual(await b.getBySeq(5));
  });

  it('erases on a held copy only what a record after it erased: a second erasure of other fields leaves the first one\'s on a later copy', async () => {
    const l = await openStore();
    await l.append([ev('a'), ev('x', { userId: 'x-secret', resource: 'x-resource' })]);
    await l.append([erasure('erase-1', [{ eventId: 'x', seq: 2 }])]);
    await l.append([ev('later', { timestamp: T0 + 100_000 })]);
    expect(await tierAndPrune(l, 3, T0)).toBe(3);
    // B (owing) stores x again at 5, takes the ids, then an admin erases x's resource there (record at 6).
    const b = await openStore();
    await pull(l, b);
    expect((await b.append([ev('x', { userId: 'x-secret', resource: 'x-resource', timestamp: T0 + 200_000 })])).stored.map((s) => s.seq)).toEqual([5]);
    expect(await b.applyErasedIdsPage({ ...(await l.erasedIdsPage('')), throughSeq: 3 })).toBe(true);
    await b.append([{ ...erasure('erase-2', [{ eventId: 'x', seq: 5 }]), details: encodeErasureDetails({ v: 1, fields: ['resource'], records: [{ eventId: 'x', seq: 5 }] }), timestamp: T0 + 200_001 }]);
    expect(await b.getBySeq(5)).toMatchObject({ userId: 'x-secret', resource: ERASED_MARKER });
    // A new node takes B's log (skipping 1..3) and B's ids: x@5 as B holds it.
    const s2 = await openStore();
    await pull(b, s2);
    const page = await b.erasedIdsPage('');
    expect(page.ids).toEqual([['x', ['resource', 'userId'], [[3, ['userId']], [6, ['resource']]]]]);
    expect(await s2.applyErasedIdsPage({ ...page, throughSeq: 3 })).toBe(true);
    expect(await s2.getBySeq(5)).toEqual(await b.getBySeq(5));
  });

  it('owes the ids again for a skip below what it took them through, once another history holds that seq', async () => {
    // L1 (term 0) holds a@1; X and Y hold it too. L1 orders 2..3 and deletes them.
    const l1 = await openStore();
    const x = await openStore();
    const y = await openStore();
    await l1.append([ev('a')]);
    await pull(l1, x);
    await pull(l1, y);
    await l1.append([ev('b'), ev('c')]);
    expect(await tierAndPrune(l1, 3, T0)).toBe(3);
    // X is told L1 deleted its tail, and takes L1's ids through 3.
    expect(await x.owedForTail(3, l1.termAt(3))).toBe(true);
    expect(await x.applyErasedIdsPage({ ...(await l1.erasedIdsPage('')), throughSeq: 3 })).toBe(true);
    expect(x.erasedIdsCompleteThrough).toBe(3);
    // Y leads in term 2 and orders its own 2..4, an erasure at 3 among them; it deletes 2..3.
    const term2 = { sequencer: () => 2 };
    await y.append([ev('secret', { userId: 'secret-user' })], term2);
    await y.append([erasure('erase-y', [{ eventId: 'secret', seq: 2 }])], term2);
    await y.append([ev('w', { timestamp: T0 + 100_000 })], term2);
    expect(await tierAndPrune(y, 3, T0)).toBe(3);
    // X skips Y's 2..3: not the history it took ids for, so it owes Y's.
    await pull(y, x);
    expect(x.erasedIdsOwed).toEqual({ after: '', throughSeq: 3 });
    expect(await x.applyErasedIdsPage({ ...(await y.erasedIdsPage('')), throughSeq: 3 })).toBe(true);
    expect((await x.append([ev('secret', { userId: 'secret-user', timestamp: T0 + 500_000 })])).stored).toEqual([]);
  });

  it('erases a field an earlier version recorded without its record too, on a copy before the skipped seqs', async () => {
    const leaderAt = await storeDir();
    let leader = await openStore(leaderAt);
    const standby = await openStore();
    await leader.append([ev('a'), ev('x', { userId: 'x-secret', query: 'x-query' })]);
    await pull(leader, standby);
    await leader.append([erasure('erase-1', [{ eventId: 'x', seq: 2 }])]);
    // As an earlier version kept it: the fields alone, no record.
    await leader.close();
    const { Level } = await import('level');
    const raw = new Level<string, string>(leaderAt);
    await raw.put(eventKeys.erasedIdKey('x'), JSON.stringify(['userId']));
    await raw.close();
    leader = await openStore(leaderAt);
    await leader.append([erasure('erase-2', [{ eventId: 'x', seq: 2 }], ['query'])]);
    await leader.append([ev('later', { timestamp: T0 + 100_000 })]);
    expect(await tierAndPrune(leader, 4, T0)).toBe(4);
    await pull(leader, standby);
    const page = await leader.erasedIdsPage('');
    expect(page.ids).toEqual([['x', ['query', 'userId'], [[4, ['query']]]]]);
    expect(await standby.applyErasedIdsPage({ ...page, throughSeq: 4 })).toBe(true);
    // userId has no known record: erased on the copy before the skipped seqs all the same.
    expect(await standby.getBySeq(2)).toMatchObject({ userId: ERASED_MARKER, query: ERASED_MARKER });
  });

  it('keeps one record per id erased again and again for the same field', async () => {
    const store = await openStore();
    await store.append([ev('x', { userId: 'x-secret' })]);
    for (let i = 0; i < 20; i++) await store.append([erasure(`erase-${i}`, [{ eventId: 'x', seq: 1 }])]);
    await store.append([erasure('erase-q', [{ eventId: 'x', seq: 1 }], ['query'])]);
    // The newest userId erasure (seq 21) covers every copy the older ones named.
    expect((await store.erasedIdsPage('')).ids).toEqual([['x', ['query', 'userId'], [[21, ['userId']], [22, ['query']]]]]);
  });

  it('is not told again of a tail at or below one it took the ids through in the same term, nor lowers what it took', async () => {
    const leader = await openStore();
    const standby = await openStore();
    await leader.append([ev('a')]);
    await pull(leader, standby);
    await leader.append([ev('b'), ev('c')]);
    expect(await tierAndPrune(leader, 3, T0)).toBe(3);
    expect(await standby.owedForTail(3, leader.termAt(3))).toBe(true);
    expect(await standby.applyErasedIdsPage({ ...(await leader.erasedIdsPage('')), throughSeq: 3 })).toBe(true);
    // A peer behind, in the same term, says its tail ends at 2: nothing more is owed.
    expect(await standby.owedForTail(2, leader.termAt(2))).toBe(false);
    expect(standby.erasedIdsCompleteThrough).toBe(3);
    // Another term there (another leader's history): owed again.
    expect(await standby.owedForTail(2, leader.termAt(2) + 1)).toBe(true);
  });

  it('owes through a lower tail it is told of after a higher one: only a node holding the owed seq can give the ids', async () => {
    // A holds 1..6 (an erasure of x at 3); B got 1..4. Both delete everything through their ends.
    const a = await openStore();
    const b = await openStore();
    const s2 = await openStore();
    await a.append([ev('a1')]);
    await pull(a, s2);
    await a.append([ev('x', { userId: 'x-secret' })]);
    await a.append([erasure('erase-1', [{ eventId: 'x', seq: 2 }])]);
    await a.append([ev('a4'), ev('a5'), ev('a6')]);
    const forB = await a.readEncodedBySeq(0, 4);
    await b.applyReplicated(forB, a.termStarts(0));
    expect(b.position.lastSeq).toBe(4);
    expect(await tierAndPrune(a, 6, T0)).toBe(6);
    expect(await tierAndPrune(b, 4, T0)).toBe(4);
    // S hears A's tail (6); A dies; S follows B and hears its tail (4): owed through 4 now.
    expect(await s2.owedForTail(6, a.termAt(6))).toBe(true);
    expect(await s2.owedForTail(4, b.termAt(4))).toBe(true);
    expect(s2.erasedIdsOwed).toEqual({ after: '', throughSeq: 4, throughTerm: b.termAt(4) });
    expect(await s2.applyErasedIdsPage({ ...(await b.erasedIdsPage('')), throughSeq: 4 })).toBe(true);
    expect((await s2.append([ev('x', { userId: 'x-secret', timestamp: T0 + 500_000 })])).stored).toEqual([]);
  });

  it('owes the ids through the log\'s end when what it keeps of them is not understood (a damaged value)', async () => {
    const leader = await openStore();
    const at = await storeDir();
    let standby = await openStore(at);
    await leader.append([ev('a'), ev('b')]);
    await pull(leader, standby);
    await standby.putLocal('erasedIdsSyncAfter', 'not json');
    await standby.close();
    standby = await openStore(at);
    expect(standby.erasedIdsOwed).toEqual({ after: '', throughSeq: 2 });
  });

  it('owes them through a sender\'s deleted tail it was told of, and owes nothing for a later skip through what it took', async () => {
    const leader = await openStore();
    const standby = await openStore();
    await leader.append([ev('a')]);
    await pull(leader, standby);
    await leader.append([ev('gone', { userId: 'gone-secret' })]);
    await leader.append([erasure('erase-1', [{ eventId: 'gone', seq: 2 }])]);
    expect(await tierAndPrune(leader, 3, T0)).toBe(3);
    // The leader's log is empty past the standby's end: no entry will skip the range here.
    expect(await leader.readEncodedBySeq(1, 10)).toEqual([]);
    expect(await standby.owedForTail(3, leader.termAt(3))).toBe(true);
    expect(standby.erasedIdsOwed).toEqual({ after: '', throughSeq: 3, throughTerm: leader.termAt(3) });
    // Told again (the next empty answer): nothing changes.
    expect(await standby.owedForTail(3, leader.termAt(3))).toBe(false);
    expect(await standby.applyErasedIdsPage({ ...(await leader.erasedIdsPage('')), throughSeq: 3 })).toBe(true);
    expect(standby.erasedIdsOwed).toBeUndefined();
    expect(standby.erasedIdsCompleteThrough).toBe(3);
    expect((await standby.append([ev('gone', { userId: 'gone-secret', timestamp: T0 + 500_000 })])).stored).toEqual([]);
    // Nor told of it again, nor owed when the next entry skips that same range.
    expect(await standby.owedForTail(3, leader.termAt(3))).toBe(false);
    await leader.append([ev('later', { timestamp: T0 + 100_000 })]);
    await pull(leader, standby);
    expect(standby.position.lastSeq).toBe(4);
    expect(standby.erasedIdsOwed).toBeUndefined();
    // A cut below it drops what was taken, so a skip above the cut owes them again.
    await standby.divertSuffixToOutbox(2);
    expect(standby.erasedIdsCompleteThrough).toBe(0);
  });

  it('owes nothing when the entries skip no seq, and a leader without erasures answers one empty last page', async () => {
    const leader = await openStore();
    const standby = await openStore();
    await leader.append([ev('a'), ev('b')]);
    await pull(leader, standby);
    expect(standby.erasedIdsOwed?.after).toBeUndefined();
    expect(await leader.erasedIdsPage('')).toEqual({ after: '', ids: [], done: true });
  });
});
