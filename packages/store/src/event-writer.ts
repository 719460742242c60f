import { AuditError, AuditErrorCode, type AuditEvent, type StoredEvent } from '@auditlake/model';
import type { Level } from 'level';
import { idKey, metaKey, seqKey, timeKey, timeKeySuffix, encodeUint } from './event-keys.js';

type Db = Level<string, string>;

/** A replicated-metadata value to write atomically with the events of one append. */
export interface MetaPut {
  name: string;
  value: unknown;
}

export interface AppendOptions {
  /**
   * Ids this node generated moments ago, which cannot already be stored: their idempotency
   * lookup is skipped. Every other id is looked up, because a client or a forwarding follower
   * may be re-sending it.
   */
  freshIds?: ReadonlySet<string>;
  /** Metadata written in the same LevelDB batch as the events (e.g. the settings they record). */
  meta?: readonly MetaPut[];
}

export interface AppendResult {
  /** Newly stored events, in the order they were given, with their seq and ingestTs. */
  stored: StoredEvent[];
  /** Events whose eventId was already stored (or repeated within the append): kept once. */
  duplicates: number;
}

interface PendingAppend {
  events: readonly AuditEvent[];
  options: AppendOptions;
  resolve: (result: AppendResult) => void;
  reject: (err: unknown) => void;
}

export interface WriterPosition {
  lastSeq: number;
  lastIngestTs: number;
}

/**
 * The single writer of events: appends queue here and are written in groups, one synced
 * LevelDB batch per group (group commit). One writer means seq and ingestTs are assigned in
 * exactly the order events become durable, and concurrent requests share one fsync.
 */
export class EventWriter {
  readonly #db: Db;
  readonly #now: () => number;
  readonly #groupEventsMax: number;
  #position: WriterPosition;
  #queue: PendingAppend[] = [];
  #draining: Promise<void> | undefined;

  constructor(db: Db, position: WriterPosition, now: () => number, groupEventsMax: number) {
    this.#db = db;
    this.#position = { ...position };
    this.#now = now;
    this.#groupEventsMax = groupEventsMax;
  }

  get position(): WriterPosition {
    return { ...this.#position };
  }

  /** Resolves once the events are on disk (`sync: true`): acknowledged means durable. */
  append(events: readonly AuditEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ events, options, resolve, reject });
      this.#draining ??= this.#drain();
    });
  }

  /** Waits for every queued append to settle. */
  async flush(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  async #drain(): Promise<void> {
    // Let append() store the promise before this can finish, so the clearing below always wins.
    await Promise.resolve();
    for (;;) {
      if (this.#queue.length === 0) {
        // Cleared in the same synchronous step that saw the queue empty: an append arriving
        // after this starts a new drain, and none can slip in between and be stranded.
        this.#draining = undefined;
        return;
      }
      const group = this.#takeGroup();
      try {
        const results = await this.#write(group);
        group.forEach((pending, i) => pending.resolve(results[i] as AppendResult));
      } catch (err) {
        const error = new AuditError(AuditErrorCode.STORE_NOT_OPEN, `could not write audit events to the local store: ${String(err)}`, {
          cause: err,
          retryable: true,
        });
        for (const pending of group) pending.reject(error);
      }
    }
  }

  #takeGroup(): PendingAppend[] {
    const group: PendingAppend[] = [];
    let events = 0;
    while (this.#queue.length > 0) {
      const next = this.#queue[0] as PendingAppend;
      if (group.length > 0 && events + next.events.length > this.#groupEventsMax) break;
      group.push(next);
      events += next.events.length;
      this.#queue.shift();
    }
    return group;
  }

  async #write(group: PendingAppend[]): Promise<AppendResult[]> {
    const lookupIds: string[] = [];
    for (const pending of group) {
      for (const event of pending.events) {
        if (!pending.options.freshIds?.has(event.eventId)) lookupIds.push(event.eventId);
      }
    }
    const found = lookupIds.length === 0 ? [] : await this.#db.getMany(lookupIds.map(idKey));
    const alreadyStored = new Set<string>();
    found.forEach((value, i) => {
      if (value !== undefined) alreadyStored.add(lookupIds[i] as string);
    });

    let seq = this.#position.lastSeq;
    // ingestTs never goes backwards, even if the wall clock does (invariant 3).
    const ingestTs = Math.max(this.#now(), this.#position.lastIngestTs);
    const seenInGroup = new Set<string>();
    const ops: Array<{ type: 'put'; key: string; value: string }> = [];
    const results: AppendResult[] = [];
    for (const pending of group) {
      const result: AppendResult = { stored: [], duplicates: 0 };
      for (const event of pending.events) {
        if (alreadyStored.has(event.eventId) || seenInGroup.has(event.eventId)) {
          result.duplicates++;
          continue;
        }
        seenInGroup.add(event.eventId);
        seq++;
        const stored: StoredEvent = { ...event, ingestTs, seq };
        ops.push(
          { type: 'put', key: timeKey(event.timestamp, seq), value: JSON.stringify(stored) },
          { type: 'put', key: seqKey(seq), value: encodeUint(event.timestamp) },
          { type: 'put', key: idKey(event.eventId), value: timeKeySuffix(event.timestamp, seq) },
        );
        result.stored.push(stored);
      }
      for (const meta of pending.options.meta ?? []) {
        ops.push({ type: 'put', key: metaKey(meta.name), value: JSON.stringify(meta.value) });
      }
      results.push(result);
    }
    if (ops.length > 0) {
      // Store before ack: a caller that got 200 may never retry.
      await this.#db.batch(ops, { sync: true });
    }
    if (seq > this.#position.lastSeq) this.#position = { lastSeq: seq, lastIngestTs: ingestTs };
    return results;
  }
}
