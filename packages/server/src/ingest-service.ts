import { AuditError, AuditErrorCode, keepSampledRead, type EncodedEvent } from '@auditlake/model';
import type { AuditStore, EventIdConflict } from '@auditlake/store';
import type { ConflictRecorder } from './conflict-recorder.js';
import type { IngestParsePool } from './ingest-parse-pool.js';
import type { Membership } from './membership.js';
import type { NodeMetrics } from './metrics.js';
import type { SettingsService } from './settings-service.js';

export interface IngestResponse {
  status: 'ok';
  /**
   * Events accepted (none of them is to be sent again): newly stored, plus duplicates, plus
   * conflicts.
   */
  ingested: number;
  /**
   * Present when some of the accepted events were already stored under the same eventId with
   * the same content, or repeated one in the request: retries, kept once. A standby counts
   * those its replica of the log already holds; one still on its way to the leader from another
   * request counts as new.
   */
  duplicates?: number;
  /**
   * Present when some of the accepted events were refused because their eventId holds an event
   * with other content (stored before, or earlier in the request): the event stored first is
   * kept, and the refusal is recorded (an `audit:EventIdConflict` event). Not in `duplicates`.
   * A standby counts them as it counts duplicates.
   */
  conflicts?: number;
  /** With `conflicts`: the eventIds refused, in request order, at most CONFLICT_IDS_ANSWERED_MAX. */
  conflictEventIds?: string[];
  /** Present when read sampling dropped some events. */
  sampledOut?: number;
}

/** Refused eventIds an ingest answer names (it counts them all in `conflicts`). */
export const CONFLICT_IDS_ANSWERED_MAX = 100;

/** Who sent a request, for the record of what it had refused. */
export interface IngestSender {
  principal: string;
  clientAddress: string;
}

export interface IngestOptions {
  /** `?ack=replicated`: answer only once the leader stored the events and a standby applied them. */
  ackReplicated: boolean;
  sender?: IngestSender;
}

export interface IngestServiceOptions {
  /** This node's store: a standby counts duplicates against its replica of the log. */
  store: AuditStore;
  parser: IngestParsePool;
  settings: SettingsService;
  metrics: NodeMetrics;
  membership: Membership;
  /** Records eventId conflicts this node refused (leading). */
  conflicts: ConflictRecorder;
  nodeId: string;
  log: { warn(obj: object, msg: string): void };
  random: () => number;
  ackReplicatedTimeoutMs: number;
  /**
   * `auditlake.ingest.sources.*`: the sourceIds each principal may send. Empty: sourceIds are
   * not bound. Checked here, on the node that received the request and knows its sender,
   * before anything of it is stored or sampled; a forwarded or replicated event was checked
   * where it was received.
   */
  sourceBindings: ReadonlyMap<string, readonly string[]>;
  /** This node's clock (default Date.now): the time of an event sent without `ts`. */
  now?: () => number;
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
    const { metrics, settings, parser, sourceBindings } = this.#options;
    // Bound sourceIds: a request without a known sender (none reaches here through HTTP) may send none.
    const sender = sourceBindings.size === 0 ? undefined : { principal: options.sender?.principal ?? 'unknown', sourceIds: sourceBindings.get(options.sender?.principal ?? '') ?? [] };
    const nowMs = (this.#options.now ?? Date.now)();
    // A `ts` is judged "ahead" against the later of this clock and the log's ingest clock, which
    // keeps the time the leaders stamped: a node whose clock is slow (a standby, or a leader
    // after a failover) does not refuse correctly timed events as from the future (review).
    const parsed = await parser.parse(body, nowMs, settings.effective.redactKeys, this.#options.store.chainEnabled, sender, Math.max(nowMs, this.#options.store.ingestNow()));
    if (!parsed.ok) {
      metrics.eventsRefused.inc(parsed.refused);
      throw new AuditError(parsed.code, parsed.message);
    }
    const sampling = settings.effective;
    const kept: typeof parsed.events = [];
    const dropped: typeof parsed.events = [];
    for (const event of parsed.events) (!event.subjectToSampling || keepSampledRead(sampling, this.#options.random) ? kept : dropped).push(event);
    const sampledOut = dropped.length;
    // Refused before anything is stored: without a cluster nothing can ever confirm it.
    if (options.ackReplicated && !this.#options.membership.coordinated) {
      throw new AuditError(AuditErrorCode.BAD_REQUEST, 'ack=replicated needs a standby, and this node runs without a cluster (--coordinator); nothing was stored — send without ack=replicated');
    }
    if (sampledOut > 0) {
      metrics.eventsSampledOut.inc(sampledOut);
      // Dropped on purpose, not lost: their sourceSeqs go into the completeness ledger as
      // received first, or the ledger would report them as holes (events that never arrived).
      await this.#options.store.recordReceivedNotStored(dropped);
    }
    let duplicates = 0;
    let conflicts: readonly EventIdConflict[] = [];
    if (kept.length > 0) {
      const freshIds = new Set(kept.filter((event) => event.freshId).map((event) => event.eventId));
      // Tier lookups this makes (events that may re-send deleted ones) take turns as this sender's.
      const received = await this.#options.membership.receive(kept, freshIds, options.sender?.principal ?? 'unknown');
      if (received.path === 'log') {
        metrics.eventsIngested.inc(received.result.stored.length);
        duplicates = received.result.duplicates;
        conflicts = received.result.conflicts;
        if (duplicates > 0) metrics.eventsDuplicate.inc(duplicates);
        // Refused here, so recorded here (awaited: the answer names what the log records).
        if (conflicts.length > 0) await this.#options.conflicts.record(conflicts, { ...options.sender, receivedBy: this.#options.nodeId });
      } else {
        metrics.eventsQueued.inc(kept.length);
        // Only ids the client chose are looked up (an id this node just made is new), so ingest
        // without eventIds pays nothing for this. The leader refuses and records the conflicts
        // when the outbox reaches it; the client's identity is known only here, so it is logged.
        ({ duplicates, conflicts } = await this.#options.store.knownRepeats(kept.filter((event) => !event.freshId)));
        if (conflicts.length > 0) {
          this.#options.log.warn(
            { ...options.sender, conflicts: conflicts.length, eventIds: conflicts.slice(0, CONFLICT_IDS_ANSWERED_MAX).map((c) => c.eventId) },
            'received events whose eventId holds an event with other content; the leader will refuse them (the first stored is kept) and record them',
          );
        }
      }
      if (options.ackReplicated) await this.#awaitReplicated(kept);
    }
    const response: IngestResponse = { status: 'ok', ingested: kept.length };
    if (duplicates > 0) response.duplicates = duplicates;
    if (conflicts.length > 0) {
      response.conflicts = conflicts.length;
      response.conflictEventIds = conflicts.slice(0, CONFLICT_IDS_ANSWERED_MAX).map((c) => c.eventId);
    }
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
