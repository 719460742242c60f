// Goal: a leader counts a standby's progress only in the term it leads, so an older term's progress or a longer log from another leader never makes an entry look replicated.
import { describe, expect, it } from 'vitest';
import { PULLS_HEARD_MAX, ReplicationTracker } from '../src/replication-tracker.js';
import { ManualClock } from './manual-clock.js';

describe('ReplicationTracker', () => {
  it('keeps when each node last pulled for at most PULLS_HEARD_MAX node ids, forgetting the least recently heard', () => {
    const tracker = new ReplicationTracker(new ManualClock());
    tracker.pullHeard('member');
    for (let i = 0; i < PULLS_HEARD_MAX - 1; i++) tracker.pullHeard(`gone-${i}`);
    // The member pulls again: now the most recent; one more id past the bound drops the least recent.
    tracker.pullHeard('member');
    tracker.pullHeard('one-more');
    expect(tracker.lastPullMs('member')).toBeDefined();
    expect(tracker.lastPullMs('one-more')).toBeDefined();
    expect(tracker.lastPullMs('gone-0')).toBeUndefined();
    expect(tracker.lastPullMs('gone-1')).toBeDefined();
  });

  it('confirms a seq once a standby holds it in the same term, and never across terms', () => {
    const tracker = new ReplicationTracker(new ManualClock());
    tracker.record(2, 's1', 9);
    expect(tracker.confirmed(2, 9)).toBe(true);
    expect(tracker.confirmed(2, 10)).toBe(false);
    // Progress of term 2 says nothing about term 3's log.
    expect(tracker.confirmed(3, 5)).toBe(false);
    tracker.record(3, 's2', 4);
    expect(tracker.progress).toEqual([expect.objectContaining({ nodeId: 's2', appliedSeq: 4 })]);
    expect(tracker.confirmed(3, 5)).toBe(false);
    expect(tracker.confirmed(2, 9)).toBe(false);
    // A late pull of an older term is ignored.
    tracker.record(2, 's1', 100);
    expect(tracker.confirmed(3, 100)).toBe(false);
    expect(tracker.term).toBe(3);
  });

  it('keeps the highest progress of a standby within a term and tells listeners of each pull', () => {
    const tracker = new ReplicationTracker(new ManualClock());
    let heard = 0;
    const unsubscribe = tracker.onProgress(() => heard++);
    tracker.record(1, 's1', 10);
    tracker.record(1, 's1', 3);
    expect(tracker.confirmed(1, 10)).toBe(true);
    expect(heard).toBe(2);
    unsubscribe();
    tracker.record(1, 's1', 11);
    expect(heard).toBe(2);
  });

  it('counts no standby as holding what a cut of the log removed, until its next matched pull', () => {
    const tracker = new ReplicationTracker(new ManualClock());
    tracker.record(2, 's1', 30);
    tracker.record(2, 's2', 12);
    tracker.cutAfter(20);
    expect(tracker.progress.map((p) => [p.nodeId, p.appliedSeq])).toEqual([['s1', 20], ['s2', 12]]);
    expect(tracker.confirmed(2, 21)).toBe(false);
    expect(tracker.confirmed(2, 20)).toBe(true);
    tracker.record(2, 's1', 25);
    expect(tracker.confirmed(2, 25)).toBe(true);
  });
});
