// Goal: a forward the leader takes longer over than its sender waits cannot store its events
// twice. The sender gives up and re-sends the batch with the ids' "new" flags cleared (they are
// looked up, and stored); the first attempt, reaching the leader's writer after that, must look
// its flagged ids up too (review: it stored them again, three events twice in every log).
// The seeded simulator: real stores and cluster code, virtual time and network.
import { encodeEvent, newEventId, type EncodedEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { FORWARD_FRESH_IDS_TRUSTED_MS, FORWARD_TIMEOUT_MS } from '@auditlake/cluster';
import { SimCluster } from '../src/sim-cluster.js';
import type { SimNode } from '../src/sim-node.js';
import { until } from './sim-steps.js';

describe('a forward slower than its sender waits', () => {
  it('stores the events it carries once, though its retry with the flags cleared was stored first', async () => {
    const cluster = await SimCluster.create({ seed: 11, size: 3 });
    try {
      await until(cluster, 'a leader', () => cluster.leader() !== undefined);
      const a = cluster.leader() as SimNode;
      const b = cluster.nodes.find((node) => node !== a) as SimNode;
      await until(cluster, `${b.name} follows ${a.name}`, () => b.cluster?.leader?.nodeId === a.nodeId);
      // A's first handling of a forward with flagged ids waits past the sender's deadline before its append (a slow tier lookup, a busy writer).
      const aStore = a.store!;
      const append = aStore.appendEncoded.bind(aStore);
      let delayed = 0;
      aStore.appendEncoded = async (events, options = {}) => {
        if (delayed === 0 && (options.freshIds?.size ?? 0) > 0) {
          delayed++;
          await new Promise<void>((resolve) => a.clock.setTimer(resolve, FORWARD_TIMEOUT_MS + 500));
        }
        return append(events, options);
      };
      expect(FORWARD_TIMEOUT_MS + 500).toBeGreaterThan(FORWARD_FRESH_IDS_TRUSTED_MS);
      // Events B gave ids of its own (sent without one), as ingest does.
      const events: EncodedEvent[] = cluster.workload.events(3).map((event, i) => encodeEvent({ ...event, eventId: `${newEventId(b.clock.wallMs())}-${i}` }));
      const ids = events.map((event) => event.eventId);
      await b.cluster!.receive(events, new Set(ids));
      await until(cluster, `${a.name} holds the events and ${b.name}'s outbox is empty`, () => b.store!.outboxCount === 0 && delayed === 1);
      await cluster.scheduler.runFor(FORWARD_TIMEOUT_MS * 2);
      const log = await aStore.readEncodedBySeq(0, 1000);
      const stored = log.map((entry) => (JSON.parse(new TextDecoder().decode(entry)) as { eventId: string }).eventId).filter((id) => ids.includes(id));
      expect(stored.sort()).toEqual([...ids].sort());
    } finally {
      await cluster.close();
    }
  });
});
