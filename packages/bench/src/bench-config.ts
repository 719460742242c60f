/**
 * Benchmark sizes and knobs, read from the environment. The defaults are the sizes;
 * smaller values make a quick run, which is reported as such and never overwrites the
 * committed BENCHMARKS.md unless BENCH_OUTPUT says so.
 */
export interface BenchConfig {
  /** Which benchmarks run: all by default. */
  only: BenchPart | 'all';
  seed: number;
  /** Events measured in the HTTP ingest run (and in each raw LevelDB reference run). */
  ingestEvents: number;
  /** Events sent (and written raw) before timing starts, so JIT and LevelDB are warm. */
  ingestWarmupEvents: number;
  ingestBatchSize: number;
  /** In-flight requests (HTTP) and in-flight batches (raw LevelDB). */
  ingestConcurrency: number;
  /**
   * Rounds of (reference, ours); the best of each is reported. This machine is shared, so the
   * best round is the one least disturbed by other work; every round is listed.
   */
  ingestRounds: number;
  /** Events loaded for the search benchmark. */
  searchEvents: number;
  /** Days the search events are spread over, ending at today's UTC midnight. */
  searchDays: number;
  /** Batch size of the `store.append` load. */
  searchLoadBatchSize: number;
  /** One-day-window requests measured. */
  searchRequests: number;
  searchLimit: number;
  /** Repetitions of the full `q` scan. */
  qScanRepetitions: number;
  /** Cluster throughput: events measured per round (sent round robin to the three nodes). */
  clusterEvents: number;
  clusterWarmupEvents: number;
  clusterBatchSize: number;
  /** In-flight requests over all three nodes. */
  clusterConcurrency: number;
  /** Rounds on one cluster; the best is reported, every round listed. */
  clusterRounds: number;
  /** Events a stopped standby misses before it is restarted and catches up. */
  catchUpEvents: number;
  /** Replication lag: offered load (events/s) sent to the leader, in batches of `lagBatchSize`. */
  lagEventsPerSecond: number;
  lagBatchSize: number;
  /** Measured seconds of paced load (after a short unreported warm-up). */
  lagSeconds: number;
  /**
   * How often each standby's applied seq is read (ms). Each read costs a node about a millisecond
   * of CPU here, so 5 ms reads of two standbys cost ~0.8 of this machine's 2 cores (measured) and
   * distorted the lag they measured; 20 ms keeps the resolution under a tenth of the target.
   */
  lagPollMs: number;
  /** Failover: trials of kill -9 leader → first replicated write. */
  failoverTrials: number;
  /** A probe write starts this often (ms) after the kill, alternating between the survivors. */
  failoverProbeMs: number;
  /** Tiering sweep: events in the local store, tiered by repeated sweeps (parquet, then iceberg). */
  tierSweepEvents: number;
  /** Days the sweep's events are spread over, ending now. */
  tierSweepDays: number;
  /** TierSweeper batchSizeMax (events per commit). */
  tierSweepBatch: number;
  /** Events of the viewer's Iceberg table. */
  tierTableEvents: number;
  tierTableDays: number;
  /** One-day-window viewer requests measured. */
  tierRequests: number;
  /** Versus PostgreSQL: events ingested into each system per round (and searched after the last). */
  pgEvents: number;
  /** Alternating ingest rounds (auditlake, PostgreSQL); best and median reported. */
  pgRounds: number;
  /** One-day-window and user searches per system. */
  pgRequests: number;
  /** Unmeasured one-day-window and user searches per system before those are measured. */
  pgWarmupRequests: number;
  /** `q` searches per system and needle. */
  pgQRepetitions: number;
  /** Growth: Iceberg commits driven into each of the two tables (without and with maintenance). */
  growthCommits: number;
  /** Events per growth commit (a 5-minute sweep's batch). */
  growthEventsPerCommit: number;
  /** The maintained table gets a maintenance run after every this many commits. */
  growthMaintenanceEvery: number;
  /** Figures are taken at 100 commits, at every multiple of this, and at the end. */
  growthCheckpointEvery: number;
  /** Soak: seconds of paced ingest into one node tiering to Iceberg. */
  soakSeconds: number;
  /** Soak: paced ingest, events/s; 0 measures it first with a closed-loop probe. */
  soakEventsPerSecond: number;
  soakProbeSeconds: number;
  /** Soak: with a probe, pace at this percent of the rate it reached. */
  soakProbePercent: number;
  soakBatchSize: number;
  /** Soak: the node's `auditlake.audit.tier.interval.ms`. */
  soakSweepIntervalMs: number;
  /** Soak: a maintenance run every this many minutes (0: the node's default, hourly). */
  soakMaintenanceMinutes: number;
  /** Soak: a row of the samples table this often (the settings latency is read every second). */
  soakSampleMs: number;
  /** Soak: after ingest stops, the backlog must be tiered within this, else the run fails. */
  soakDrainSeconds: number;
  /** Soak: 1 writes two heap snapshots of the node (middle and end of ingest) under packages/bench/results/. */
  soakHeapSnapshots: number;
  /** Integrity: rounds of HTTP ingest with the record chain off and on (ingest sizes above). */
  integrityRounds: number;
  /** Integrity: events tiered to the bucket, then verified offline. */
  integrityVerifyEvents: number;
  /** Soak: 1 makes the node write a CPU profile (`--cpu-prof`) under packages/bench/results/. */
  soakCpuProfile: number;
  /** Where the report goes; undefined picks the default for a full or a quick run. */
  outputPath: string | undefined;
}

export type BenchPart = 'ingest' | 'search' | 'cluster' | 'tiering' | 'growth' | 'soak' | 'postgres' | 'integrity';
export const BENCH_PARTS: readonly BenchPart[] = ['ingest', 'search', 'cluster', 'tiering', 'growth', 'soak', 'postgres', 'integrity'];

export const DEFAULTS = {
  seed: 20250101,
  ingestEvents: 200_000,
  ingestWarmupEvents: 10_000,
  ingestBatchSize: 500,
  ingestConcurrency: 8,
  ingestRounds: 3,
  searchEvents: 1_000_000,
  searchDays: 30,
  searchLoadBatchSize: 10_000,
  searchRequests: 200,
  searchLimit: 200,
  qScanRepetitions: 3,
  clusterEvents: 200_000,
  clusterWarmupEvents: 10_000,
  clusterBatchSize: 500,
  clusterConcurrency: 12,
  clusterRounds: 3,
  catchUpEvents: 400_000,
  lagEventsPerSecond: 5_000,
  lagBatchSize: 100,
  lagSeconds: 20,
  lagPollMs: 20,
  failoverTrials: 10,
  failoverProbeMs: 20,
  tierSweepEvents: 200_000,
  tierSweepDays: 7,
  tierSweepBatch: 5_000,
  tierTableEvents: 10_000_000,
  tierTableDays: 30,
  tierRequests: 50,
  pgEvents: 1_000_000,
  pgRounds: 3,
  pgRequests: 200,
  pgWarmupRequests: 3_000,
  pgQRepetitions: 5,
  growthCommits: 3_000,
  growthEventsPerCommit: 50,
  growthMaintenanceEvery: 100,
  growthCheckpointEvery: 500,
  soakSeconds: 300,
  soakEventsPerSecond: 0,
  soakProbeSeconds: 20,
  soakProbePercent: 70,
  soakBatchSize: 500,
  soakSweepIntervalMs: 10_000,
  soakMaintenanceMinutes: 1,
  soakSampleMs: 5_000,
  soakDrainSeconds: 600,
  soakHeapSnapshots: 0,
  integrityRounds: 3,
  integrityVerifyEvents: 1_000_000,
  soakCpuProfile: 0,
} as const;

function intFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw.replaceAll('_', ''));
  if (!Number.isSafeInteger(value) || value < min) throw new TypeError(`${name} must be an integer ≥ ${min}, got ${JSON.stringify(raw)}`);
  return value;
}

export function readBenchConfig(env: NodeJS.ProcessEnv = process.env): BenchConfig {
  const only = env['BENCH_ONLY'] || 'all';
  if (only !== 'all' && !BENCH_PARTS.includes(only as BenchPart)) throw new TypeError(`BENCH_ONLY must be all, ${BENCH_PARTS.join(', ')}, got ${only}`);
  return {
    only: only as BenchPart | 'all',
    seed: intFromEnv(env, 'BENCH_SEED', DEFAULTS.seed, 0),
    ingestEvents: intFromEnv(env, 'BENCH_INGEST_EVENTS', DEFAULTS.ingestEvents, 1),
    ingestWarmupEvents: intFromEnv(env, 'BENCH_INGEST_WARMUP_EVENTS', DEFAULTS.ingestWarmupEvents, 0),
    ingestBatchSize: intFromEnv(env, 'BENCH_INGEST_BATCH', DEFAULTS.ingestBatchSize, 1),
    ingestConcurrency: intFromEnv(env, 'BENCH_INGEST_CONCURRENCY', DEFAULTS.ingestConcurrency, 1),
    ingestRounds: intFromEnv(env, 'BENCH_INGEST_ROUNDS', DEFAULTS.ingestRounds, 1),
    searchEvents: intFromEnv(env, 'BENCH_SEARCH_EVENTS', DEFAULTS.searchEvents, 1),
    searchDays: intFromEnv(env, 'BENCH_SEARCH_DAYS', DEFAULTS.searchDays, 1),
    searchLoadBatchSize: intFromEnv(env, 'BENCH_SEARCH_LOAD_BATCH', DEFAULTS.searchLoadBatchSize, 1),
    searchRequests: intFromEnv(env, 'BENCH_SEARCH_REQUESTS', DEFAULTS.searchRequests, 1),
    searchLimit: intFromEnv(env, 'BENCH_SEARCH_LIMIT', DEFAULTS.searchLimit, 1),
    qScanRepetitions: intFromEnv(env, 'BENCH_QSCAN_REPS', DEFAULTS.qScanRepetitions, 1),
    clusterEvents: intFromEnv(env, 'BENCH_CLUSTER_EVENTS', DEFAULTS.clusterEvents, 1),
    clusterWarmupEvents: intFromEnv(env, 'BENCH_CLUSTER_WARMUP_EVENTS', DEFAULTS.clusterWarmupEvents, 0),
    clusterBatchSize: intFromEnv(env, 'BENCH_CLUSTER_BATCH', DEFAULTS.clusterBatchSize, 1),
    clusterConcurrency: intFromEnv(env, 'BENCH_CLUSTER_CONCURRENCY', DEFAULTS.clusterConcurrency, 1),
    clusterRounds: intFromEnv(env, 'BENCH_CLUSTER_ROUNDS', DEFAULTS.clusterRounds, 1),
    catchUpEvents: intFromEnv(env, 'BENCH_CATCHUP_EVENTS', DEFAULTS.catchUpEvents, 1),
    lagEventsPerSecond: intFromEnv(env, 'BENCH_LAG_RATE', DEFAULTS.lagEventsPerSecond, 1),
    lagBatchSize: intFromEnv(env, 'BENCH_LAG_BATCH', DEFAULTS.lagBatchSize, 1),
    lagSeconds: intFromEnv(env, 'BENCH_LAG_SECONDS', DEFAULTS.lagSeconds, 1),
    lagPollMs: intFromEnv(env, 'BENCH_LAG_POLL_MS', DEFAULTS.lagPollMs, 1),
    failoverTrials: intFromEnv(env, 'BENCH_FAILOVER_TRIALS', DEFAULTS.failoverTrials, 1),
    failoverProbeMs: intFromEnv(env, 'BENCH_FAILOVER_PROBE_MS', DEFAULTS.failoverProbeMs, 1),
    tierSweepEvents: intFromEnv(env, 'BENCH_TIER_SWEEP_EVENTS', DEFAULTS.tierSweepEvents, 1),
    tierSweepDays: intFromEnv(env, 'BENCH_TIER_SWEEP_DAYS', DEFAULTS.tierSweepDays, 1),
    tierSweepBatch: intFromEnv(env, 'BENCH_TIER_SWEEP_BATCH', DEFAULTS.tierSweepBatch, 1),
    tierTableEvents: intFromEnv(env, 'BENCH_TIER_TABLE_EVENTS', DEFAULTS.tierTableEvents, 1),
    tierTableDays: intFromEnv(env, 'BENCH_TIER_TABLE_DAYS', DEFAULTS.tierTableDays, 1),
    tierRequests: intFromEnv(env, 'BENCH_TIER_REQUESTS', DEFAULTS.tierRequests, 1),
    pgEvents: intFromEnv(env, 'BENCH_PG_EVENTS', DEFAULTS.pgEvents, 1),
    pgRounds: intFromEnv(env, 'BENCH_PG_ROUNDS', DEFAULTS.pgRounds, 1),
    pgRequests: intFromEnv(env, 'BENCH_PG_REQUESTS', DEFAULTS.pgRequests, 1),
    pgWarmupRequests: intFromEnv(env, 'BENCH_PG_WARMUP_REQUESTS', DEFAULTS.pgWarmupRequests, 0),
    pgQRepetitions: intFromEnv(env, 'BENCH_PG_QREPS', DEFAULTS.pgQRepetitions, 1),
    growthCommits: intFromEnv(env, 'BENCH_GROWTH_COMMITS', DEFAULTS.growthCommits, 1),
    growthEventsPerCommit: intFromEnv(env, 'BENCH_GROWTH_EVENTS_PER_COMMIT', DEFAULTS.growthEventsPerCommit, 1),
    growthMaintenanceEvery: intFromEnv(env, 'BENCH_GROWTH_MAINTENANCE_EVERY', DEFAULTS.growthMaintenanceEvery, 1),
    growthCheckpointEvery: intFromEnv(env, 'BENCH_GROWTH_CHECKPOINT_EVERY', DEFAULTS.growthCheckpointEvery, 1),
    soakSeconds: intFromEnv(env, 'BENCH_SOAK_SECONDS', DEFAULTS.soakSeconds, 1),
    soakEventsPerSecond: intFromEnv(env, 'BENCH_SOAK_RATE', DEFAULTS.soakEventsPerSecond, 0),
    soakProbeSeconds: intFromEnv(env, 'BENCH_SOAK_PROBE_SECONDS', DEFAULTS.soakProbeSeconds, 1),
    soakProbePercent: intFromEnv(env, 'BENCH_SOAK_PROBE_PERCENT', DEFAULTS.soakProbePercent, 1),
    soakBatchSize: intFromEnv(env, 'BENCH_SOAK_BATCH', DEFAULTS.soakBatchSize, 1),
    soakSweepIntervalMs: intFromEnv(env, 'BENCH_SOAK_SWEEP_INTERVAL_MS', DEFAULTS.soakSweepIntervalMs, 1),
    soakMaintenanceMinutes: intFromEnv(env, 'BENCH_SOAK_MAINTENANCE_MINUTES', DEFAULTS.soakMaintenanceMinutes, 0),
    soakSampleMs: intFromEnv(env, 'BENCH_SOAK_SAMPLE_MS', DEFAULTS.soakSampleMs, 1000),
    soakDrainSeconds: intFromEnv(env, 'BENCH_SOAK_DRAIN_SECONDS', DEFAULTS.soakDrainSeconds, 1),
    soakHeapSnapshots: intFromEnv(env, 'BENCH_SOAK_HEAP_SNAPSHOTS', DEFAULTS.soakHeapSnapshots, 0),
    integrityRounds: intFromEnv(env, 'BENCH_INTEGRITY_ROUNDS', DEFAULTS.integrityRounds, 1),
    integrityVerifyEvents: intFromEnv(env, 'BENCH_INTEGRITY_VERIFY_EVENTS', DEFAULTS.integrityVerifyEvents, 1),
    soakCpuProfile: intFromEnv(env, 'BENCH_SOAK_CPU_PROFILE', DEFAULTS.soakCpuProfile, 0),
    outputPath: env['BENCH_OUTPUT'] || undefined,
  };
}

export function runsPart(config: BenchConfig, part: BenchPart): boolean {
  return config.only === 'all' || config.only === part;
}

/** True when `part` ran at the sizes (its figures may then go into the committed report). */
export function isFullSize(config: BenchConfig, part: BenchPart): boolean {
  switch (part) {
    case 'ingest':
      return config.ingestEvents >= DEFAULTS.ingestEvents && config.ingestBatchSize === DEFAULTS.ingestBatchSize;
    case 'search':
      return config.searchEvents >= DEFAULTS.searchEvents && config.searchRequests >= DEFAULTS.searchRequests && config.searchLimit === DEFAULTS.searchLimit;
    case 'cluster':
      return (
        config.clusterEvents >= DEFAULTS.clusterEvents &&
        config.catchUpEvents >= DEFAULTS.catchUpEvents &&
        config.clusterBatchSize === DEFAULTS.clusterBatchSize &&
        config.lagEventsPerSecond === DEFAULTS.lagEventsPerSecond &&
        config.lagBatchSize === DEFAULTS.lagBatchSize &&
        config.lagSeconds >= DEFAULTS.lagSeconds &&
        config.failoverTrials >= DEFAULTS.failoverTrials
      );
    case 'tiering':
      return (
        config.tierSweepEvents >= DEFAULTS.tierSweepEvents &&
        config.tierSweepBatch === DEFAULTS.tierSweepBatch &&
        config.tierTableEvents >= DEFAULTS.tierTableEvents &&
        config.tierRequests >= 30 &&
        config.searchLimit === DEFAULTS.searchLimit
      );
    case 'growth':
      return (
        config.growthCommits >= DEFAULTS.growthCommits &&
        config.growthEventsPerCommit === DEFAULTS.growthEventsPerCommit &&
        config.growthMaintenanceEvery === DEFAULTS.growthMaintenanceEvery &&
        config.searchLimit === DEFAULTS.searchLimit
      );
    case 'soak':
      return config.soakSeconds >= DEFAULTS.soakSeconds && config.soakBatchSize === DEFAULTS.soakBatchSize && config.soakSweepIntervalMs === DEFAULTS.soakSweepIntervalMs && config.soakProbePercent === DEFAULTS.soakProbePercent && config.soakMaintenanceMinutes === DEFAULTS.soakMaintenanceMinutes && config.soakHeapSnapshots === 0 && config.soakCpuProfile === 0;
    case 'postgres':
      return (
        config.pgEvents >= DEFAULTS.pgEvents &&
        config.pgRounds >= DEFAULTS.pgRounds &&
        config.pgRequests >= DEFAULTS.pgRequests &&
        config.pgWarmupRequests >= DEFAULTS.pgWarmupRequests &&
        config.ingestBatchSize === DEFAULTS.ingestBatchSize &&
        config.ingestConcurrency === DEFAULTS.ingestConcurrency &&
        config.searchLimit === DEFAULTS.searchLimit
      );
    case 'integrity':
      return (
        config.ingestEvents >= DEFAULTS.ingestEvents &&
        config.ingestBatchSize === DEFAULTS.ingestBatchSize &&
        config.integrityRounds >= DEFAULTS.integrityRounds &&
        config.integrityVerifyEvents >= DEFAULTS.integrityVerifyEvents
      );
  }
}

/**
 * True when every part that ran ran at the issue's sizes: only such a run may refresh the
 * committed report (a run of some parts keeps the other parts' figures from the last run).
 */
export function isFullRun(config: BenchConfig): boolean {
  return BENCH_PARTS.every((part) => !runsPart(config, part) || isFullSize(config, part));
}

/** The `BENCH_*` variables of this run that differ from the defaults, as a shell prefix. */
export function benchEnvPrefix(env: NodeJS.ProcessEnv = process.env): string {
  const set = Object.keys(env)
    .filter((k) => k.startsWith('BENCH_') && k !== 'BENCH_OUTPUT' && (env[k] ?? '') !== '')
    .sort()
    .map((k) => `${k}=${env[k] ?? ''}`);
  return set.length === 0 ? '' : `${set.join(' ')} `;
}
