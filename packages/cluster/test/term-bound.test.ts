// Goal: no message can make a node take in a term past TERM_MAX: a pull or forward request, a
// pull answer or a tier's rows with a forged huge term once left the cluster without a leader
// for good (taken in, persisted and written back to Redis as the floor, where Lua prints numbers
// from 1e14 as 1e+14 and no lease matched its term again). Refused, the known term is unchanged.
import { describe, expect, it } from 'vitest';
import { InMemoryCoordinator, InMemoryCoordinatorState } from '../src/index.js';
import { LeaderElector, TERM_MAX } from '../src/leader-elector.js';
import { ManualClock } from './manual-clock.js';

describe('LeaderElector.observeTerm', () => {
  it('refuses a term past TERM_MAX, naming it, and keeps its known term', () => {
    const clock = new ManualClock();
    const state = new InMemoryCoordinatorState({ clock, newToken: () => 'token' });
    const persisted: number[] = [];
    const elector = new LeaderElector({
      coordinator: new InMemoryCoordinator(state, { nodeId: 'a', leaseTtlMs: 1000 }),
      clock,
      nodeId: 'a',
      leaseTtlMs: 1000,
      knownTerm: 3,
      logEnd: () => ({ lastSeq: 0, lastTerm: 0 }),
      prepareLeadership: async () => undefined,
      persistTerm: async (term) => void persisted.push(term),
      onTick: async () => undefined,
      log: { info: () => undefined, warn: () => undefined },
    });
    for (const forged of [1e15, TERM_MAX + 1, Number.NaN, -1, 2.5]) {
      expect(() => elector.observeTerm(forged)).toThrow(expect.objectContaining({ code: 'AUDIT_BAD_REQUEST', message: `not a term a cluster hands out (0 to ${TERM_MAX}): ${forged}` }));
    }
    expect(elector.knownTerm).toBe(3);
    expect(persisted).toEqual([]);
    elector.observeTerm(TERM_MAX);
    expect(elector.knownTerm).toBe(TERM_MAX);
    expect(persisted).toEqual([TERM_MAX]);
  });
});
