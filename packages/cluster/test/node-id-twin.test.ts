// Goal: two running processes under one node id never both take part. Each took the other for
// itself (neither pulled from nor forwarded to a leader of its own id), and a twin elected with
// a shorter log stranded acknowledged events on the other (review). The second is refused at
// start (LeaderElector.liveTwin); one that got past that (both started in the same instant)
// campaigns no more and steps down as soon as the coordinator keeps the other's record.
import { describe, expect, it } from 'vitest';
import { InMemoryCoordinator, InMemoryCoordinatorState } from '../src/index.js';
import type { LeaderElector } from '../src/leader-elector.js';
import { ManualClock } from './manual-clock.js';
import { testElector } from './test-elector.js';

function electorOn(state: InMemoryCoordinatorState, clock: ManualClock, instance: string, warnings: string[] = [], nodeId = 'n1', stopped: string[] = []): LeaderElector {
  return testElector(state, clock, nodeId, {
    instance,
    onNodeIdInUse: (err) => void stopped.push(err.message),
    log: { info: () => undefined, warn: (_obj, msg) => void warnings.push(msg) },
  });
}

async function rounds(clock: ManualClock, electors: LeaderElector[], n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    for (const e of electors) await e.tick();
    clock.advance(150);
  }
}

describe('a second process under a running node id', () => {
  it('is found by liveTwin while the first keeps publishing, and not once the first is gone', async () => {
    const clock = new ManualClock();
    const state = new InMemoryCoordinatorState({ clock, newToken: () => 't' });
    const first = electorOn(state, clock, 'dir-a');
    await rounds(clock, [first], 10);
    expect(first.isLeader()).toBe(true);
    const twin = electorOn(state, clock, 'dir-b');
    const found = twin.liveTwin();
    await rounds(clock, [first], 5);
    expect(await found).toMatchObject({ nodeId: 'n1', instance: 'dir-a' });
    // The same data dir restarted is no twin.
    expect(await electorOn(state, clock, 'dir-a').liveTwin()).toBeUndefined();
    await first.close();
    const gone = twin.liveTwin();
    for (let i = 0; i < 10; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      clock.advance(100);
    }
    expect(await gone).toBeUndefined();
  });

  it('never leads beside it: when the leader dies, the later one campaigns no more while the first publishes', async () => {
    const clock = new ManualClock();
    const state = new InMemoryCoordinatorState({ clock, newToken: () => 't' });
    const warnings: string[] = [];
    const leader = electorOn(state, clock, 'dir-c', [], 'c');
    await rounds(clock, [leader], 10);
    expect(leader.isLeader()).toBe(true);
    const first = electorOn(state, clock, 'dir-a');
    const twin = electorOn(state, clock, 'dir-b', warnings);
    await rounds(clock, [first, twin, leader], 3);
    await leader.close();
    // The twin goes first in every round: without the rule it wins the election the leader's death opens.
    for (let i = 0; i < 40; i++) {
      await rounds(clock, [twin, first], 1);
      expect(twin.isLeader()).toBe(false);
    }
    expect(first.isLeader()).toBe(true);
    expect(warnings.some((w) => w.startsWith('node id n1 is in use by another running node'))).toBe(true);
    // The first gone (its record no longer refreshed), the second takes the id and may lead.
    await first.close();
    await rounds(clock, [twin], 60);
    expect(twin.isLeader()).toBe(true);
  });

  it('a restart on a wiped data dir right after its process died is not stopped: the dead record is given up after a lease TTL', async () => {
    const clock = new ManualClock();
    const state = new InMemoryCoordinatorState({ clock, newToken: () => 't' });
    const dead = electorOn(state, clock, 'dir-a');
    await rounds(clock, [dead], 3);
    // kill -9: no resign, no more rounds; its record stays for three TTLs unless replaced.
    const stopped: string[] = [];
    const restarted = electorOn(state, clock, 'dir-new', [], 'n1', stopped);
    await rounds(clock, [restarted], 40);
    expect(stopped).toEqual([]);
    expect((await new InMemoryCoordinator(state, { nodeId: 'x', leaseTtlMs: 1000 }).members()).find((m) => m.nodeId === 'n1')?.instance).toBe('dir-new');
    // A live twin is stopped once its holder's record is seen refreshed.
    const twinStopped: string[] = [];
    const twin = electorOn(state, clock, 'dir-twin', [], 'n1', twinStopped);
    await rounds(clock, [restarted, twin], 4);
    expect(twinStopped).toHaveLength(1);
    expect(twinStopped[0]).toContain('node id n1 is in use by another running node');
  });
});
