import { BenchCluster } from './bench-cluster.js';
import type { BenchConfig } from './bench-config.js';
import { runClusterCatchUpBench, type ClusterCatchUpResult } from './cluster-catchup-bench.js';
import { runClusterFailoverBench, type ClusterFailoverResult } from './cluster-failover-bench.js';
import { runClusterLagBench, type ClusterLagResult } from './cluster-lag-bench.js';
import { runClusterThroughputRound, type ClusterThroughputResult } from './cluster-throughput-bench.js';

export const CLUSTER_SIZE = 3;
/**
 * How often the throughput run reads each node's applied seq once every batch is acknowledged:
 * the reads cost the nodes CPU they need for the drain, and over a run of tens of seconds 25 ms
 * of resolution is noise.
 */
export const THROUGHPUT_POLL_MS = 25;
/** How often the failover run reads the survivors' /health and applied seq. */
export const FAILOVER_POLL_MS = 20;
const HOUR_MS = 60 * 60 * 1000;

export interface ClusterFigures {
  nodes: number;
  /** The best round (highest end-to-end events/s) and every round. */
  throughput: ClusterThroughputResult;
  throughputRounds: ClusterThroughputResult[];
  lag: ClusterLagResult;
  failover: ClusterFailoverResult;
  /** Absent in results recorded before the catch-up run existed. */
  catchUp?: ClusterCatchUpResult;
}

/** Runs `run` on a fresh three-node cluster and always tears the cluster down. */
async function withCluster<T>(run: (cluster: BenchCluster) => Promise<T>): Promise<T> {
  const cluster = await BenchCluster.start(CLUSTER_SIZE);
  try {
    return await run(cluster);
  } finally {
    await cluster.close();
  }
}

/** The three cluster figures, each on its own fresh cluster (real processes, real Redis). */
export async function runClusterBench(config: BenchConfig, log: (message: string) => void): Promise<ClusterFigures> {
  log(`cluster throughput: ${CLUSTER_SIZE} nodes, ${config.clusterRounds} round(s) of ${config.clusterEvents} events round robin, ${config.clusterConcurrency} requests in flight…`);
  const throughputRounds = await withCluster(async (cluster) => {
    const rounds: ClusterThroughputResult[] = [];
    for (let round = 1; round <= config.clusterRounds; round++) {
      const spec = {
        seed: config.seed + round,
        startTs: Date.now() - HOUR_MS,
        spanMs: HOUR_MS,
        warmupEvents: config.clusterWarmupEvents,
        events: config.clusterEvents,
        batchSize: config.clusterBatchSize,
      };
      const r = await runClusterThroughputRound(cluster, spec, config.clusterConcurrency, THROUGHPUT_POLL_MS);
      log(
        `  round ${round}: ${Math.round(r.eventsPerSecond)} events/s on all nodes (acked at ${Math.round(r.ackedEventsPerSecond)} events/s, ` +
          `then ${(r.drainMs / 1000).toFixed(2)} s until every node had everything; other CPU ${r.cpu.otherCores?.toFixed(2) ?? 'n/a'} cores)`,
      );
      rounds.push(r);
    }
    return rounds;
  });
  const throughput = throughputRounds.reduce((a, b) => (b.eventsPerSecond > a.eventsPerSecond ? b : a));

  log(`replication lag: ${config.lagEventsPerSecond} events/s to the leader in batches of ${config.lagBatchSize} for ${config.lagSeconds} s, standbys read every ${config.lagPollMs} ms…`);
  const lag = await withCluster((cluster) =>
    runClusterLagBench(cluster, {
      seed: config.seed,
      eventsPerSecond: config.lagEventsPerSecond,
      batchSize: config.lagBatchSize,
      warmupSeconds: 3,
      seconds: config.lagSeconds,
      pollMs: config.lagPollMs,
    }),
  );
  log(`  first standby p50 ${lag.firstStandby.p50Ms.toFixed(1)} ms, p99 ${lag.firstStandby.p99Ms.toFixed(1)} ms, max ${lag.firstStandby.maxMs.toFixed(1)} ms`);

  log(`failover: ${config.failoverTrials} trials of kill -9 on the leader…`);
  const failover = await withCluster((cluster) =>
    runClusterFailoverBench(cluster, { trials: config.failoverTrials, probeIntervalMs: config.failoverProbeMs, healthPollMs: FAILOVER_POLL_MS, trialTimeoutMs: 30_000, log }),
  );

  log(`catch-up: a standby misses ${config.catchUpEvents} events, then restarts…`);
  const catchUp = await withCluster((cluster) =>
    runClusterCatchUpBench(cluster, {
      seed: config.seed,
      startTs: Date.now() - HOUR_MS,
      spanMs: HOUR_MS,
      events: config.catchUpEvents,
      batchSize: config.clusterBatchSize,
      concurrency: config.clusterConcurrency,
      pollMs: THROUGHPUT_POLL_MS,
    }),
  );
  log(`  ${catchUp.standby} was up after ${(catchUp.restartMs / 1000).toFixed(2)} s and held every event after ${(catchUp.caughtUpMs / 1000).toFixed(2)} s (${Math.round(catchUp.eventsPerSecond)} events/s)`);
  return { nodes: CLUSTER_SIZE, throughput, throughputRounds, lag, failover, catchUp };
}
