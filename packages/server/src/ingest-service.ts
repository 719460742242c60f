import { AuditError, AuditErrorCode, keepSampledRead, type EncodedEvent } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';
import type { ParsedEvent } from './ingest-parse.js';
import type { IngestParsePool } from './ingest-parse-pool.js';
import type { Membership } from './membership.js';
import type { NodeMetrics } from './metrics.js';
import type { SettingsService } from './settings-service.js';

export interface IngestResponse {
  status: 'ok';
  /** Events accepted: newly stored plus those already stored under the same eventId. */
  ingested: number;
  /**
   * Present when some of the accepted events were already stored under the same eventId, or
   * repeated one in the request: they are kept once. A standby counts those its replica of the
   * log already holds; one still on its way to the leader from another request counts as new.
   */
  duplicates?: number;
  /** Present when read sampling dropped some events. */
  sampledOut?: number;
}

export interface IngestOptions {
  /** `?ack=replicated`: answer only once the leader stored the events and a standby applied them. */
  ackReplicated: boolean;
}

export interface IngestServiceOptions {
  /** This node's store: a standby counts duplicates against its replica of the log. */
  store: AuditStore;
  parser: IngestParsePool;
  settings: SettingsService;
  metrics: NodeMetrics;
  membership: Membership;
  random: () => number;
  ackReplicatedTimeoutMs: number;
}

/**
 * parse and validate, all or nothing (inline, or in a parse worker when configured) → sample reads (DENY never) →
 * durable write (log when leading, outbox otherwise) → answer; with `ack=replicated`, also
 * wait for a standby.
 */
export class IngestService {
  readonly #options: IngestServiceOptions;

  constructor(options: IngestServiceOptions) {
    this.#options = options;
  }

  /** `body` is the request body's bytes: parsed in a worker thread when the pool has any. */
  async ingest(body: Uint8Array, options: IngestOptions = { ackReplicated: false }): Promise<IngestResponse> {
    const { metrics, settings, parser } = this.#options;
    const parsed = await parser.parse(body, Date.now(), settings.effective.redactKeys, this.#options.store.chainEnabled);
    if (!parsed.ok) {
      metrics.eventsRefused.inc(parsed.refused);
      throw new AuditError(parsed.code, parsed.message);
    }
    const sampling = settings.effective;
    const kept = parsed.events.filter((event) => !event.subjectToSampling || keepSampledRead(sampling, this.#options.random));
    const sampledOut = parsed.events.length - kept.length;
    if (sampledOut > 0) metrics.eventsSampledOut.inc(sampledOut);
    // Refused before anything is stored: without a cluster nothing can ever confirm it.
    if (options.ackReplicated && !this.#options.membership.coordinated) {
      throw new AuditError(AuditErrorCode.BAD_REQUEST, 'ack=replicated needs a standby, and this node runs without a cluster (--coordinator); nothing was stored — send without ack=replicated');
    }
    let duplicates = 0;
    if (kept.length > 0) {
      const freshIds = new Set(kept.filter((event) => event.freshId).map((event) => event.eventId));
      const received = await this.#options.membership.receive(kept, freshIds);
      if (received.path === 'log') {
        metrics.eventsIngested.inc(received.result.stored.length);
        duplicates = received.result.duplicates;
        if (duplicates > 0) metrics.eventsDuplicate.inc(duplicates);
      } else {
        metrics.eventsQueued.inc(kept.length);
        duplicates = await knownDuplicates(this.#options.store, kept);
      }
      if (options.ackReplicated) await this.#awaitReplicated(kept);
    }
    const response: IngestResponse = { status: 'ok', ingested: kept.length };
    if (duplicates > 0) response.duplicates = duplicates;
    if (sampledOut > 0) response.sampledOut = sampledOut;
    return response;
  }

  /**
   * On the leader: wait until a standby has confirmed the events. On a standby: wait until
   * the leader stored them. Either way all or nothing: a timeout is a 503 and the caller
   * retries (idempotent by eventId).
   */
  async #awaitReplicated(events: readonly EncodedEvent[]): Promise<void> {
    const { membership, ackReplicatedTimeoutMs } = this.#options;
    if (!(await membership.confirmReplicated(events, ackReplicatedTimeoutMs))) {
      throw new AuditError(
        AuditErrorCode.REPLICATION_TIMEOUT,
        `events not confirmed on a standby within ${ackReplicatedTimeoutMs} ms; they are stored durably on this node and will be replicated — retry with the same eventIds to confirm`,
        { retryable: true },
      );
    }
  }
}

/**
 * On a node that is not leading: how many of the events repeat one earlier in the request or
 * are in this node's replica of the log already. Only ids the client chose are looked up (an id
 * this node just assigned is new), so ingest without eventIds pays nothing for this.
 */
async function knownDuplicates(store: AuditStore, events: readonly ParsedEvent[]): Promise<number> {
  const seen = new Set<string>();
  const lookups: Array<Promise<unknown>> = [];
  let repeats = 0;
  for (const event of events) {
    if (event.freshId) continue;
    if (seen.has(event.eventId)) {
      repeats++;
      continue;
    }
    seen.add(event.eventId);
    lookups.push(store.getByEventId(event.eventId));
  }
  const found = await Promise.all(lookups);
  return repeats + found.filter((stored) => stored !== undefined).length;
}
