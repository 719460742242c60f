// Goal: a node whose data belongs to another cluster takes no part in the cluster its coordinator
// holds. A staging node pointed at prod's Redis took prod's token, deposed prod's leader with its
// own terms, led with its own log and handed prod its settings and tier locations (review).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditEvent } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ClusterToken, InMemoryCoordinator, InMemoryCoordinatorState } from '../src/index.js';
import { testElector } from './test-elector.js';
import { ManualClock } from './manual-clock.js';

async function store(events: number): Promise<AuditStore> {
  const dir = await mkdtemp(join(tmpdir(), 'cluster-token-'));
  const s = await AuditStore.open({ location: dir });
  onTestFinished(async () => {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  });
  const batch: AuditEvent[] = Array.from({ length: events }, (_, i) => ({ eventId: `e${i}`, timestamp: Date.now(), userId: 'u', source: 'trino', action: 'select', resource: 'r', decision: 'ALLOW', tables: [], query: '', details: '', ingestTs: 0, seq: 0, term: 0 }));
  if (events > 0) await s.append(batch, { sequencer: () => 1 });
  return s;
}

/** A coordinator that already holds the token of the cluster it serves, which that cluster's nodes (with data) confirm. */
async function coordinatorOf(clusterToken: string): Promise<InMemoryCoordinator> {
  const coordinator = new InMemoryCoordinator(new InMemoryCoordinatorState({ clock: new ManualClock(), newToken: () => clusterToken }), { nodeId: 'x', leaseTtlMs: 1000 });
  await coordinator.clusterToken(clusterToken, true);
  return coordinator;
}

describe('ClusterToken', () => {
  it("refuses a coordinator that holds another cluster's token when this node's log holds entries, and keeps its own", async () => {
    const ours = await store(3);
    const first = await ClusterToken.load(ours, await coordinatorOf('staging'));
    expect(await first.current()).toBe('staging');
    const token = await ClusterToken.load(ours, await coordinatorOf('prod'));
    await expect(token.refresh()).rejects.toMatchObject({ code: 'AUDIT_CLUSTER_MISMATCH', message: expect.stringContaining("this node's data belongs to another cluster than the one its coordinator holds") });
    expect(await token.current()).toBe('staging');
    expect(await ours.getLocal('clusterToken')).toBe('staging');
  });

  it("takes the coordinator's token when its log is empty (a new member), and puts its own back after the coordinator lost it", async () => {
    const empty = await store(0);
    await (await ClusterToken.load(empty, await coordinatorOf('old'))).refresh();
    const joined = await ClusterToken.load(empty, await coordinatorOf('prod'));
    await joined.refresh();
    expect(await joined.current()).toBe('prod');
    // A coordinator that restarted empty gets the remembered token back (not a mismatch).
    const state = new InMemoryCoordinatorState({ clock: new ManualClock(), newToken: () => 'fresh' });
    const full = await store(2);
    await (await ClusterToken.load(full, await coordinatorOf('prod'))).refresh();
    const back = await ClusterToken.load(full, new InMemoryCoordinator(state, { nodeId: 'x', leaseTtlMs: 1000 }));
    await back.refresh();
    expect(await back.current()).toBe('prod');
  });

  it('takes the cluster back from a token a new node set after the coordinator lost its data', async () => {
    const ours = await store(3);
    let next = 'cluster';
    const state = new InMemoryCoordinatorState({ clock: new ManualClock(), newToken: () => next });
    const member = await ClusterToken.load(ours, new InMemoryCoordinator(state, { nodeId: 'x', leaseTtlMs: 1000 }));
    await member.refresh();
    state.loseData();
    // A new node with an empty log asks first: the coordinator makes a token of its own.
    next = 'fresh';
    const newcomer = await ClusterToken.load(await store(0), new InMemoryCoordinator(state, { nodeId: 'y', leaseTtlMs: 1000 }));
    expect(await newcomer.current()).toBe('fresh');
    // The member with data is not refused: it puts the cluster's token back, and the new node takes it.
    await member.refresh();
    expect(await member.current()).toBe('cluster');
    await newcomer.refresh();
    expect(await newcomer.current()).toBe('cluster');
  });

  it("keeps a refused node from campaigning, raising the term counter or publishing itself in that coordinator", async () => {
    const ours = await store(3);
    await (await ClusterToken.load(ours, await coordinatorOf('staging'))).refresh();
    const clock = new ManualClock();
    const state = new InMemoryCoordinatorState({ clock, newToken: () => 'prod' });
    const coordinator = new InMemoryCoordinator(state, { nodeId: 's1', leaseTtlMs: 1000 });
    await coordinator.clusterToken('prod', true);
    const token = await ClusterToken.load(ours, coordinator);
    const warnings: string[] = [];
    const elector = testElector(state, clock, 's1', {
      coordinator,
      knownTerm: 9,
      logEnd: () => ({ lastSeq: 3, lastTerm: 9 }),
      onTick: () => token.refresh(),
      log: { info: () => undefined, warn: (_obj, msg) => void warnings.push(msg) },
    });
    for (let round = 0; round < 20; round++) {
      await elector.tick();
      clock.advance(200);
    }
    expect(elector.isLeader()).toBe(false);
    expect(await coordinator.latestTerm()).toBe(0);
    expect(await coordinator.members()).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('belongs to another cluster');
  });
});
