// Goal: a standby behind a slow link still catches up. Its pulls asked for 2,000 entries; with
// large entries the answer took longer than the pull's timeout every time, so it never caught up
// (review: a 300 KB/s link, 1 KB events). A failed pull now halves what the next asks for and an
// answered one doubles it back, so answers shrink until they arrive in time; the leader does not
// take such a standby for one that refuses what it is sent.
import { describe, expect, it } from 'vitest';
import type { PeerTransport } from '../src/protocol.js';
import { electorOf, leaderWith, openStore, startFollower } from './leader-log.js';

/** What the link carries in one pull's time: the answer's entries, in bytes. */
const LINK_BYTES_PER_PULL = 8_000;

describe('a standby behind a link too slow for a full answer', () => {
  it('asks for fewer entries after each pull that timed out, and catches up', async () => {
    const query = `SELECT * FROM hive.sales.orders WHERE note = '${'x'.repeat(900)}'`;
    const { store: leaderStore, source, clock, state, elector: leaderElector, tracker, warnings } = await leaderWith(60, query);
    const standby = await openStore();
    const elector = electorOf(state, clock, 's1', standby);
    const asked: number[] = [];
    // The leader's real log source behind a link that delivers LINK_BYTES_PER_PULL before the
    // pull times out: a bigger answer never arrives.
    const transport: PeerTransport = {
      pull: async (url, request, timeoutMs) => {
        asked.push(request.limit);
        const answer = await source.pull(request);
        const bytes = answer.entries.reduce((sum, entry) => sum + entry.byteLength, 0);
        if (bytes > LINK_BYTES_PER_PULL) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
        return answer;
      },
      forward: async () => {
        throw new Error('not used');
      },
    };
    await startFollower({ store: standby, elector, leaderElector, transport, clock, nodeId: 's1' });
    // Virtual time moves 50 ms per step; each step also lets the pulls' LevelDB reads and writes run.
    for (let i = 0; i < 3000 && standby.position.lastSeq < leaderStore.position.lastSeq; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      clock.advance(50);
      // The lease lasts 1,000 ms: the leader renews it, the standby keeps hearing it.
      if (i % 3 === 0) {
        await leaderElector.tick();
        await elector.tick();
      }
    }
    expect(standby.position.lastSeq).toBe(leaderStore.position.lastSeq);
    // It started at the full answer, and came down to one the link carries.
    expect(asked[0]).toBe(2000);
    expect(Math.min(...asked)).toBeLessThanOrEqual(8);
    // Only slowed down, never named as a standby that does not apply what it is sent.
    expect(warnings).toEqual([]);
    expect(tracker.notApplying()).toEqual([]);
  });
});
