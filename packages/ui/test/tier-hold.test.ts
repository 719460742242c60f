// Goal: the Tier health panel says when local retention is held back by an erasure a tier location has not applied, and when tiering is held back by standbys that do not hold the log yet; and says nothing otherwise.
import { describe, expect, it } from 'vitest';
import { erasureHoldText, standbyHoldText } from '../src/tier-hold.js';

describe('erasure hold in words', () => {
  it('names the held seq, and is absent when nothing is held', () => {
    expect(erasureHoldText(1234)).toBe('from seq 1234: an erasure not yet applied to every tier location (retention keeps it and what follows)');
    expect(erasureHoldText(null)).toBeUndefined();
    expect(erasureHoldText(undefined)).toBeUndefined();
  });

  it('names the standbys holding tiering back and how far they hold, and is absent when none does', () => {
    expect(standbyHoldText({ throughSeq: 41, nodes: ['node1'] })).toBe('through seq 41: standby node1 holds no more of the log yet (the leader tiers only what every reachable standby holds)');
    expect(standbyHoldText({ throughSeq: 0, nodes: ['node1', 'node2'] })).toBe('through seq 0: standbys node1, node2 hold no more of the log yet (the leader tiers only what every reachable standby holds)');
    expect(standbyHoldText(null)).toBeUndefined();
    expect(standbyHoldText(undefined)).toBeUndefined();
  });
});
