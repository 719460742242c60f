// Goal: what a sweeper learns once per term is forgotten when the term moves on, so the sets it
// keeps stay the size of one term's targets however many failovers a node lives through.
import { describe, expect, it } from 'vitest';
import { TermScopedSet } from '../src/term-scoped-set.js';

describe('TermScopedSet', () => {
  it("holds a term's keys, and only the current term's", () => {
    const set = new TermScopedSet();
    set.add(1, 'a');
    set.add(1, 'b');
    expect(set.has(1, 'a')).toBe(true);
    expect(set.has(1, 'c')).toBe(false);
    expect(set.has(2, 'a')).toBe(false);
    expect(set.size).toBe(0);
    set.add(2, 'a');
    expect(set.has(2, 'a')).toBe(true);
    expect(set.has(2, 'b')).toBe(false);
  });

  it('stays the size of one term across a thousand failovers', () => {
    const set = new TermScopedSet();
    for (let term = 1; term <= 1_000; term++) {
      set.add(term, 'conn|bucket|prefix');
      set.add(term, 'conn|bucket|other');
    }
    expect(set.size).toBe(2);
  });
});
