import { FaultInjector } from './fault-injector.js';
import { checkIngestTimes, checkLedger, checkLogs } from './properties.js';
import { Random } from './random.js';
import { SimCluster } from './sim-cluster.js';
import type { Acked } from './workload.js';

export interface RunOptions {
  seed: number;
  /** Nodes (3–5); default chosen by the seed. */
  size?: number;
  /** Virtual ms of ingest under faults. */
  faultMs?: number;
  /** Virtual ms the healed cluster has to converge. */
  convergeMs?: number;
  /** Each node's wall clock ahead of real time, by index (SimClusterOptions.clockSkewsMs). */
  clockSkewsMs?: readonly number[];
  root?: string;
}

export interface RunResult {
  seed: number;
  size: number;
  /** Every property that failed; empty when the run passed. */
  violations: string[];
  /** Digest of every event taken: two runs of a seed must have the same. */
  trace: string;
  steps: number;
  virtualMs: number;
  acked: number;
  ackedReplicated: number;
  /** The failure report (timeline, node states and logs) when the run failed. */
  diagnostics?: string;
}

/**
 * One simulated run: a cluster of real nodes, clients ingesting to every node, random
 * overlapping faults for `faultMs`; then every fault heals and the cluster must converge, and
 * properties 1–6 are checked. The same seed always makes the same run.
 */
export async function runSeed(options: RunOptions): Promise<RunResult> {
  const size = options.size ?? 3 + new Random(options.seed).fork('size').int(0, 2);
  const cluster = await SimCluster.create({ seed: options.seed, size, ...(options.root ? { root: options.root } : {}), ...(options.clockSkewsMs ? { clockSkewsMs: options.clockSkewsMs } : {}) });
  try {
    const faults = new FaultInjector(cluster, cluster.random.fork('faults'));
    // A calm start: the first leader is elected before faults begin.
    await cluster.scheduler.runUntil(() => cluster.leader() !== undefined, 10_000);
    cluster.workload.start();
    faults.start();
    await cluster.scheduler.runFor(options.faultMs ?? 20_000);
    faults.stop();
    cluster.workload.stop();
    await cluster.heal();
    return await finish(cluster, size, options.convergeMs ?? 60_000);
  } finally {
    await cluster.close();
  }
}

/**
 * Lets the healed cluster converge, then checks the properties. `mustSurvive` picks the
 * acknowledged events property 1 holds for (all of them, unless a scenario wiped a disk).
 */
export async function finish(cluster: SimCluster, size: number, convergeMs: number, mustSurvive: (acked: Acked) => boolean = () => true): Promise<RunResult> {
  const converged = await cluster.scheduler.runUntil(() => cluster.converged(), convergeMs);
  // Requests still in flight when faults stopped get their answers (or time out) meanwhile.
  await cluster.scheduler.runFor(1000);
  const violations = [...cluster.errors, ...cluster.workload.violations];
  if (!converged) violations.push(`liveness: the healed cluster did not converge within ${convergeMs} virtual ms`);
  const acked = [...cluster.workload.acked.values()].filter(mustSurvive);
  const logs = await cluster.logs();
  violations.push(...checkLogs(logs, acked));
  for (const [name, ledger] of await cluster.ledgers()) violations.push(...checkLedger(name, logs.get(name) ?? [], ledger));
  for (const [name, log] of logs) violations.push(...checkIngestTimes(name, log));
  const result: RunResult = {
    seed: cluster.seed,
    size,
    violations,
    trace: cluster.scheduler.traceDigest(),
    steps: cluster.scheduler.steps,
    virtualMs: cluster.scheduler.nowMs,
    acked: acked.length,
    ackedReplicated: acked.filter((a) => a.ack === 'replicated').length,
  };
  if (violations.length > 0) result.diagnostics = cluster.diagnostics();
  return result;
}
