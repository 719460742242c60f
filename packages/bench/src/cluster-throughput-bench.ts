import { createHash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { countersDelta, type BenchCluster, type NodeCounters, type StepDown } from './bench-cluster.js';
import { startProcessCpuMonitor, type ProcessCpuShare } from './cpu-monitor.js';
import type { IngestClientCommand, IngestClientData, IngestClientMessage } from './ingest-client.js';
import type { IngestEventsSpec } from './ingest-events.js';
import { latencyStats, type LatencyStats } from './latency-stats.js';

export interface ClusterThroughputResult {
  events: number;
  requests: number;
  /** First measured request → last 200 (every batch acknowledged by the node it was sent to). */
  ackedMs: number;
  ackedEventsPerSecond: number;
  /** First measured request → every node has applied the last seq (every acked event on all nodes). */
  endToEndMs: number;
  /** The figure: events / endToEndMs. */
  eventsPerSecond: number;
  /** Last 200 → last event applied on every node (forwarding and replication still catching up). */
  drainMs: number;
  /** When each node had applied the last seq, after the first measured request (ms). */
  nodeAppliedMs: Record<string, number>;
  requestLatency: LatencyStats;
  /** CPU over first request → all applied: the bench (client worker), each node, Redis, the rest. */
  cpu: ProcessCpuShare;
  leader: string;
  termBefore: number;
  termAfter: number;
  /**
   * Every node's log checked after the round: the round's entries (warm-up and measured) are the
   * same (seq, eventId) sequence on every node, with no eventId twice. Counts include earlier rounds.
   */
  verified: { logLength: number; uniqueEventIds: number; identicalOnAllNodes: boolean };
  /** Per node, over the measured interval: server time per route and event counters (from /metrics). */
  nodes: Record<string, NodeCounters>;
  /** Leaders that stepped down during the round (warm-up included), from the nodes' logs. */
  stepDowns: StepDown[];
  /** How often each node's applied seq was read after the last 200 (absent in older stored figures: 5). */
  pollMs?: number | undefined;
}

/**
 * One round: a client worker posts the warm-up round robin to every node, waits until every
 * node has applied it, then posts the measured batches round robin (`concurrency` in flight).
 * The clock runs from the first measured request until every node has applied the last seq.
 * Seqs are contiguous and the node-assigned eventIds are de-duplicated on forward, so "every
 * node has applied seq baseline + events" means every acknowledged event is on every node; the
 * logs are read back afterwards to check exactly that.
 */
export async function runClusterThroughputRound(cluster: BenchCluster, spec: IngestEventsSpec, concurrency: number, pollMs: number): Promise<ClusterThroughputResult> {
  const urls = Array.from({ length: cluster.size }, (_, i) => cluster.url(i));
  const data: IngestClientData = { ...spec, urls, token: cluster.ingestToken, concurrency, gateAfterWarmup: true };
  const before = await cluster.waitForSteady(30_000);
  const mark = cluster.outputMark();
  // Listeners go on in the same tick as the worker starts: a message with no listener is lost.
  const worker = new Worker(new URL('./ingest-client.js', import.meta.url), { workerData: data });
  try {
    let baseline = before.seq;
    let stopCpu: (() => ProcessCpuShare) | undefined;
    let countersBefore: NodeCounters[] = [];
    const done = await new Promise<Extract<IngestClientMessage, { type: 'done' }>>((resolve, reject) => {
      worker.on('message', (message: IngestClientMessage) => {
        if (message.type === 'warmed-up') {
          // Let forwarding and replication of the warm-up finish, then measure from a settled cluster.
          cluster.waitForSteady(120_000, before.seq + spec.warmupEvents).then(
            (steady) => {
              if (steady.seq !== before.seq + spec.warmupEvents) {
                reject(new Error(`after the warm-up the nodes hold seq ${steady.seq}, expected ${before.seq + spec.warmupEvents}`));
                return;
              }
              baseline = steady.seq;
              return Promise.all(urls.map((_, i) => cluster.routeTimes(i))).then((counters) => {
                countersBefore = counters;
                stopCpu = startProcessCpuMonitor(cluster.pids());
                worker.postMessage({ type: 'go' } satisfies IngestClientCommand);
              });
            },
            reject,
          ).catch(reject);
        } else if (message.type === 'done') resolve(message);
        else if (message.type === 'failed') reject(new Error(`cluster ingest client failed: ${message.error}`));
      });
      worker.on('error', reject);
      worker.on('exit', (code) => reject(new Error(`cluster ingest client exited with ${code} before it finished`)));
    });
    const target = baseline + done.events;
    // Every acked event is on every node once each node's last applied seq reaches the target.
    const appliedAt = await Promise.all(urls.map((_, i) => cluster.waitForApplied(i, target, pollMs, 300_000)));
    const allAppliedAt = Math.max(...appliedAt);
    const cpu = stopCpu ? stopCpu() : startProcessCpuMonitor({})();
    const countersAfter = await Promise.all(urls.map((_, i) => cluster.routeTimes(i)));
    const nodes = Object.fromEntries(countersAfter.map((after, i) => [`node${i}`, countersDelta(countersBefore[i] ?? { routes: {}, counters: {} }, after)]));
    const endToEndMs = allAppliedAt - done.startedAtMs;
    const ackedMs = done.lastAckAtMs - done.startedAtMs;
    const after = await cluster.waitForSteady(30_000);
    const verified = await verifyLogs(cluster, before.seq, before.term);
    if (verified.logLength !== target || verified.uniqueEventIds !== target || !verified.identicalOnAllNodes) {
      throw new Error(`cluster logs do not hold every acknowledged event exactly once: ${JSON.stringify({ target, ...verified })}`);
    }
    return {
      events: done.events,
      requests: done.requests,
      ackedMs,
      ackedEventsPerSecond: done.events / (ackedMs / 1000),
      endToEndMs,
      eventsPerSecond: done.events / (endToEndMs / 1000),
      drainMs: allAppliedAt - done.lastAckAtMs,
      nodeAppliedMs: Object.fromEntries(appliedAt.map((t, i) => [`node${i}`, t - done.startedAtMs])),
      requestLatency: latencyStats(done.latenciesMs),
      cpu,
      leader: `node${after.leader}`,
      termBefore: before.term,
      termAfter: after.term,
      verified,
      nodes,
      stepDowns: cluster.stepDowns(mark),
      pollMs,
    };
  } finally {
    await worker.terminate();
  }
}

/**
 * Reads every node's log after `fromSeq` (the round's warm-up and measured events): length,
 * distinct eventIds, and whether all nodes hold the same (seq, eventId) sequence. The pull's
 * catch-up mode needs the term of the entry at `fromSeq`; when the guess (the term when the
 * round started) is wrong, e.g. after a failover, it reads from the start and skips.
 */
async function verifyLogs(cluster: BenchCluster, fromSeq: number, fromTerm: number): Promise<{ logLength: number; uniqueEventIds: number; identicalOnAllNodes: boolean }> {
  const digests: string[] = [];
  let logLength = 0;
  let uniqueEventIds = 0;
  for (let i = 0; i < cluster.size; i++) {
    const read = async (after: number, lastTerm: number) => {
      const hash = createHash('sha256');
      const ids = new Set<string>();
      let length = 0;
      await cluster.readLog(i, after, lastTerm, (entries) => {
        for (const e of entries) {
          if (e.seq <= fromSeq) continue;
          hash.update(`${e.seq}:${e.eventId}\n`);
          ids.add(e.eventId);
          length++;
        }
      });
      return { digest: hash.digest('hex'), ids: ids.size, length };
    };
    let result = await read(fromSeq, fromSeq === 0 ? 0 : fromTerm);
    if (result.length === 0 && fromSeq > 0) result = await read(0, 0);
    digests.push(result.digest);
    if (i === 0) {
      logLength = fromSeq + result.length;
      uniqueEventIds = fromSeq + result.ids;
    }
  }
  return { logLength, uniqueEventIds, identicalOnAllNodes: digests.every((d) => d === digests[0]) };
}
