// Goal: a forward the leader is slow over cannot have its events stored twice. Its sender
// re-sends the batch with the ids' "new" flags cleared (they are then looked up) when it gives up
// waiting, or when it restarts with the batch still in its outbox; taken before the first
// attempt reached the leader's writer, the re-send found nothing, was stored, and the first
// attempt stored its flagged ids again (review: three events twice in every log). The leader
// takes one forward of a sender at a time.
// The seeded simulator: real stores and cluster code, virtual time and network.
import { encodeEvent, newEventId, type EncodedEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { FORWARD_TIMEOUT_MS } from '@auditlake/cluster';
import { SimCluster } from '../src/sim-cluster.js';
import type { SimNode } from '../src/sim-node.js';
import { until } from './sim-steps.js';

/** Makes `leader`'s first append of a forward with flagged ids wait `delayMs` (a slow tier lookup, a busy writer); answers how many it delayed. */
function delayFirstFlaggedAppend(leader: SimNode, delayMs: number): () => number {
  const store = leader.store!;
  const append = store.appendEncoded.bind(store);
  let delayed = 0;
  store.appendEncoded = async (events, options = {}) => {
    if (delayed === 0 && (options.freshIds?.size ?? 0) > 0) {
      delayed++;
      await new Promise<void>((resolve) => leader.clock.setTimer(resolve, delayMs));
    }
    return append(events, options);
  };
  return () => delayed;
}

/** The eventIds among `ids` in `node`'s log, once per entry. */
async function entriesOf(node: SimNode, ids: readonly string[]): Promise<string[]> {
  const log = await node.store!.readEncodedBySeq(0, 1000);
  return log.map((entry) => (JSON.parse(new TextDecoder().decode(entry)) as { eventId: string }).eventId).filter((id) => ids.includes(id)).sort();
}

/**
 * Leader A, a standby B following it, and three events B gave ids of its own (sent without one,
 * as ingest does) forwarded to A, whose append of them waits `delayMs`: answered once A has them.
 */
async function flaggedForwardHeld(cluster: SimCluster, delayMs: number): Promise<{ a: SimNode; b: SimNode; ids: string[] }> {
  await until(cluster, 'a leader', () => cluster.leader() !== undefined);
  const a = cluster.leader() as SimNode;
  const b = cluster.nodes.find((node) => node !== a) as SimNode;
  await until(cluster, `${b.name} follows ${a.name}`, () => b.cluster?.leader?.nodeId === a.nodeId);
  const delayed = delayFirstFlaggedAppend(a, delayMs);
  const events: EncodedEvent[] = cluster.workload.events(3).map((event, i) => encodeEvent({ ...event, eventId: `${newEventId(b.clock.wallMs())}-${i}` }));
  const ids = events.map((event) => event.eventId);
  await b.cluster!.receive(events, new Set(ids));
  await until(cluster, `${a.name} has the forward`, () => delayed() === 1);
  return { a, b, ids };
}

describe('a forward the leader is slow over', () => {
  it.each([
    ['its sender gives up waiting and re-sends', FORWARD_TIMEOUT_MS + 500, false],
    ['its sender restarts with the batch in its outbox and re-sends', 4000, true],
  ] as const)('stores the events it carries once when %s', async (_case, delayMs, restart) => {
    const cluster = await SimCluster.create({ seed: 11, size: 3 });
    try {
      const { a, b, ids } = await flaggedForwardHeld(cluster, delayMs);
      if (restart) {
        await cluster.crash(b);
        await cluster.restart(b);
      }
      await until(cluster, `${b.name}'s outbox is empty`, () => b.store?.outboxCount === 0);
      await cluster.scheduler.runFor(FORWARD_TIMEOUT_MS * 2);
      expect(await entriesOf(a, ids)).toEqual([...ids].sort());
    } finally {
      await cluster.close();
    }
  });

  it('stores the events it carries once when it is written after its sender re-sent them to another leader and this node leads again', async () => {
    const cluster = await SimCluster.create({ seed: 11, size: 3 });
    try {
      const { a, b, ids } = await flaggedForwardHeld(cluster, 150_000);
      // A steps down; another leader stores B's re-send (looked up, flags cleared), and A pulls it.
      a.cluster!.elector.stepDown('test: hand over');
      await until(cluster, 'another leader', () => cluster.leader() !== undefined && cluster.leader() !== a);
      await until(cluster, `${b.name}'s outbox is empty`, () => b.store?.outboxCount === 0);
      await until(cluster, `${a.name} holds the re-sent events`, () => a.store!.position.lastSeq >= cluster.leader()!.store!.position.lastSeq);
      // The others step down until A leads again, with its held forward still to be written.
      await until(cluster, `${a.name} leads again`, () => {
        const leader = cluster.leader();
        if (leader !== undefined && leader !== a) leader.cluster!.elector.stepDown('test: until a leads');
        return leader === a && a.cluster!.isLeader();
      });
      await cluster.scheduler.runFor(160_000);
      expect(await entriesOf(a, ids)).toEqual([...ids].sort());
    } finally {
      await cluster.close();
    }
  });
});
