// Goal: no message makes a node take in a term no cluster could have reached. A pull or forward
// request, a pull answer or a tier's rows with a forged huge term once left the cluster without
// a leader for good (taken in, persisted and written back to Redis as the floor, where Lua
// printed numbers from 1e14 as 1e+14 and no lease matched its term again). An absolute bound
// then wedged it at the bound itself, its own next election past it (review): the bound is
// relative to the terms the node knows, so the next election always stays within it.
import { describe, expect, it } from 'vitest';
import { InMemoryCoordinatorState } from '../src/index.js';
import { TERM_JUMP_MAX, type LeaderElector } from '../src/leader-elector.js';
import { ManualClock } from './manual-clock.js';
import { testElector } from './test-elector.js';

function elector(knownTerm: number): LeaderElector {
  const clock = new ManualClock();
  return testElector(new InMemoryCoordinatorState({ clock, newToken: () => 'token' }), clock, 'a', { knownTerm });
}

describe('LeaderElector.observeMessageTerm', () => {
  it('refuses a term more than TERM_JUMP_MAX above the known one, or no term at all, naming it', () => {
    const e = elector(3);
    for (const forged of [1e15, 3 + TERM_JUMP_MAX + 1, Number.NaN, -1, 2.5]) {
      expect(() => e.observeMessageTerm(forged)).toThrow(expect.objectContaining({ code: 'AUDIT_BAD_REQUEST', message: `term ${forged} is not one a cluster could have reached: this node knows term 3, and terms count elections (at most ${TERM_JUMP_MAX} above it taken)` }));
    }
    expect(e.knownTerm).toBe(3);
    // A term at the edge is taken, and the bound moves with it: the next election's term is within.
    e.observeMessageTerm(3 + TERM_JUMP_MAX);
    expect(e.knownTerm).toBe(3 + TERM_JUMP_MAX);
    expect(() => e.observeMessageTerm(3 + TERM_JUMP_MAX + 1)).not.toThrow();
    // Observing a term (the node's own election, a coordinator record) never throws.
    expect(() => e.observeTerm(1e15)).not.toThrow();
  });
});
