// Goal: TierHeldSeqs names exactly the seqs of the ranges to hold that the tier streams did not
// deliver — a gap inside a range, a range's start or end, a whole range — and nothing else
// (repeats, seqs outside every range, overlapping ranges given apart).
import { describe, expect, it } from 'vitest';
import { TierHeldSeqs } from '../src/tier-held-seqs.js';

function missing(spans: Array<[number, number]>, seen: number[]): Array<[number, number]> {
  const held = new TierHeldSeqs(spans.map(([fromSeq, toSeq]) => ({ fromSeq, toSeq })));
  for (const seq of seen) held.see(seq);
  return held.finish().map((range) => [range.fromSeq, range.toSeq]);
}

describe('TierHeldSeqs', () => {
  it('names nothing when every seq to hold was delivered, repeats and seqs outside the ranges aside', () => {
    expect(missing([[3, 6]], [1, 2, 3, 3, 4, 5, 6, 6, 7, 9])).toEqual([]);
    expect(missing([], [1, 2, 3])).toEqual([]);
  });

  it('names a gap inside a range, a range cut at either end, and a range never reached', () => {
    expect(missing([[1, 10]], [1, 2, 3, 7, 8, 9, 10])).toEqual([[4, 6]]);
    expect(missing([[1, 10]], [4, 5, 6, 7])).toEqual([[1, 3], [8, 10]]);
    expect(missing([[1, 3], [8, 9]], [1, 2, 3])).toEqual([[8, 9]]);
    expect(missing([[1, 3], [8, 9]], [])).toEqual([[1, 3], [8, 9]]);
    expect(missing([[5, 6]], [1, 2, 20])).toEqual([[5, 6]]);
  });

  it('merges overlapping or touching ranges given apart, in any order', () => {
    expect(missing([[6, 9], [1, 4], [3, 5]], [1, 2, 3, 4, 5, 6, 8, 9])).toEqual([[7, 7]]);
  });
});
