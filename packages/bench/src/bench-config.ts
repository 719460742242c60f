/**
 * Benchmark sizes and knobs, read from the environment. The defaults are the sizes;
 * smaller values make a quick run, which is reported as such and never overwrites the
 * committed BENCHMARKS.md unless BENCH_OUTPUT says so.
 */
export interface BenchConfig {
  /** Which benchmarks run: both by default. */
  only: 'all' | 'ingest' | 'search';
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
  /** Where the report goes; undefined picks the default for a full or a quick run. */
  outputPath: string | undefined;
}

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
} as const;

function intFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw.replaceAll('_', ''));
  if (!Number.isSafeInteger(value) || value < min) throw new TypeError(`${name} must be an integer ≥ ${min}, got ${JSON.stringify(raw)}`);
  return value;
}

export function readBenchConfig(env: NodeJS.ProcessEnv = process.env): BenchConfig {
  const only = env['BENCH_ONLY'] ?? 'all';
  if (only !== 'all' && only !== 'ingest' && only !== 'search') throw new TypeError(`BENCH_ONLY must be all, ingest or search, got ${only}`);
  return {
    only,
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
    outputPath: env['BENCH_OUTPUT'] || undefined,
  };
}

/** True when every size is the issue's: only such a run may refresh the committed report. */
export function isFullRun(config: BenchConfig): boolean {
  return (
    config.only === 'all' &&
    config.ingestEvents >= DEFAULTS.ingestEvents &&
    config.searchEvents >= DEFAULTS.searchEvents &&
    config.searchRequests >= DEFAULTS.searchRequests &&
    config.ingestBatchSize === DEFAULTS.ingestBatchSize &&
    config.searchLimit === DEFAULTS.searchLimit
  );
}
