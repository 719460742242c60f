// Goal: the verifier's memory of recent records holds exactly the last `capacity` added, finds
// each by seq (across the ring's wrap, with gaps in seq), and refuses seqs that do not ascend.
import { describe, expect, it } from 'vitest';
import { RecentBySeq } from '../src/recent-records.js';

describe('RecentBySeq', () => {
  it('holds the last items added and finds them by seq, gaps and wrap included', () => {
    const recent = new RecentBySeq<{ seq: number }>(4);
    const seqs = [1, 2, 5, 6, 9, 10, 11, 20];
    for (const seq of seqs) recent.add({ seq });
    expect(recent.size).toBe(4);
    for (const seq of seqs) expect(recent.get(seq)?.seq, `seq ${seq}`).toBe(seq >= 10 || seq === 9 ? seq : undefined);
    for (const seq of [0, 3, 12, 19, 21]) expect(recent.get(seq)).toBeUndefined();
  });

  it('refuses a seq that does not ascend, and a capacity that is not a positive integer', () => {
    const recent = new RecentBySeq<{ seq: number }>(2);
    recent.add({ seq: 3 });
    expect(() => recent.add({ seq: 3 })).toThrow(/seqs must ascend: 3 after 3/);
    expect(() => new RecentBySeq(0)).toThrow(/capacity must be a positive integer/);
  });
});
