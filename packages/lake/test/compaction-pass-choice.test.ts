// Goal: a compaction pass spends its byte budget only on files it merges, and a run goes on while
// passes reduce the number of small files — so leftovers of compacted days never stop compaction.
import { describe, expect, it } from 'vitest';
import { compactInPasses, smallFileGroups, type CompactionPass } from '../src/compaction-passes.js';

describe('smallFileGroups', () => {
  it('passes over lone small files (a compacted day keeps one) instead of spending the budget on them', () => {
    // Ten days each with one 10-byte leftover, then a day of four 10-byte files; a pass takes 30 bytes.
    const days = [...Array.from({ length: 10 }, (_, d) => [`lone-${d}`]), ['a', 'b', 'c', 'd']];
    expect(smallFileGroups(days, () => 10, 30)).toEqual({ groups: [['a', 'b', 'c']], left: 1 });
  });

  it('counts a day only once two or more of its files fit; a file too big for what is left is passed over, not the rest of its day', () => {
    const size: Record<string, number> = { big: 25, x: 5, y: 5, p: 20, q: 20 };
    expect(smallFileGroups([['big', 'x', 'y'], ['p', 'q']], (f) => size[f] as number, 20)).toEqual({ groups: [['x', 'y']], left: 3 });
    // Nothing of a day fits twice: the budget goes to the next day.
    expect(smallFileGroups([['p', 'q'], ['x', 'y']], (f) => size[f] as number, 30)).toEqual({ groups: [['x', 'y']], left: 2 });
  });
});

describe('compactInPasses', () => {
  const fence = { term: 1, mayCommit: () => true };
  const run = async (passes: CompactionPass[]) => {
    let at = 0;
    const done = await compactInPasses(async () => passes[at++] as CompactionPass, { now: () => 0, timeBudgetMs: 1_000, fence });
    return done.passes;
  };

  it('goes on after a pass that wrote as many files as it took when fewer of them are small (a day merged into one full file and a remainder)', async () => {
    expect(await run([{ filesRewritten: 2, filesAdded: 2, smallFilesAdded: 1, smallFilesLeft: 4 }, { filesRewritten: 5, filesAdded: 1, smallFilesAdded: 0 }])).toBe(2);
  });

  it('stops after a pass that left as many small files as it took, or replaced none (another writer changed them)', async () => {
    expect(await run([{ filesRewritten: 2, filesAdded: 2, smallFilesAdded: 2, smallFilesLeft: 4 }, { filesRewritten: 4, filesAdded: 1, smallFilesAdded: 0 }])).toBe(1);
    expect(await run([{ filesRewritten: 0, filesAdded: 0, smallFilesAdded: 0, smallFilesLeft: 4 }, { filesRewritten: 4, filesAdded: 1, smallFilesAdded: 0 }])).toBe(1);
  });
});
