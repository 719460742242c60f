import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * How long a measured store size is reported before the store is measured again. Measuring
 * stats every LevelDB file of the store — tens of thousands after a year of history — on the
 * thread pool LevelDB's reads and synced writes also wait on; a scraper every second (a soak's,
 * a dashboard's) kept it busy for nothing, as the size moves slowly.
 */
export const STORE_SIZE_MAX_AGE_MS = 15_000;

/**
 * `measure`, called at most once per `maxAgeMs`: a call within that time of the last
 * measurement answers it again, and calls while one is under way share it. A failed
 * measurement is not kept.
 */
export function measuredAtMostEvery<T>(maxAgeMs: number, measure: () => Promise<T>, now: () => number = () => performance.now()): () => Promise<T> {
  let last: { value: T; atMs: number } | undefined;
  let running: Promise<T> | undefined;
  return () => {
    if (last !== undefined && now() - last.atMs < maxAgeMs) return Promise.resolve(last.value);
    running ??= measure()
      .then((value) => {
        last = { value, atMs: now() };
        return value;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
}

/**
 * The node's Prometheus metrics, in a registry of its own so several nodes in one process
 * (tests, benchmarks) never share counters.
 */
export class NodeMetrics {
  readonly registry = new Registry();
  readonly eventsIngested = new Counter({ name: 'auditlake_events_ingested_total', help: 'Events newly stored by ingest', registers: [this.registry] });
  readonly eventsQueued = new Counter({ name: 'auditlake_events_queued_total', help: 'Events received while not leading, put in the outbox for the leader', registers: [this.registry] });
  readonly eventsForwarded = new Counter({ name: 'auditlake_events_forwarded_total', help: 'Outbox events the leader has stored', registers: [this.registry] });
  readonly forwardAttemptsExhausted = new Counter({ name: 'auditlake_forward_attempts_exhausted_total', help: 'Times forwarding failed auditlake.metadata.forward.max.attempts times in a row (events kept in the outbox)', registers: [this.registry] });
  readonly outboxOverCapacity = new Counter({ name: 'auditlake_outbox_over_capacity_total', help: 'Times the outbox grew past auditlake.metadata.forward.queue.capacity (events kept)', registers: [this.registry] });
  readonly eventsDiverted = new Counter({ name: 'auditlake_events_diverted_total', help: 'Events moved from a divergent log suffix back to the outbox', registers: [this.registry] });
  readonly divergencesFound = new Counter({
    name: 'auditlake_replication_divergences_total',
    help: 'Pulls this node answered as leader from a standby whose log diverged from its own (the standby then moves its divergent entries to its outbox)',
    registers: [this.registry],
  });
  readonly eventsTiered = new Counter({ name: 'auditlake_events_tiered_total', help: 'Events committed to S3 by the tiering sweep', registers: [this.registry] });
  readonly bytesTiered = new Counter({ name: 'auditlake_tiered_bytes_total', help: 'Bytes of data files committed to S3 by the tiering sweep', registers: [this.registry] });
  readonly eventsDuplicate = new Counter({ name: 'auditlake_events_duplicate_total', help: 'Ingested events whose eventId was already stored with the same content (retries, kept once)', registers: [this.registry] });
  readonly eventIdConflicts = new Counter({
    name: 'auditlake_event_id_conflicts_total',
    help: 'Events this node refused, leading, because their eventId holds an event with other content (the first stored is kept; each is recorded in an audit:EventIdConflict event)',
    registers: [this.registry],
  });
  readonly resendsUnchecked = new Counter({
    name: 'auditlake_events_resend_unchecked_total',
    help: 'Ingested events that may re-send one retention deleted after tiering it, stored as new without looking in the tier because it could not be read (the tier may then hold them twice)',
    registers: [this.registry],
  });
  readonly eventsRefused = new Counter({ name: 'auditlake_events_refused_total', help: 'Events in ingest requests refused as invalid or too large', registers: [this.registry] });
  readonly eventsSampledOut = new Counter({ name: 'auditlake_events_sampled_out_total', help: 'data:Select events dropped by read sampling', registers: [this.registry] });
  readonly tierSweepFailures = new Counter({ name: 'auditlake_tier_sweep_failures_total', help: 'Tiering sweeps that failed (each is retried with backoff)', registers: [this.registry] });
  readonly eventsPruned = new Counter({ name: 'auditlake_events_pruned_total', help: 'Events deleted locally by retention', registers: [this.registry] });
  readonly pruneRuns = new Counter({ name: 'auditlake_prune_batches_total', help: 'Retention prune batches run', registers: [this.registry] });
  readonly accessDenied = new Counter({ name: 'auditlake_access_denied_total', help: 'Requests refused: 401, 403, or 429 for a client past its refusal threshold', labelNames: ['status'] as const, registers: [this.registry] });
  readonly accessDeniedUnrecorded = new Counter({ name: 'auditlake_access_denied_unrecorded_total', help: 'Refused requests not recorded as audit events because of the rate bound', registers: [this.registry] });
  readonly httpDuration = new Histogram({
    name: 'auditlake_http_request_duration_seconds',
    help: 'HTTP request latency',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  constructor(storeSizeBytes: () => Promise<number>, outboxCount: () => number, leveldbMemoryBytes: () => number = () => 0) {
    const storeSize = measuredAtMostEvery(STORE_SIZE_MAX_AGE_MS, storeSizeBytes);
    // The standard process and Node.js metrics (CPU, memory, event loop lag, GC, handles).
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'auditlake_outbox_events',
      help: 'Events waiting in this node\'s outbox to be stored by the leader',
      registers: [this.registry],
      collect() {
        this.set(outboxCount());
      },
    });
    new Gauge({
      name: 'auditlake_leveldb_memory_bytes',
      help: 'Memory LevelDB holds by its own estimate: memtables (also older ones an open iterator pins) and its block cache',
      registers: [this.registry],
      collect() {
        this.set(leveldbMemoryBytes());
      },
    });
    new Gauge({
      name: 'auditlake_store_size_bytes',
      help: `Bytes of the local LevelDB store on disk (measured at most every ${STORE_SIZE_MAX_AGE_MS / 1000} s)`,
      registers: [this.registry],
      async collect() {
        this.set(await storeSize());
      },
    });
  }
}
