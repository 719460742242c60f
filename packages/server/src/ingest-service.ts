import { AuditError, AuditErrorCode, keepSampledRead, type EncodedEvent } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';
import type { ParsedEvent } from './ingest-parse.js';
import type { IngestParsePool } from './ingest-parse-pool.js';
import type { Membership } from './membership.js';
import type { NodeMetrics } from './metrics.js';
import { storeReceived, type Received } from './received-events.js';
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
    const parsed = await parser.parse(body, Date.now(), settings.effective.redactKeys);
    if (!parsed.ok) {
      metrics.eventsRefused.inc(parsed.refused);
      throw new AuditError(parsed.code, parsed.message);
    }
    const sampling = settings.effective;
    const kept = parsed.events.filter((event) => !event.subjectToSampling || keepSampledRead(sampling, this.#options.random));
    const sampledOut = parsed.events.length - kept.length;
    if (sampledOut > 0) metrics.eventsSampledOut.inc(sampledOut);
    let duplicates = 0;
    if (kept.length > 0) {
      const freshIds = new Set(kept.filter((event) => event.freshId).map((event) => event.eventId));
      const received = await storeReceived(this.#options.store, this.#options.membership, kept, freshIds);
      if (received.path === 'log') {
        metrics.eventsIngested.inc(received.result.stored.length);
        duplicates = received.result.duplicates;
        if (duplicates > 0) metrics.eventsDuplicate.inc(duplicates);
      } else {
        metrics.eventsQueued.inc(kept.length);
        duplicates = await knownDuplicates(this.#options.store, kept);
      }
      if (options.ackReplicated) await this.#awaitReplicated(kept, received);
    }
    const response: IngestResponse = { status: 'ok', ingested: kept.length };
    if (duplicates > 0) response.duplicates = duplicates;
    if (sampledOut > 0) response.sampledOut = sampledOut;
    return response;
  }

  /**
   * On the leader: wait until a standby has applied the highest seq among the events. On a
   * standby: wait until the events came back through replication, which means the leader
   * stored them and this standby applied them. Either way all or nothing: a timeout is a 503
   * and the caller retries (idempotent by eventId).
   */
  async #awaitReplicated(events: readonly EncodedEvent[], received: Received): Promise<void> {
    const { store, membership, ackReplicatedTimeoutMs } = this.#options;
    if (!membership.coordinated) {
      throw new AuditError(AuditErrorCode.NOT_LEADER, 'ack=replicated needs a standby, and this node runs without a cluster (--coordinator); the events were stored durably on this node', {
        retryable: false,
      });
    }
    const deadline = Date.now() + ackReplicatedTimeoutMs;
    let replicated: boolean;
    if (received.path === 'log') {
      let maxSeq = Math.max(0, ...received.result.stored.map((e) => e.seq));
      if (received.result.duplicates > 0) maxSeq = Math.max(maxSeq, await highestSeq(store, events));
      replicated = await membership.waitForReplication(maxSeq, ackReplicatedTimeoutMs);
    } else {
      replicated = await waitUntilApplied(store, events, ackReplicatedTimeoutMs);
      // This node may have become the leader meanwhile and ordered its own outbox: then the
      // events are in its log without any standby having them yet — wait for one.
      if (replicated && membership.isLeader()) {
        replicated = await membership.waitForReplication(await highestSeq(store, events), Math.max(0, deadline - Date.now()));
      }
    }
    if (!replicated) {
      throw new AuditError(
        AuditErrorCode.NOT_LEADER,
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

/** The highest seq the local log gives these events (0 for any not there). */
async function highestSeq(store: AuditStore, events: readonly EncodedEvent[]): Promise<number> {
  const found = await Promise.all(events.map((e) => store.getByEventId(e.eventId)));
  return Math.max(0, ...found.map((e) => e?.seq ?? 0));
}

/** Resolves true once every event is in the local log (it came back from the leader). */
async function waitUntilApplied(store: AuditStore, events: readonly EncodedEvent[], timeoutMs: number): Promise<boolean> {
  const pending = new Set(events.map((e) => e.eventId));
  const deadline = Date.now() + timeoutMs;
  const check = async () => {
    for (const id of [...pending]) if (await store.getByEventId(id)) pending.delete(id);
    return pending.size === 0;
  };
  while (!(await check())) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return false;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.min(remaining, 250));
      const unsubscribe = store.onLogGrowth(done);
      function done() {
        clearTimeout(timer);
        unsubscribe();
        resolve();
      }
    });
  }
  return true;
}
