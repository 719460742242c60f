// Goal: three real nodes and a real Redis under random, overlapping kill -9, SIGSTOP/SIGCONT and Redis restarts (with and without its data), with ingest to every node, lose no acknowledged event, end with one log, and answer ack=replicated only with the events on another node. The seed is printed; AUDITLAKE_CHAOS_SEED=<seed> replays the same choices.
import { mulberry32 } from '@auditlake/testkit';
import { describe, expect, it } from 'vitest';
import { expectConverged, metric, startCluster, type Cluster } from './cluster-harness.js';

const CHAOS_MS = Number(process.env['AUDITLAKE_CHAOS_MS'] ?? 45_000);
const TTL_MS = 1000;

class Choices {
  readonly #next: () => number;
  constructor(seed: number) {
    this.#next = mulberry32(seed);
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.#next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.#next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.#next() * items.length)] as T;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Ingest requests to every node; what got a 200 is acknowledged (ack=replicated ones noted).
 * Each worker draws from its own stream, so the fault choices do not depend on how many
 * requests happened to be sent.
 */
function ingest(cluster: Cluster, seed: number) {
  const acked = new Set<string>();
  const replicated = new Map<string, number>();
  let stopped = false;
  let n = 0;
  const workers = Array.from({ length: 3 }, async (_, w) => {
    const choices = new Choices(seed + 1 + w);
    while (!stopped) {
      const i = choices.int(0, 2);
      const node = cluster.nodes[i];
      const withAck = choices.chance(0.3);
      const events = Array.from({ length: 10 }, (_, j) => ({ source: 'trino', userId: `u${w}`, action: 'data:Insert', eventId: `chaos-${w}-${n}-${j}` }));
      n++;
      if (node === undefined || node.child.exitCode !== null || node.child.signalCode !== null) {
        await sleep(20);
        continue;
      }
      try {
        const res = await fetch(`${node.url}/v1/api/audit${withAck ? '?ack=replicated' : ''}`, {
          method: 'POST',
          headers: { authorization: 'Token ing-token', 'content-type': 'application/json' },
          body: JSON.stringify(events),
          signal: AbortSignal.timeout(8000),
        });
        await res.text();
        if (res.status === 200) {
          for (const e of events) {
            acked.add(e.eventId);
            if (withAck) replicated.set(e.eventId, i);
          }
        }
      } catch {
        await sleep(20);
      }
    }
  });
  return {
    acked,
    replicated,
    async stop() {
      stopped = true;
      await Promise.all(workers);
    },
  };
}

describe('randomized faults (3 real nodes, real redis-server)', () => {
  it(`loses no acknowledged event and converges after ${CHAOS_MS / 1000} s of overlapping crashes, pauses and Redis restarts`, async () => {
    const seed = Number(process.env['AUDITLAKE_CHAOS_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`cluster chaos seed ${seed} (replay its choices: AUDITLAKE_CHAOS_SEED=${seed})`);
    const choices = new Choices(seed);
    const cluster = await startCluster({ size: 3, persistentRedis: true, sets: () => [`auditlake.cluster.lease.ttl.ms=${TTL_MS}`] });
    await cluster.waitForLeader();
    const load = ingest(cluster, seed);
    const faulty = new Set<number>();
    const timeline: string[] = [];
    const started = Date.now();
    const note = (what: string) => timeline.push(`${Date.now() - started} ms: ${what}`);
    const pending: Array<Promise<void>> = [];
    let probes = 0;
    let redisFaulty = false;
    try {
      while (Date.now() - started < CHAOS_MS) {
        await sleep(choices.int(300, 2000));
        const kind = choices.pick(['kill', 'pause', 'pause', 'redis', 'probe'] as const);
        const healthy = [0, 1, 2].filter((i) => !faulty.has(i));
        if ((kind === 'kill' || kind === 'pause') && healthy.length > 1) {
          const i = choices.pick(healthy);
          const downMs = choices.int(300, 4000);
          faulty.add(i);
          if (kind === 'kill') {
            note(`kill -9 node${i} for ${downMs} ms`);
            await cluster.node(i).kill();
            pending.push(sleep(downMs).then(async () => {
              note(`restart node${i}`);
              await cluster.start(i);
              faulty.delete(i);
            }));
          } else {
            note(`SIGSTOP node${i} for ${downMs} ms`);
            cluster.node(i).pause();
            pending.push(sleep(downMs).then(() => {
              note(`SIGCONT node${i}`);
              cluster.node(i).resume();
              faulty.delete(i);
            }));
          }
        } else if (kind === 'redis' && !redisFaulty) {
          const keepData = choices.chance(0.5);
          const downMs = choices.int(300, 4000);
          redisFaulty = true;
          note(`kill -9 redis for ${downMs} ms, restart ${keepData ? 'with' : 'without'} its data`);
          await cluster.redis.stop();
          pending.push(sleep(downMs).then(async () => {
            if (!keepData) await cluster.redis.wipe();
            await cluster.redis.start();
            note('redis back');
            redisFaulty = false;
          }));
        } else if (kind === 'probe' && faulty.size === 0 && !redisFaulty) {
          // ack=replicated promises the events survive losing the node that answered: freeze
          // it the moment it answers and look for them in the other nodes' own logs.
          const i = choices.int(0, 2);
          const events = Array.from({ length: 5 }, (_, j) => ({ source: 'spark', userId: 'probe', action: 'data:Write', eventId: `probe-${probes}-${j}` }));
          probes++;
          const res = await fetch(`${cluster.node(i).url}/v1/api/audit?ack=replicated`, {
            method: 'POST',
            headers: { authorization: 'Token ing-token', 'content-type': 'application/json' },
            body: JSON.stringify(events),
            signal: AbortSignal.timeout(8000),
          }).catch(() => undefined);
          if (res?.status !== 200) {
            await res?.text();
            continue;
          }
          cluster.node(i).pause();
          note(`probe: node${i} answered ack=replicated; frozen while the others are read`);
          const others = await Promise.all([0, 1, 2].filter((k) => k !== i).map(async (k) => new Set((await cluster.log(k)).map((e) => e.eventId))));
          cluster.node(i).resume();
          for (const e of events) load.acked.add(e.eventId);
          expect(events.filter((e) => !others.some((ids) => ids.has(e.eventId))).map((e) => e.eventId), `seed ${seed}: ack=replicated events on no other node\n${timeline.join('\n')}`).toEqual([]);
        }
      }
      note('heal');
      await Promise.all(pending);
      await load.stop();
      const log = await expectConverged(cluster, [0, 1, 2], load.acked, 90_000);
      const replicatedLost = [...load.replicated.keys()].filter((id) => !log.some((e) => e.eventId === id));
      expect(replicatedLost).toEqual([]);
      await expect.poll(async () => Promise.all([0, 1, 2].map((i) => metric(cluster.node(i).url, 'auditlake_outbox_events'))), { timeout: 30_000 }).toEqual([0, 0, 0]);
      console.log(`cluster chaos seed ${seed}: ${load.acked.size} acknowledged (${load.replicated.size} with ack=replicated), ${probes} probes, log of ${log.length}\n${timeline.join('\n')}`);
    } catch (err) {
      throw new Error(`cluster chaos seed ${seed} failed (replay its choices: AUDITLAKE_CHAOS_SEED=${seed})\n${timeline.join('\n')}\n${String(err)}`, { cause: err });
    }
  }, 300_000);
});
