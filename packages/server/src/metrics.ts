import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The node's Prometheus metrics, in a registry of its own so several nodes in one process
 * (tests, benchmarks) never share counters.
 */
export class NodeMetrics {
  readonly registry = new Registry();
  readonly eventsIngested = new Counter({ name: 'auditlake_events_ingested_total', help: 'Events newly stored by ingest', registers: [this.registry] });
  readonly eventsDuplicate = new Counter({ name: 'auditlake_events_duplicate_total', help: 'Ingested events whose eventId was already stored (kept once)', registers: [this.registry] });
  readonly eventsRefused = new Counter({ name: 'auditlake_events_refused_total', help: 'Events in ingest requests refused as invalid or too large', registers: [this.registry] });
  readonly eventsSampledOut = new Counter({ name: 'auditlake_events_sampled_out_total', help: 'data:Select events dropped by read sampling', registers: [this.registry] });
  readonly eventsPruned = new Counter({ name: 'auditlake_events_pruned_total', help: 'Events deleted locally by retention', registers: [this.registry] });
  readonly pruneRuns = new Counter({ name: 'auditlake_prune_batches_total', help: 'Retention prune batches run', registers: [this.registry] });
  readonly accessDenied = new Counter({ name: 'auditlake_access_denied_total', help: 'Requests refused with 401 or 403', labelNames: ['status'] as const, registers: [this.registry] });
  readonly accessDeniedUnrecorded = new Counter({ name: 'auditlake_access_denied_unrecorded_total', help: 'Refused requests not recorded as audit events because of the rate bound', registers: [this.registry] });
  readonly httpDuration = new Histogram({
    name: 'auditlake_http_request_duration_seconds',
    help: 'HTTP request latency',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  constructor(storeSizeBytes: () => Promise<number>) {
    new Gauge({
      name: 'auditlake_store_size_bytes',
      help: 'Bytes of the local LevelDB store on disk',
      registers: [this.registry],
      async collect() {
        this.set(await storeSizeBytes());
      },
    });
  }
}
