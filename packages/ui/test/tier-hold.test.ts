// Goal: the Tier health panel says when local retention is held back by an erasure a tier location has not applied or by a watermark of an earlier term, and when tiering is held back by standbys that do not hold the log yet; and says nothing otherwise.
import { describe, expect, it } from 'vitest';
import { erasureHoldText, standbyHoldText, termHoldText } from '../src/tier-hold.js';

describe('erasure hold in words', () => {
  it('names the held seq, and is absent when nothing is held', () => {
    expect(erasureHoldText(1234)).toBe('from seq 1234: an erasure not yet applied to every tier location (retention keeps it and what follows)');
    expect(erasureHoldText(null)).toBeUndefined();
    expect(erasureHoldText(undefined)).toBeUndefined();
  });

  it('names the standbys holding tiering back and how far they hold, and is absent when none does', () => {
    expect(standbyHoldText({ throughSeq: 41, nodes: ['node1'] })).toBe('through seq 41: standby node1 holds no more of the log yet (the leader tiers only what every reachable standby holds)');
    expect(standbyHoldText({ throughSeq: 0, nodes: ['node1', 'node2'] })).toBe('through seq 0: standbys node1, node2 hold no more of the log yet (the leader tiers only what every reachable standby holds)');
    expect(standbyHoldText({ throughSeq: 5012, nodes: ['n1'], notApplying: ['n1'] })).toBe(
      "through seq 5012: standby n1 holds no more of the log yet (the leader tiers only what every reachable standby holds); standby n1 keeps asking for entries it was sent without applying them: see its log (a node of an older version cannot apply a newer leader's records: upgrade it)",
    );
    expect(standbyHoldText(null)).toBeUndefined();
    expect(standbyHoldText(undefined)).toBeUndefined();
  });

  it('names how far retention counts the log as tiered when a later term holds seqs under the watermark, and is absent otherwise', () => {
    expect(termHoldText({ throughSeq: 41, watermarkSeq: 81 })).toBe(
      "after seq 41: this log's entries up to the watermark's seq 81 were ordered in a later term than the tier's, so retention keeps them until the sweep finds the tier's entries in this log, or an admin adopts the tier (Last error names how)",
    );
    expect(termHoldText(null)).toBeUndefined();
    expect(termHoldText(undefined)).toBeUndefined();
  });
});
