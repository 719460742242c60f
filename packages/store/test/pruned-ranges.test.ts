// Goal: retention's record of deleted seqs stays within its bound however retention fragments
// the log — joining the closest ranges a tenth at a time, never losing a deleted seq, each
// range keeping the chain hash of the entry that ends it.
import { describe, expect, it } from 'vitest';
import { PRUNED_RANGES_JOINED_TO, PRUNED_RANGES_MAX, PrunedRanges, type PrunedRange } from '../src/pruned-ranges.js';

const hashOf = (seq: number) => `h${seq}`;

/** True when some range covers seq. */
function covered(ranges: readonly PrunedRange[], seq: number): boolean {
  return ranges.some((range) => range.fromSeq <= seq && seq <= range.toSeq);
}

describe('PrunedRanges at its bound', () => {
  it('joins the closest ranges down to PRUNED_RANGES_JOINED_TO when one more than PRUNED_RANGES_MAX is added; every deleted seq stays covered', () => {
    const pruned = new PrunedRanges([]);
    // Islands: every third seq deleted, except that seqs past 15,000 leave holes of ten.
    const deleted: number[] = [];
    for (let i = 0; deleted.length < PRUNED_RANGES_MAX; i++) deleted.push(i < 5_000 ? i * 3 : 15_000 + (i - 5_000) * 10);
    for (const seq of deleted) pruned.add(seq, hashOf(seq));
    expect(pruned.all).toHaveLength(PRUNED_RANGES_MAX);
    const next = deleted.at(-1)! + 10;
    pruned.add(next, hashOf(next));
    deleted.push(next);
    const ranges = pruned.all;
    expect(ranges).toHaveLength(PRUNED_RANGES_JOINED_TO);
    for (const seq of deleted) expect(covered(ranges, seq)).toBe(true);
    // The holes of two were joined first (the smallest), those of ten kept: ranges stay sorted and disjoint.
    for (let i = 1; i < ranges.length; i++) expect(ranges[i]!.fromSeq).toBeGreaterThan(ranges[i - 1]!.toSeq + 1);
    expect(ranges.filter((range) => range.fromSeq >= 15_000).every((range) => range.fromSeq === range.toSeq)).toBe(true);
    // Each range's anchor is the chain hash of the entry it ends with.
    for (const range of ranges) expect(range.chainHash).toBe(hashOf(range.toSeq));
    expect(pruned.anchorAt(next)).toBe(hashOf(next));
  });

  it('stays within the bound through many more isolated deletions, joining once per ~1,000 of them', () => {
    const pruned = new PrunedRanges([]);
    let joins = 0;
    let before = 0;
    for (let seq = 0; seq < 2 * (PRUNED_RANGES_MAX + 5_000); seq += 2) {
      pruned.add(seq, hashOf(seq));
      const length = pruned.all.length;
      expect(length).toBeLessThanOrEqual(PRUNED_RANGES_MAX);
      if (length < before) joins += 1;
      before = length;
    }
    expect(joins).toBe(Math.ceil(5_000 / (PRUNED_RANGES_MAX + 1 - PRUNED_RANGES_JOINED_TO)));
    for (let seq = 0; seq < 2 * (PRUNED_RANGES_MAX + 5_000); seq += 2) expect(covered(pruned.all, seq)).toBe(true);
  });

  it('a replicated range added after every range held counts toward the bound the same way', () => {
    const pruned = new PrunedRanges([]);
    for (let seq = 0; seq < 2 * PRUNED_RANGES_MAX; seq += 2) pruned.add(seq, hashOf(seq));
    expect(pruned.addAfter({ fromSeq: 2 * PRUNED_RANGES_MAX + 5, toSeq: 2 * PRUNED_RANGES_MAX + 9, chainHash: hashOf(2 * PRUNED_RANGES_MAX + 9) })).toBe(true);
    expect(pruned.all).toHaveLength(PRUNED_RANGES_JOINED_TO);
    expect(pruned.all.at(-1)).toEqual({ fromSeq: 2 * PRUNED_RANGES_MAX + 5, toSeq: 2 * PRUNED_RANGES_MAX + 9, chainHash: hashOf(2 * PRUNED_RANGES_MAX + 9) });
  });
});

describe('PrunedRanges cut with the log', () => {
  it('forgets the ranges from the cut on; one the cut ends inside ends before it, with the chain hash there when the log knows it', () => {
    const ranges = () => new PrunedRanges([{ fromSeq: 1, toSeq: 3, chainHash: hashOf(3) }, { fromSeq: 5, toSeq: 20, chainHash: hashOf(20) }, { fromSeq: 30, toSeq: 31, chainHash: hashOf(31) }]);
    const cut = (seq: number, chainHashAtCut?: string) => {
      const pruned = ranges();
      pruned.cutFrom(seq, chainHashAtCut);
      return pruned.all;
    };
    expect(cut(4)).toEqual([{ fromSeq: 1, toSeq: 3, chainHash: hashOf(3) }]);
    // Inside a range (a join left seq 9 in the log, so its hash is known): it ends at 9 with it.
    expect(cut(10, hashOf(9))).toEqual([{ fromSeq: 1, toSeq: 3, chainHash: hashOf(3) }, { fromSeq: 5, toSeq: 9, chainHash: hashOf(9) }]);
    // Not known there: no hash, rather than the one of the range's old end.
    expect(cut(10)).toEqual([{ fromSeq: 1, toSeq: 3, chainHash: hashOf(3) }, { fromSeq: 5, toSeq: 9 }]);
    expect(cut(1)).toEqual([]);
  });
});
