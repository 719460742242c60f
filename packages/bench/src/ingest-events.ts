import { createEventGenerator, type GeneratedEvent } from '@auditlake/testkit';

/** What decides the ingest events; the HTTP run and the raw LevelDB reference build them alike. */
export interface IngestEventsSpec {
  seed: number;
  startTs: number;
  spanMs: number;
  warmupEvents: number;
  events: number;
  batchSize: number;
}

export interface IngestBatches {
  warmup: GeneratedEvent[][];
  measured: GeneratedEvent[][];
}

function chunk(events: GeneratedEvent[], size: number): GeneratedEvent[][] {
  const batches: GeneratedEvent[][] = [];
  for (let i = 0; i < events.length; i += size) batches.push(events.slice(i, i + size));
  return batches;
}

/**
 * The warm-up batches then the measured ones, in arrival order over the span. Events carry no
 * eventId, as most engine plugins send them, so the node assigns ids (its fast path).
 */
export function ingestBatches(spec: IngestEventsSpec): IngestBatches {
  const generator = createEventGenerator({ seed: spec.seed, startTs: spec.startTs, spanMs: spec.spanMs, count: spec.warmupEvents + spec.events });
  return {
    warmup: chunk(generator.batch(spec.warmupEvents), spec.batchSize),
    measured: chunk(generator.batch(spec.events), spec.batchSize),
  };
}
