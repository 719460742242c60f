// Goal: the common prefix of two logs found from their term boundaries alone is exactly the prefix in which they hold the same entries, for any history leaders and standbys can produce.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { commonPrefix } from '../src/log-matching.js';
import { isMoreUpToDate } from '../src/leader-elector.js';
import type { TermStart } from '../src/protocol.js';

interface Entry {
  term: number;
  id: number;
}

function startsOf(log: readonly Entry[]): TermStart[] {
  const starts: TermStart[] = [];
  log.forEach((entry, i) => {
    if (starts.length === 0 || (starts[starts.length - 1] as TermStart).term !== entry.term) starts.push({ term: entry.term, firstSeq: i + 1 });
  });
  return starts;
}

function naivePrefix(a: readonly Entry[], b: readonly Entry[]): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n]!.id === b[n]!.id) n++;
  return n;
}

type Op = { kind: 'lead'; node: number } | { kind: 'append'; count: number } | { kind: 'copy'; node: number; length: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('lead' as const), node: fc.nat(3) }),
  fc.record({ kind: fc.constant('append' as const), count: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ kind: fc.constant('copy' as const), node: fc.nat(3), length: fc.nat(40) }),
);

/**
 * Plays a history on four logs the way the cluster writes them: a new leader takes the next
 * term, appends entries of it, and a standby ends up with a prefix of the leader's log.
 */
function play(ops: readonly Op[]): Entry[][] {
  const logs: Entry[][] = [[], [], [], []];
  let leader = 0;
  let term = 1;
  let nextId = 1;
  for (const o of ops) {
    if (o.kind === 'lead') {
      leader = o.node;
      term++;
    } else if (o.kind === 'append') {
      for (let i = 0; i < o.count; i++) logs[leader]!.push({ term, id: nextId++ });
    } else if (o.node !== leader) {
      const source = logs[leader]!;
      logs[o.node] = source.slice(0, Math.max(Math.min(o.length, source.length), naivePrefix(logs[o.node]!, source)));
    }
  }
  return logs;
}

describe('commonPrefix', () => {
  it('property: equals the entry-by-entry common prefix of any two logs of one history', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), fc.nat(3), fc.nat(3), (ops, i, j) => {
        const logs = play(ops);
        const a = logs[i]!;
        const b = logs[j]!;
        expect(commonPrefix({ starts: startsOf(a), lastSeq: a.length }, { starts: startsOf(b), lastSeq: b.length })).toBe(naivePrefix(a, b));
      }),
      { numRuns: 2000 },
    );
  });

  it('finds the divergence inside a log whose term the other never heard of', () => {
    // A holds term 1 up to 21 then term 3; C holds term 1 at 1 and its own term 2 at 2–11.
    const leader = { starts: [{ term: 1, firstSeq: 1 }, { term: 3, firstSeq: 22 }], lastSeq: 30 };
    const asker = { starts: [{ term: 1, firstSeq: 1 }, { term: 2, firstSeq: 2 }], lastSeq: 11 };
    expect(commonPrefix(leader, asker)).toBe(1);
    expect(commonPrefix(asker, leader)).toBe(1);
  });

  it('stops at the first disagreement even where a later term agrees again (a log broken before boundaries were kept)', () => {
    const broken = { starts: [{ term: 1, firstSeq: 1 }, { term: 2, firstSeq: 2 }, { term: 1, firstSeq: 12 }], lastSeq: 21 };
    const good = { starts: [{ term: 1, firstSeq: 1 }], lastSeq: 21 };
    expect(commonPrefix(broken, good)).toBe(1);
  });

  it('is the shorter log when one extends the other, and 0 for logs that share nothing', () => {
    expect(commonPrefix({ starts: [{ term: 1, firstSeq: 1 }], lastSeq: 5 }, { starts: [{ term: 1, firstSeq: 1 }, { term: 2, firstSeq: 9 }], lastSeq: 12 })).toBe(5);
    expect(commonPrefix({ starts: [{ term: 1, firstSeq: 1 }], lastSeq: 5 }, { starts: [{ term: 2, firstSeq: 1 }], lastSeq: 5 })).toBe(0);
    expect(commonPrefix({ starts: [], lastSeq: 0 }, { starts: [{ term: 2, firstSeq: 1 }], lastSeq: 5 })).toBe(0);
  });
});

describe('isMoreUpToDate (the election order)', () => {
  it('compares the last term first, then the last seq', () => {
    expect(isMoreUpToDate({ lastTerm: 3, lastSeq: 5 }, { lastTerm: 2, lastSeq: 3000 })).toBe(true);
    expect(isMoreUpToDate({ lastTerm: 2, lastSeq: 3000 }, { lastTerm: 3, lastSeq: 5 })).toBe(false);
    expect(isMoreUpToDate({ lastTerm: 3, lastSeq: 6 }, { lastTerm: 3, lastSeq: 5 })).toBe(true);
    expect(isMoreUpToDate({ lastTerm: 3, lastSeq: 5 }, { lastTerm: 3, lastSeq: 5 })).toBe(false);
  });
});
