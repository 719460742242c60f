// Goal: `ack=replicated` retried on a node that ordered the events as leader and follows another
// leader now confirms them once that leader holds them (review: every retry to the former leader
// answered 503 while the events were on every node; the same retry to the leader answered 200).
// The seeded simulator: real stores and cluster code, virtual time and network.
import { describe, expect, it } from 'vitest';
import { SimCluster } from '../src/sim-cluster.js';
import type { SimNode } from '../src/sim-node.js';
import { leads, send } from './sim-steps.js';

describe('ack=replicated on a former leader', () => {
  it('confirms events it ordered as leader once the leader it follows matched its log past them', async () => {
    const cluster = await SimCluster.create({ seed: 3, size: 3 });
    try {
      expect(await cluster.scheduler.runUntil(() => cluster.leader() !== undefined, 10_000)).toBe(true);
      const a = cluster.leader() as SimNode;
      const [b, c] = cluster.nodes.filter((node) => node !== a) as [SimNode, SimNode];
      expect(await send(cluster, a, cluster.workload.events(1), true)).toBe(true);
      // Both standbys paused: A stores the events and answers 503 (not confirmed in time).
      cluster.pause(b);
      cluster.pause(c);
      await cluster.scheduler.runFor(1500);
      const events = cluster.workload.events(3);
      expect(await send(cluster, a, events, true)).toBe(false);
      cluster.resume(b);
      cluster.resume(c);
      expect(await cluster.scheduler.runUntil(() => [b, c].every((node) => node.store?.position.lastSeq === a.store?.position.lastSeq), 10_000)).toBe(true);
      // A loses the lease; B or C, holding the events, leads; A comes back and follows it.
      cluster.pause(a);
      expect(await cluster.scheduler.runUntil(() => leads(b) || leads(c), 20_000)).toBe(true);
      cluster.resume(a);
      expect(await cluster.scheduler.runUntil(() => a.cluster?.elector.role === 'standby' && a.cluster.leader !== undefined && a.cluster.leader.nodeId !== a.nodeId, 20_000)).toBe(true);
      await cluster.scheduler.runFor(3000);
      // A client pinned to A retries: confirmed, as it is by the leader.
      expect(await send(cluster, a, events, true), 'the retry to the former leader').toBe(true);
      const leader = leads(b) ? b : c;
      expect(await send(cluster, leader, events, true)).toBe(true);
      // No event was stored twice.
      expect(cluster.nodes.every((node) => node.store?.position.lastSeq === leader.store?.position.lastSeq)).toBe(true);
    } finally {
      await cluster.close();
    }
  });
});
