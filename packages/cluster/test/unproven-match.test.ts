// Goal: a standby's pull counts as progress (ack=replicated, the tiering bound) only when its
// log end is proven to be this leader's: the same term there, and the same chain hash where the
// standby sent one — also where this leader's retention deleted that entry but kept the hash at
// the end of the deleted range. Where this leader knows no hash there, the match is by term
// alone: entries still go out, but not marked proven, and not counted (review: with a term
// number handed out twice, a standby holding other entries under that term was counted, and a
// former leader confirmed events no other node held). Real LevelDB stores with the record chain.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditStore } from '@auditlake/store';
import { describe, expect, it, onTestFinished } from 'vitest';
import { InMemoryCoordinatorState } from '../src/index.js';
import { LogSource } from '../src/log-source.js';
import { MetaHash } from '../src/meta-hash.js';
import type { PeerTransport, PullRequest, PullResponse } from '../src/protocol.js';
import { ReplicationFollower } from '../src/replication-follower.js';
import { ReplicationTracker } from '../src/replication-tracker.js';
import { electorOf, ev, startFollower } from './leader-log.js';
import { ManualClock } from './manual-clock.js';

const OLD = 1_700_000_000_000;

async function chainStore(): Promise<AuditStore> {
  const dir = await mkdtemp(join(tmpdir(), 'cluster-unproven-'));
  const store = await AuditStore.open({ location: dir, chain: true });
  onTestFinished(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return store;
}

/**
 * A leader whose retention deleted seqs 1–4 (the hash at 4 kept, none at 1–3), holding 5; and
 * its log source. `allDeleted`: 5 is old too, and deleted with the rest (the hash at 5 kept).
 */
async function leaderPastRetention(allDeleted = false) {
  const clock = new ManualClock();
  const state = new InMemoryCoordinatorState({ clock, newToken: () => 't' });
  const store = await chainStore();
  const elector = electorOf(state, clock, 'leader', store);
  for (let i = 0; i < 10 && !elector.isLeader(); i++) {
    await elector.tick();
    clock.advance(150);
  }
  expect(elector.isLeader()).toBe(true);
  const term = elector.leadingTerm as number;
  await store.append([1, 2, 3, 4].map((i) => ev(`old-${i}`)), { sequencer: () => term });
  await store.append([{ ...ev('new'), timestamp: allDeleted ? OLD : OLD + 60_000 }], { sequencer: () => term });
  const deleting = allDeleted ? 5 : 4;
  await store.countTieredThrough(deleting);
  expect((await store.pruneBefore(OLD + 1, 100, async () => true, deleting)).deleted).toBe(deleting);
  const tracker = new ReplicationTracker(clock);
  const source = new LogSource({ store, elector, tracker, metaHash: new MetaHash(store), nodeId: 'leader', clock, onMismatch: () => undefined });
  return { store, source, tracker, term, state, clock, elector };
}

/** What a standby whose log is `standby` asks. */
async function pullOf(standby: AuditStore, term: number): Promise<PullRequest> {
  const after = standby.position.lastSeq;
  const lastChainHash = await standby.chainHashAt(after);
  return { nodeId: 's1', after, lastTerm: standby.termAt(after), ...(lastChainHash !== undefined ? { lastChainHash } : {}), term, limit: 10, waitMs: 0, metaHash: '', catchUp: false };
}

/** A log holding `count` entries of its own under `term` (what a second holder of a term number ordered). */
async function otherHistory(count: number, term: number): Promise<AuditStore> {
  const other = await chainStore();
  await other.append(Array.from({ length: count }, (_, i) => ev(`other-${i + 1}`)), { sequencer: () => term });
  return other;
}

describe('matching a standby whose end this leader deleted', () => {
  it('refuses another history at the end of a deleted range, by the hash kept there', async () => {
    const { source, tracker, term } = await leaderPastRetention();
    const answer = await source.pull(await pullOf(await otherHistory(4, term), term));
    expect(answer.mismatch).toBeDefined();
    expect(answer.entries).toEqual([]);
    expect(tracker.confirmed(term, 4)).toBe(false);
  });

  it('inside a deleted range, where no hash is kept: sends the entries, not marked proven, and counts nothing', async () => {
    const { source, tracker, term } = await leaderPastRetention();
    const answer = await source.pull(await pullOf(await otherHistory(3, term), term));
    expect(answer.mismatch).toBeUndefined();
    expect(answer.proven).toBeUndefined();
    expect(answer.entries.length).toBe(1);
    expect(tracker.confirmed(term, 3)).toBe(false);
  });

  it('counts a standby holding this log, at its end: proven', async () => {
    const { store, source, tracker, term } = await leaderPastRetention();
    const standby = await chainStore();
    await standby.applyReplicated(await store.readEncodedBySeq(0, 10), store.termStarts(0), await store.skippedByRetention(0, await store.readEncodedBySeq(0, 10)));
    expect(standby.position.lastSeq).toBe(5);
    const answer = await source.pull(await pullOf(standby, term));
    expect(answer.mismatch).toBeUndefined();
    expect(answer.proven).toBe(true);
    expect(tracker.confirmed(term, 5)).toBe(true);
  });
});

describe('a standby\'s own record of where the leader matched its log', () => {
  /**
   * Runs a standby's follower (its log made by `build` under the leader's term) against the
   * leader's log source for three answered pulls: the answers, and the seq the follower then
   * holds as matched by the leader.
   */
  async function threePulls(build: (term: number) => Promise<AuditStore>, allDeleted = false, olderLeader = false): Promise<{ answers: PullResponse[]; standby: AuditStore; follower: ReplicationFollower }> {
    const { source, state, clock, elector: leaderElector, term } = await leaderPastRetention(allDeleted);
    const standby = await build(term);
    const elector = electorOf(state, clock, 's1', standby);
    const answers: PullResponse[] = [];
    const transport: PeerTransport = {
      pull: async (_url, request) => {
        const answer = await source.pull(request);
        // A leader of an earlier version says nothing of how it matched.
        if (olderLeader) delete answer.proven;
        answers.push(answer);
        return answer;
      },
      forward: async () => {
        throw new Error('not used');
      },
    };
    const follower = await startFollower({ store: standby, elector, leaderElector, transport, clock, nodeId: 's1' });
    // Each step lets the pulls' LevelDB reads and writes run; on a loaded machine they take a
    // while, so the bound is wall time, not a count of steps.
    for (const deadline = Date.now() + 30_000; answers.length < 3 && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      clock.advance(50);
    }
    expect(answers.length).toBeGreaterThanOrEqual(3);
    return { answers, standby, follower };
  }

  it('counts none of its own entries as the leader\'s after a match by term alone, nor after joining the leader\'s log past them unlinked', async () => {
    const { answers, standby, follower } = await threePulls((term) => otherHistory(3, term));
    // Its end (3) lies inside the range the leader deleted: matched by term alone, unproven.
    expect(answers[0]?.proven).toBeUndefined();
    // The leader's entry 5 was applied after the gap (no hash links it to 3), and later pulls
    // match at 5, proven: the leader holds 5, and nothing here says it holds 1–3.
    expect(standby.position.lastSeq).toBe(5);
    expect(follower.matchedThroughSeq).toBe(5);
    expect(standby.unlinkedThrough).toBe(3);
    expect([1, 2, 3, 5].map((seq) => follower.leaderHolds(seq))).toEqual([false, false, false, true]);
    // A cut below the join takes it away: entries ordered here after the cut are not held back.
    await follower.close();
    await standby.divertSuffixToOutbox(2);
    expect(standby.position.lastSeq).toBe(1);
    expect(standby.unlinkedThrough).toBe(1);
  });

  it('counts nothing from a match by term alone with nothing sent after it (the leader deleted all it held past this log\'s end)', async () => {
    const { answers, standby, follower } = await threePulls((term) => otherHistory(3, term), true);
    expect(answers.every((answer) => answer.proven === undefined && answer.entries.length === 0)).toBe(true);
    expect(standby.position.lastSeq).toBe(3);
    expect(follower.matchedThroughSeq).toBe(0);
    expect([1, 2, 3].map((seq) => follower.leaderHolds(seq))).toEqual([false, false, false]);
  });

  it('keeps no match from a leader that does not say it proved it (an earlier version), and takes its entries as unlinked', async () => {
    const { standby, follower } = await threePulls((term) => otherHistory(3, term), false, true);
    expect(standby.position.lastSeq).toBe(5);
    expect(follower.matchedThroughSeq).toBe(0);
    expect(standby.unlinkedThrough).toBe(3);
    expect([1, 2, 3, 5].map((seq) => follower.leaderHolds(seq))).toEqual([false, false, false, false]);
  });

  it('counts every entry up to a proven match', async () => {
    const { answers, standby, follower } = await threePulls(() => chainStore());
    expect(answers.every((answer) => answer.proven === true)).toBe(true);
    expect(standby.position.lastSeq).toBe(5);
    expect(follower.matchedThroughSeq).toBe(5);
    // Seqs 1–4 it skipped (the leader deleted them, and sent the hash at 4 that entry 5 follows); 5 the leader holds.
    expect(standby.unlinkedThrough).toBe(0);
    expect(follower.leaderHolds(5)).toBe(true);
    expect(follower.leaderHolds(6)).toBe(false);
  });
});
