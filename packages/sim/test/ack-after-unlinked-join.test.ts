// Goal: a node whose own entries sit before a join to another log that no chain hash linked
// never confirms them for ack=replicated, also once it leads again (review: with a term number
// handed out twice — the coordinator restarted empty while the node that knew the term was
// away — a node whose log ended inside a range the new leader's retention deleted took that
// leader's entries past the range by term alone, and once it led again a standby matching its
// end counted as holding its own entries before the join: it answered 200 while no other node
// held them). The seeded simulator, whose workload checks at every ack=replicated answer that
// another node holds the events.
import { describe, expect, it } from 'vitest';
import { EPOCH_MS } from '../src/scheduler.js';
import { SimCluster } from '../src/sim-cluster.js';
import type { SimNode } from '../src/sim-node.js';
import { leads, send, until } from './sim-steps.js';

/** Retention on `node` through `throughSeq`, whatever the events' times. */
async function prune(cluster: SimCluster, node: SimNode, throughSeq: number): Promise<void> {
  await (node.store as NonNullable<SimNode['store']>).pruneBefore(EPOCH_MS + cluster.nowMs + 60_000, 1000, async () => true, throughSeq);
}

describe('ack=replicated after a join no chain hash linked', () => {
  it('is not confirmed for the entries before the join on the node that ordered them, once it leads again', async () => {
    const cluster = await SimCluster.create({ seed: 11, size: 3 });
    try {
      await until(cluster, 'a leader', () => cluster.leader() !== undefined);
      const a = cluster.leader() as SimNode;
      const [b, c] = cluster.nodes.filter((node) => node !== a) as [SimNode, SimNode];
      expect(await send(cluster, a, cluster.workload.events(10), true)).toBe(true);
      await until(cluster, 'all hold 10', () => cluster.nodes.every((node) => node.store?.position.lastSeq === 10));
      // B leads alone and orders 10 events no other node gets (503), then crashes.
      await cluster.crash(c);
      cluster.pause(a);
      await until(cluster, 'b leads', () => leads(b));
      const mine = cluster.workload.events(10);
      expect(await send(cluster, b, mine, true)).toBe(false);
      const reused = b.cluster?.elector.leadingTerm;
      await cluster.crash(b);
      // The coordinator comes back empty: the next leader gets B's term number again.
      cluster.coordinator.down();
      await cluster.scheduler.runFor(2000);
      cluster.coordinator.restart(false);
      cluster.resume(a);
      await cluster.restart(c);
      await until(cluster, 'a or c leads', () => leads(a) || leads(c));
      const winner = leads(a) ? a : c;
      const other = winner === a ? c : a;
      expect(winner.cluster?.elector.leadingTerm).toBe(reused);
      expect(await send(cluster, winner, cluster.workload.events(20), true)).toBe(true);
      await until(cluster, 'both hold 30', () => [winner, other].every((node) => node.store?.position.lastSeq === 30));
      await prune(cluster, winner, 25);
      await prune(cluster, other, 25);
      // B comes back, its end (20) inside the range the leader deleted: it joins at 26 by term alone.
      await cluster.restart(b);
      await until(cluster, 'b joins at 30', () => b.store?.position.lastSeq === 30);
      expect(b.store?.unlinkedThrough).toBe(20);
      // B leads a later term, and the other survivor follows it, matching its end (30).
      cluster.pause(winner);
      cluster.pause(other);
      await until(cluster, 'b leads again', () => leads(b));
      cluster.resume(other);
      await until(cluster, 'the other follows b', () => other.cluster?.leader?.nodeId === b.nodeId);
      await cluster.scheduler.runFor(3000);
      // A retry sent to it now finds its own copies, before the join: not confirmed (503).
      expect(await send(cluster, b, mine, true)).toBe(false);
      // No answer claimed another node held what none did.
      expect(cluster.workload.violations).toEqual([]);
    } finally {
      await cluster.close();
    }
  });

  it('is confirmed on a former leader that fell behind the new leader\'s retention once the tier holds its events', async () => {
    const cluster = await SimCluster.create({ seed: 3, size: 3 });
    try {
      await until(cluster, 'a leader', () => cluster.leader() !== undefined);
      const a = cluster.leader() as SimNode;
      const [b, c] = cluster.nodes.filter((node) => node !== a) as [SimNode, SimNode];
      expect(await send(cluster, a, cluster.workload.events(10), true)).toBe(true);
      // A orders 3 events with both standbys paused (503); they copy them once resumed.
      cluster.pause(b);
      cluster.pause(c);
      await cluster.scheduler.runFor(1500);
      const mine = cluster.workload.events(3);
      expect(await send(cluster, a, mine, true)).toBe(false);
      cluster.resume(b);
      cluster.resume(c);
      await until(cluster, 'b and c hold 13', () => [b, c].every((node) => node.store?.position.lastSeq === 13));
      // A away; the next leader orders more, and both survivors' retention deletes through 25.
      cluster.pause(a);
      await until(cluster, 'b or c leads', () => leads(b) || leads(c));
      const leader = leads(b) ? b : c;
      const other = leader === b ? c : b;
      expect(await send(cluster, leader, cluster.workload.events(20), true)).toBe(true);
      await until(cluster, 'both hold 33', () => [leader, other].every((node) => node.store?.position.lastSeq === 33));
      await prune(cluster, leader, 25);
      await prune(cluster, other, 25);
      // A comes back: its end (13) lies inside the deleted range, matched by term alone.
      cluster.resume(a);
      await until(cluster, 'a follows and holds 33', () => a.store?.position.lastSeq === 33);
      expect(a.store?.unlinkedThrough).toBe(13);
      // Its copies sit before that join: confirmed only once the tier is known to hold them (what
      // a leader answering a forward of them says, having found them there).
      a.store?.noteHeldByTier(mine.map((event) => event.eventId));
      let confirmed: boolean | undefined;
      void a.cluster?.confirmReplicated(mine, 1000).then((ok) => (confirmed = ok));
      await until(cluster, 'an answer', () => confirmed !== undefined);
      expect(confirmed).toBe(true);
      expect(cluster.workload.violations).toEqual([]);
    } finally {
      await cluster.close();
    }
  });
});
