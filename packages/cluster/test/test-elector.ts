// An elector for tests over the in-memory coordinator: the options every such test spelled out
// (a 1,000 ms lease, an empty log, nothing to prepare or persist, a silent log), with what a
// test cares about given as overrides.
import { InMemoryCoordinator, type InMemoryCoordinatorState } from '../src/index.js';
import { LeaderElector, type LeaderElectorOptions } from '../src/leader-elector.js';
import type { ManualClock } from './manual-clock.js';

export function testElector(state: InMemoryCoordinatorState, clock: ManualClock, nodeId: string, overrides: Partial<LeaderElectorOptions> = {}): LeaderElector {
  const leaseTtlMs = overrides.leaseTtlMs ?? 1000;
  return new LeaderElector({
    coordinator: new InMemoryCoordinator(state, { nodeId, leaseTtlMs }),
    clock,
    nodeId,
    leaseTtlMs,
    knownTerm: 0,
    logEnd: () => ({ lastSeq: 0, lastTerm: 0 }),
    prepareLeadership: async () => undefined,
    persistTerm: async () => undefined,
    onTick: async () => undefined,
    log: { info: () => undefined, warn: () => undefined },
    ...overrides,
  });
}
