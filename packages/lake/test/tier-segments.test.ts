// Goal: the seq ranges a node says it committed to each tier location claim no seq it did not
// commit there (a claimed seq the tier lacks is reported missing by verify), and stay few in
// steady tiering: holes in a batch, a changed target, a commit that does not continue the last.
import { describe, expect, it } from 'vitest';
import { segmentsAfterCommit, TIER_SEGMENTS_MAX, type TierSegment } from '../src/tier-segments.js';

const A = 's3://bucket/a';
const B = 's3://bucket/b';
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('segmentsAfterCommit', () => {
  it('grows one segment while commits continue each other', () => {
    let segments: TierSegment[] = [];
    segments = segmentsAfterCommit(segments, A, 0, range(1, 10)).segments;
    segments = segmentsAfterCommit(segments, A, 10, range(11, 25)).segments;
    segments = segmentsAfterCommit(segments, A, 25, []).segments;
    expect(segments).toEqual([{ url: A, fromSeq: 1, toSeq: 25 }]);
  });

  it('starts at the first seq a location got, not at the watermark before it', () => {
    // Retention deleted 1..40 before tiering began.
    expect(segmentsAfterCommit([], A, 0, range(41, 50)).segments).toEqual([{ url: A, fromSeq: 41, toSeq: 50 }]);
  });

  it('leaves out the holes of a batch and what lies between commits that do not continue', () => {
    let segments = segmentsAfterCommit([], A, 0, range(1, 10)).segments;
    // Seqs 11..12 and 15 deleted while tiering was off.
    segments = segmentsAfterCommit(segments, A, 10, [13, 14, 16]).segments;
    expect(segments).toEqual([
      { url: A, fromSeq: 1, toSeq: 10 },
      { url: A, fromSeq: 13, toSeq: 14 },
      { url: A, fromSeq: 16, toSeq: 16 },
    ]);
    // A commit after a watermark the segments do not end at (an adoption, a commit whose record was lost).
    segments = segmentsAfterCommit(segments, A, 20, range(21, 22)).segments;
    expect(segments.at(-1)).toEqual({ url: A, fromSeq: 21, toSeq: 22 });
    expect(segments).toHaveLength(4);
  });

  it('starts a new segment when the target changes, and again when it changes back', () => {
    let segments = segmentsAfterCommit([], A, 0, range(1, 5)).segments;
    segments = segmentsAfterCommit(segments, B, 5, range(6, 9)).segments;
    segments = segmentsAfterCommit(segments, A, 9, range(10, 12)).segments;
    expect(segments).toEqual([
      { url: A, fromSeq: 1, toSeq: 5 },
      { url: B, fromSeq: 6, toSeq: 9 },
      { url: A, fromSeq: 10, toSeq: 12 },
    ]);
  });

  it('keeps the newest segments past the bound, and says how far the dropped ones reached', () => {
    const everyOther = range(1, TIER_SEGMENTS_MAX + 5).map((i) => 2 * i);
    const { segments, cutThrough } = segmentsAfterCommit([], A, 0, everyOther);
    expect(segments).toHaveLength(TIER_SEGMENTS_MAX);
    expect(segments.at(-1)).toEqual({ url: A, fromSeq: everyOther.at(-1), toSeq: everyOther.at(-1) });
    expect(segments[0]).toEqual({ url: A, fromSeq: 12, toSeq: 12 });
    expect(cutThrough).toBe(10);
    expect(segmentsAfterCommit([], A, 0, range(1, 3)).cutThrough).toBeUndefined();
  });
});
