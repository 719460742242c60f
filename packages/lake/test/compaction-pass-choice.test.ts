// Goal: a compaction pass spends its byte budget only on files it merges (days oldest first), and a run goes on while
// passes reduce the number of small files — so leftovers of compacted days never stop compaction.
import { describe, expect, it } from 'vitest';
import { compactInPasses, smallFileGroups, type CompactionPass } from '../src/compaction-passes.js';

describe('smallFileGroups', () => {
  interface File {
    day: number;
    key: string;
    bytes: number;
  }
  const facts = { day: (f: File) => f.day, key: (f: File) => f.key, bytes: (f: File) => f.bytes };
  /** Every file here is small for it (under three quarters). */
  const TARGET = 1_000;
  const keys = (result: { groups: File[][]; left: number }) => ({ groups: result.groups.map((group) => group.map((f) => f.key)), left: result.left });

  it('passes over lone small files (a compacted day keeps one) instead of spending the budget on them', () => {
    // Ten days each with one 10-byte leftover, then a day of four 10-byte files; a pass takes 30 bytes.
    const files = [...Array.from({ length: 10 }, (_, d) => ({ day: d, key: `lone-${d}`, bytes: 10 })), ...['a', 'b', 'c', 'd'].map((key) => ({ day: 10, key, bytes: 10 }))];
    expect(keys(smallFileGroups(files, facts, TARGET, 30))).toEqual({ groups: [['a', 'b', 'c']], left: 1 });
  });

  it('counts a day only once two or more of its files fit; a file too big for what is left is passed over, not the rest of its day', () => {
    const file = (day: number, key: string, bytes: number): File => ({ day, key, bytes });
    expect(keys(smallFileGroups([file(1, 'a-big', 25), file(1, 'x', 5), file(1, 'y', 5), file(2, 'p', 20), file(2, 'q', 20)], facts, TARGET, 20))).toEqual({ groups: [['x', 'y']], left: 3 });
    // Nothing of a day fits twice: the budget goes to the next day.
    expect(keys(smallFileGroups([file(1, 'p', 20), file(1, 'q', 20), file(2, 'x', 5), file(2, 'y', 5)], facts, TARGET, 30))).toEqual({ groups: [['x', 'y']], left: 2 });
  });

  it("takes days oldest first and each day's files by name, and leaves out files not small for the target", () => {
    const files = [
      { day: 2, key: 'b', bytes: 10 },
      { day: 1, key: 'z', bytes: 10 },
      { day: 2, key: 'a', bytes: 10 },
      { day: 1, key: 'y', bytes: 10 },
      { day: 1, key: 'large', bytes: 750 },
    ];
    expect(keys(smallFileGroups(files, facts, TARGET, 1_000))).toEqual({ groups: [['y', 'z'], ['a', 'b']], left: 0 });
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
