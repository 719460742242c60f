// Goal: a leader answers a pull that asks for a page of its erased ids (PullRequest.erasedAfter)
// with that page and at once, even when it has no entries to send and the pull asks to wait (a
// standby owed them must not get one page per long poll); a new leader's catch-up pull gets the
// page also when its log is ahead of the answering node's (the peer is usually behind); a
// standby's mismatched pull gets none (it cuts its log first); a cursor that cannot be an id
// is not answered with a page. Real LevelDB stores; the leader's real log source.
import { INTEGRITY_ACTIONS, SELF_SOURCE } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { ev, leaderWith, openStore } from './leader-log.js';

async function leaderWithErasure() {
  const leader = await leaderWith(3);
  const erasure = { ...ev('erase-1'), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details: JSON.stringify({ v: 1, fields: ['userId'], records: [{ eventId: 'e2', seq: 2 }] }) };
  await leader.store.append([erasure]);
  return leader;
}

const PAGE = { after: '', ids: [['e2', ['userId']]], done: true };

describe('pages of erased ids in pull answers', () => {
  it('answers a caught-up standby that asks for a page at once, with the page, though the pull may wait', async () => {
    const { store, source, request } = await leaderWithErasure();
    const standby = await openStore();
    await standby.applyReplicated(await store.readEncodedBySeq(0, 100));
    // The leader's clock is manual: a pull that waited would never be answered.
    const answer = await source.pull({ ...request(standby, 's1'), waitMs: 60_000, erasedAfter: '' });
    expect(answer.entries).toEqual([]);
    expect(answer.erasedIds).toEqual(PAGE);
    // Past the last id: an empty last page.
    expect((await source.pull({ ...request(standby, 's1'), erasedAfter: 'e2' })).erasedIds).toEqual({ after: 'e2', ids: [], done: true });
    // Not asked: none.
    expect((await source.pull(request(standby, 's1'))).erasedIds).toBeUndefined();
  });

  it('gives a catch-up asker whose log is ahead the page with the mismatch; a standby\'s mismatched pull none', async () => {
    const { store, source, request } = await leaderWithErasure();
    const ahead = await openStore();
    await ahead.applyReplicated(await store.readEncodedBySeq(0, 100));
    await ahead.append([ev('only-here')]);
    const catchUp = await source.pull({ ...request(ahead, 'new-leader'), catchUp: true, erasedAfter: '' });
    expect(catchUp.mismatch).toBeDefined();
    expect(catchUp.erasedIds).toEqual(PAGE);
    const standbyPull = await source.pull({ ...request(ahead, 's1'), erasedAfter: '' });
    expect(standbyPull.mismatch).toBeDefined();
    expect(standbyPull.erasedIds).toBeUndefined();
  });

  it('answers no page to a cursor that cannot be an id', async () => {
    const { source, request } = await leaderWithErasure();
    const standby = await openStore();
    for (const erasedAfter of [7, 'x'.repeat(5000)]) {
      const answer = await source.pull({ ...request(standby, 's1'), erasedAfter: erasedAfter as string });
      expect(answer.entries.length).toBeGreaterThan(0);
      expect(answer.erasedIds).toBeUndefined();
    }
  });
});
