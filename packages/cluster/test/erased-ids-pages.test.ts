// Goal: a node answers a pull that asks for a page of its erased ids (PullRequest.erasedAfter)
// with that page and at once, even when it has no entries to send and the pull asks to wait (a
// standby owed them must not get one page per long poll); a new leader's catch-up pull gets the
// page also when its log is ahead of the answering node's; a standby's mismatched pull gets
// none (it cuts its log first). Only a complete set is given: no page from a node whose log
// does not hold the asker's highest skipped seq in the same term, nor from one that owes
// erased ids itself; nor for a cursor that cannot be an id. Real LevelDB stores; real log sources.
import { INTEGRITY_ACTIONS, SELF_SOURCE } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';
import { describe, expect, it } from 'vitest';
import { LogSource } from '../src/log-source.js';
import { MetaHash } from '../src/meta-hash.js';
import { ReplicationTracker } from '../src/replication-tracker.js';
import { ev, leaderWith, openStore } from './leader-log.js';

async function leaderWithErasure() {
  const leader = await leaderWith(3);
  const erasure = { ...ev('erase-1'), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details: JSON.stringify({ v: 1, fields: ['userId'], records: [{ eventId: 'e2', seq: 2 }] }) };
  await leader.store.append([erasure]);
  return leader;
}

const PAGE = { after: '', ids: [['e2', ['userId'], [[4, ['userId']]]]], done: true };
/** The page as given for an asker that skipped through `throughSeq`. */
const pageFor = (throughSeq: number, page: object = PAGE) => ({ ...page, throughSeq });

/** What an asker that skipped up to `seq` of `store`'s log sends. */
function owing(store: AuditStore, seq: number, after = '') {
  return { erasedAfter: after, erasedThrough: { seq, term: store.termAt(seq) } };
}

describe('pages of erased ids in pull answers', () => {
  it('answers a caught-up standby that asks for a page at once, with the page, though the pull may wait', async () => {
    const { store, source, request } = await leaderWithErasure();
    const standby = await openStore();
    await standby.applyReplicated(await store.readEncodedBySeq(0, 100));
    // The leader's clock is manual: a pull that waited would never be answered.
    const answer = await source.pull({ ...request(standby, 's1'), waitMs: 60_000, ...owing(store, 3) });
    expect(answer.entries).toEqual([]);
    expect(answer.erasedIds).toEqual(pageFor(3));
    // Past the last id: an empty last page.
    expect((await source.pull({ ...request(standby, 's1'), ...owing(store, 3, 'e2') })).erasedIds).toEqual(pageFor(3, { after: 'e2', ids: [], done: true }));
    // Not asked: none.
    expect((await source.pull(request(standby, 's1'))).erasedIds).toBeUndefined();
  });

  it('gives a catch-up asker whose log is ahead the page with the mismatch; a standby\'s mismatched pull none', async () => {
    const { store, source, request } = await leaderWithErasure();
    const ahead = await openStore();
    await ahead.applyReplicated(await store.readEncodedBySeq(0, 100));
    await ahead.append([ev('only-here')]);
    const catchUp = await source.pull({ ...request(ahead, 'new-leader'), catchUp: true, ...owing(store, 4) });
    expect(catchUp.mismatch).toBeDefined();
    expect(catchUp.erasedIds).toEqual(pageFor(4));
    // The asker skipped past the end of this log: records there may name ids this node never saw.
    const beyond = await source.pull({ ...request(ahead, 'new-leader'), catchUp: true, erasedAfter: '', erasedThrough: { seq: 5, term: ahead.termAt(5) } });
    expect(beyond.mismatch).toBeDefined();
    expect(beyond.erasedIds).toBeUndefined();
    const standbyPull = await source.pull({ ...request(ahead, 's1'), ...owing(store, 4) });
    expect(standbyPull.mismatch).toBeDefined();
    expect(standbyPull.erasedIds).toBeUndefined();
  });

  it('says, in an answer without entries, through which seq its retention deleted everything after the asker\'s end', async () => {
    const { store, source, request } = await leaderWithErasure();
    const standby = await openStore();
    await standby.applyReplicated(await store.readEncodedBySeq(0, 1));
    await store.countTieredThrough(4);
    expect((await store.pruneBefore(1_700_000_000_001, 100, async () => true, 4)).deleted).toBe(4);
    const answer = await source.pull(request(standby, 's1'));
    expect(answer.entries).toEqual([]);
    expect(answer.tailDeleted).toEqual({ throughSeq: 4, term: store.termAt(4) });
    // An asker at the end: nothing deleted after it.
    const caughtUp = await source.pull({ ...request(standby, 's1'), after: 4, lastTerm: store.termAt(4) });
    expect(caughtUp.tailDeleted).toBeUndefined();
  });

  it('answers no page to a cursor that cannot be an id, nor where its entry at the skipped seq has another term', async () => {
    const { store, source, request } = await leaderWithErasure();
    const standby = await openStore();
    const term = store.termAt(3);
    for (const asked of [{ erasedAfter: 7 as unknown as string, erasedThrough: { seq: 3, term } }, { erasedAfter: 'x'.repeat(5000), erasedThrough: { seq: 3, term } }, { erasedAfter: '' }, { erasedAfter: '', erasedThrough: { seq: 3, term: term + 1 } }]) {
      const answer = await source.pull({ ...request(standby, 's1'), ...asked });
      expect(answer.entries.length).toBeGreaterThan(0);
      expect(answer.erasedIds).toBeUndefined();
    }
  });

  it('gives no page while it owes erased ids itself (its set lacks some), and one once it took them', async () => {
    const { store: leader, source: leaderSource, request, clock, elector } = await leaderWithErasure();
    await leader.append([ev('later')]);
    await leader.countTieredThrough(4);
    expect((await leader.pruneBefore(1_700_000_000_001, 100, async () => true, 4)).deleted).toBe(4);
    // A peer that skipped the erasure record: it owes the ids.
    const peer = await openStore();
    const entries = await leader.readEncodedBySeq(0, 100);
    await peer.applyReplicated(entries, leader.termStarts(0), await leader.skippedByRetention(0, entries));
    expect(peer.erasedIdsOwed).toEqual({ after: '', throughSeq: 4 });
    const peerSource = new LogSource({ store: peer, elector, tracker: new ReplicationTracker(clock), metaHash: new MetaHash(peer), nodeId: 'peer', clock, onMismatch: () => undefined });
    const asker = await openStore();
    await asker.applyReplicated(entries, leader.termStarts(0), await leader.skippedByRetention(0, entries));
    const ask = { ...request(asker, 'new-leader'), catchUp: true, ...owing(asker, 4) };
    expect((await peerSource.pull(ask)).erasedIds).toBeUndefined();
    // The peer takes them from the leader (which holds them all); then it can give them.
    expect(await peer.applyErasedIdsPage((await leaderSource.pull({ ...request(peer, 'peer'), ...owing(peer, 4) })).erasedIds)).toBe(true);
    expect(peer.erasedIdsOwed).toBeUndefined();
    expect((await peerSource.pull(ask)).erasedIds).toEqual(pageFor(4));
  });

  it('gives no page where its entry at the skipped seq has the same term but another chain hash (a term number handed out twice)', async () => {
    const { store: leader, clock, elector, request } = await leaderWithErasure();
    await leader.append([ev('later')]);
    await leader.countTieredThrough(4);
    await leader.pruneBefore(1_700_000_000_001, 100, async () => true, 4);
    const asker = await openStore();
    const entries = await leader.readEncodedBySeq(0, 100);
    await asker.applyReplicated(entries, leader.termStarts(0), await leader.skippedByRetention(0, entries));
    const chainHash = (await asker.knownChainHashAt(4)) as string;
    expect(chainHash).toMatch(/^[0-9a-f]{64}$/);
    // Another log under the same term numbers, other entries: it never held the erasure.
    const other = await openStore();
    await other.append([ev('x1'), ev('x2'), ev('x3'), ev('x4'), ev('x5')]);
    expect(other.termAt(4)).toBe(asker.termAt(4));
    const otherSource = new LogSource({ store: other, elector, tracker: new ReplicationTracker(clock), metaHash: new MetaHash(other), nodeId: 'other', clock, onMismatch: () => undefined });
    const ask = { ...request(asker, 'new-leader'), catchUp: true, erasedAfter: '', erasedThrough: { seq: 4, term: asker.termAt(4), chainHash } };
    expect((await otherSource.pull(ask)).erasedIds).toBeUndefined();
    // The same log (the leader) gives it.
    const leaderSource = new LogSource({ store: leader, elector, tracker: new ReplicationTracker(clock), metaHash: new MetaHash(leader), nodeId: 'leader2', clock, onMismatch: () => undefined });
    expect((await leaderSource.pull(ask)).erasedIds).toEqual(pageFor(4));
  });
});
