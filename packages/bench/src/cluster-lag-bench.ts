import type { BenchCluster, StepDown } from './bench-cluster.js';
import { absoluteNowMs, sleep } from './clock.js';
import { startProcessCpuMonitor, type ProcessCpuShare } from './cpu-monitor.js';
import { httpRequest, keepAliveAgent } from './http-client.js';
import { latencyStats, type LatencyStats } from './latency-stats.js';
import { seenAt, startSeqPoller, type SeqSample } from './seq-poller.js';
import { createEventGenerator, type GeneratedEvent } from '@auditlake/testkit';

export interface ClusterLagOptions {
  seed: number;
  /** Offered load, events per second, all sent to the leader. */
  eventsPerSecond: number;
  batchSize: number;
  /** Paced load before measuring (JIT, connections, LevelDB), not reported. */
  warmupSeconds: number;
  seconds: number;
  /** How often each standby's applied seq is read. */
  pollMs: number;
}

export interface ClusterLagResult {
  batches: number;
  events: number;
  /** Sending: the schedule's rate and how far a request's actual start slipped behind it. */
  offeredEventsPerSecond: number;
  achievedEventsPerSecond: number;
  sendSlipMs: LatencyStats;
  /** The leader's 200 → the first standby has applied the batch's highest seq (what ack=replicated waits for). */
  firstStandby: LatencyStats;
  /** The leader's 200 → both standbys have applied it. */
  allStandbys: LatencyStats;
  /** Per standby, the leader's 200 → that standby has applied it. */
  perStandby: Record<string, LatencyStats>;
  /** Leader ingest request latency (send → 200). */
  ingestLatency: LatencyStats;
  /** Reads of each standby's applied seq: how many, and their round trip (the method's resolution). */
  polls: number;
  pollRoundTrip: LatencyStats;
  /** The largest gap between two consecutive reads of one standby (resolution at worst). */
  pollGapMaxMs: number;
  cpu: ProcessCpuShare;
  leader: string;
  standbys: string[];
  termBefore: number;
  termAfter: number;
  /** Leaders that stepped down during the run (warm-up included), from the nodes' logs. */
  stepDowns: StepDown[];
  /**
   * What the reads alone cost, measured on the idle cluster right before the warm-up: CPU cores
   * each standby and the bench spent while being read every `pollMs` (no ingest). Absent in
   * figures stored by runs before it was measured.
   */
  pollCost?: { standbyCores: Record<string, number | undefined>; benchCores: number; seconds: number } | undefined;
}

interface SentBatch {
  ids: string[];
  scheduledAt: number;
  sentAt: number;
  ackedAt: number;
}

const POLL_COST_SECONDS = 3;

/** CPU the standbys and the bench spend on the reads alone: idle cluster, read every `pollMs`. */
async function measurePollCost(cluster: BenchCluster, standbys: number[], pollMs: number): Promise<ClusterLagResult['pollCost']> {
  const pollers = standbys.map((i) => startSeqPoller(() => cluster.appliedSeq(i), pollMs));
  await sleep(500); // connections up, JIT warm
  const stopCpu = startProcessCpuMonitor(Object.fromEntries(standbys.map((i) => [`node${i}`, cluster.pids()[`node${i}`] ?? -1])));
  await sleep(POLL_COST_SECONDS * 1000);
  const cpu = stopCpu();
  await Promise.all(pollers.map((p) => p.stop()));
  return { standbyCores: cpu.processes, benchCores: cpu.ownCores, seconds: POLL_COST_SECONDS };
}

/**
 * Replication lag at a steady, paced load on the leader. Batches of `batchSize` generated
 * events, each with a known eventId, go to the leader on a fixed schedule (open loop: a slow
 * answer does not delay the next send). Meanwhile each standby's own `GET /admin/cluster` is
 * read every `pollMs` (for itself a node reports its store's last applied seq). Afterwards the
 * leader's log maps every eventId to its seq, so each batch's highest seq is known exactly, and
 * a batch's lag is the first read showing that seq on a standby minus the leader's 200.
 */
export async function runClusterLagBench(cluster: BenchCluster, options: ClusterLagOptions): Promise<ClusterLagResult> {
  const before = await cluster.waitForSteady(30_000);
  const mark = cluster.outputMark();
  const leader = before.leader;
  const standbys = Array.from({ length: cluster.size }, (_, i) => i).filter((i) => i !== leader);
  const agent = keepAliveAgent(64);
  const url = new URL('/v1/api/audit', cluster.url(leader));
  const headers = { authorization: `Token ${cluster.ingestToken}`, 'content-type': 'application/json' };
  const intervalMs = (1000 * options.batchSize) / options.eventsPerSecond;
  const generator = createEventGenerator({ seed: options.seed, startTs: Date.now() - 3_600_000, spanMs: 3_600_000 });
  const runTag = Date.now().toString(36);

  const body = (phase: string, k: number): { ids: string[]; buffer: Buffer } => {
    const events: GeneratedEvent[] = generator.batch(options.batchSize);
    const ids = events.map((event, i) => (event.eventId = `bench-lag-${runTag}-${phase}-${k}-${i}`));
    return { ids, buffer: Buffer.from(JSON.stringify(events)) };
  };

  /** Sends `count` batches on the schedule; resolves once every one is answered. */
  const paced = async (phase: string, count: number): Promise<SentBatch[]> => {
    const bodies = Array.from({ length: count }, (_, k) => body(phase, k));
    const sent: SentBatch[] = [];
    const inFlight: Array<Promise<void>> = [];
    let failure: unknown;
    const start = absoluteNowMs() + 20;
    for (let k = 0; k < count; k++) {
      const scheduledAt = start + k * intervalMs;
      await sleep(scheduledAt - absoluteNowMs());
      const { ids, buffer } = bodies[k] as { ids: string[]; buffer: Buffer };
      const sentAt = absoluteNowMs();
      inFlight.push(
        httpRequest(agent, url, { method: 'POST', headers, body: buffer, timeoutMs: 30_000 }).then(
          (res) => {
            const ackedAt = absoluteNowMs();
            if (res.status !== 200) failure ??= new Error(`leader ingest answered ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
            else sent.push({ ids, scheduledAt, sentAt, ackedAt });
          },
          (err: unknown) => {
            failure ??= err;
          },
        ),
      );
      if (failure !== undefined) break;
    }
    await Promise.all(inFlight);
    if (failure !== undefined) throw failure instanceof Error ? failure : new Error(`leader ingest failed: ${JSON.stringify(failure)}`);
    return sent.sort((a, b) => a.scheduledAt - b.scheduledAt);
  };

  try {
    const pollCost = await measurePollCost(cluster, standbys, options.pollMs);
    await paced('warmup', Math.ceil((options.warmupSeconds * 1000) / intervalMs));
    const settled = await cluster.waitForSteady(60_000);
    if (settled.leader !== leader) throw new Error(`leadership moved from node${leader} to node${settled.leader} during the warm-up`);

    const pollers = standbys.map((i) => startSeqPoller(() => cluster.appliedSeq(i), options.pollMs));
    const stopCpu = startProcessCpuMonitor(cluster.pids());
    let sent: SentBatch[];
    try {
      sent = await paced('measured', Math.max(1, Math.round((options.seconds * 1000) / intervalMs)));
      const leaderEnd = await cluster.appliedSeq(leader);
      // Keep reading until both standbys hold everything the leader acknowledged.
      await Promise.all(
        standbys.map(async (i, n) => {
          const deadline = absoluteNowMs() + 60_000;
          const samples = (pollers[n] as { samples: SeqSample[] }).samples;
          while ((samples[samples.length - 1]?.seq ?? 0) < leaderEnd) {
            if (absoluteNowMs() > deadline) throw new Error(`node${i} did not apply seq ${leaderEnd} within 60 s of the last ack`);
            await sleep(options.pollMs);
          }
        }),
      );
    } finally {
      await Promise.all(pollers.map((p) => p.stop()));
    }
    const cpu = stopCpu();
    const after = await cluster.waitForSteady(30_000);

    // eventId → seq from the leader's log, read after the run (outside the measurement).
    const seqOf = new Map<string, number>();
    await cluster.readLog(leader, settled.seq, settled.term, (entries) => {
      for (const e of entries) seqOf.set(e.eventId, e.seq);
    });
    const firstStandby: number[] = [];
    const allStandbys: number[] = [];
    const perStandby: number[][] = standbys.map(() => []);
    for (const batch of sent) {
      const maxSeq = Math.max(...batch.ids.map((id) => seqOf.get(id) ?? Number.NaN));
      if (!Number.isFinite(maxSeq)) throw new Error(`an acknowledged batch is missing from the leader's log (${batch.ids[0]} …)`);
      const lags = pollers.map((p, n) => {
        const at = seenAt(p.samples, maxSeq);
        if (at === undefined) throw new Error(`node${standbys[n]} never showed seq ${maxSeq}`);
        return at - batch.ackedAt;
      });
      lags.forEach((lag, n) => perStandby[n]?.push(lag));
      firstStandby.push(Math.min(...lags));
      allStandbys.push(Math.max(...lags));
    }
    const samples = pollers.flatMap((p) => p.samples);
    const gaps = pollers.flatMap((p) => p.samples.slice(1).map((s, k) => s.receivedAt - (p.samples[k] as SeqSample).sentAt));
    const first = sent[0] as SentBatch;
    const last = sent[sent.length - 1] as SentBatch;
    const events = sent.length * options.batchSize;
    return {
      batches: sent.length,
      events,
      offeredEventsPerSecond: options.eventsPerSecond,
      achievedEventsPerSecond: (events - options.batchSize) / ((last.sentAt - first.sentAt) / 1000),
      sendSlipMs: latencyStats(sent.map((b) => b.sentAt - b.scheduledAt)),
      firstStandby: latencyStats(firstStandby),
      allStandbys: latencyStats(allStandbys),
      perStandby: Object.fromEntries(standbys.map((i, n) => [`node${i}`, latencyStats(perStandby[n] ?? [])])),
      ingestLatency: latencyStats(sent.map((b) => b.ackedAt - b.sentAt)),
      polls: samples.length,
      pollRoundTrip: latencyStats(samples.map((s) => s.receivedAt - s.sentAt)),
      pollGapMaxMs: Math.max(0, ...gaps),
      cpu,
      leader: `node${leader}`,
      standbys: standbys.map((i) => `node${i}`),
      termBefore: before.term,
      termAfter: after.term,
      stepDowns: cluster.stepDowns(mark),
      pollCost,
    };
  } finally {
    agent.destroy();
  }
}
