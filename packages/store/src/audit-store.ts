import { mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AuditError, AuditErrorCode, compileFilter, type AuditEvent, type SearchFilter, type StoredEvent } from '@auditlake/model';
import { Level } from 'level';
import {
  PREFIX,
  decodeUint,
  idKey,
  localKey,
  metaKey,
  parseSeqFromSeqKey,
  prefixEnd,
  seqKey,
  timeKey,
  timeLowerBound,
  timeUpperBoundInclusive,
} from './event-keys.js';
import { EventWriter, type AppendOptions, type AppendResult } from './event-writer.js';

export type StoreStatus = 'opening' | 'open' | 'closing' | 'closed';

export interface AuditStoreOptions {
  /** Directory of the LevelDB database; created when missing. */
  location: string;
  /** Clock for ingestTs; injected so tests can move it. */
  now?: () => number;
  /** Most events written in one synced batch (group commit). */
  groupEventsMax?: number;
}

export interface PruneResult {
  deleted: number;
  batches: number;
}

/**
 * The local LevelDB store of one node: events (by event time, seq and id), replicated
 * metadata and this node's own metadata. `open()` → use → `close()`, which waits for
 * queued writes and closes every iterator (LevelDB closes them with the database).
 */
export class AuditStore {
  readonly location: string;
  readonly #db: Level<string, string>;
  readonly #now: () => number;
  readonly #groupEventsMax: number;
  #writer: EventWriter | undefined;
  #status: StoreStatus = 'opening';
  #closed: Promise<void> | undefined;

  private constructor(options: AuditStoreOptions) {
    this.location = options.location;
    this.#db = new Level<string, string>(options.location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    this.#now = options.now ?? Date.now;
    this.#groupEventsMax = options.groupEventsMax ?? 20_000;
  }

  /** Opens (creating if needed) the store at `options.location`. */
  static async open(options: AuditStoreOptions): Promise<AuditStore> {
    await mkdir(options.location, { recursive: true });
    const store = new AuditStore(options);
    await store.#db.open();
    store.#writer = new EventWriter(store.#db, await store.#readPosition(), store.#now, store.#groupEventsMax);
    store.#status = 'open';
    return store;
  }

  get status(): StoreStatus {
    return this.#status;
  }

  /** The highest seq stored and its ingestTs; seq 0 when empty. */
  get position(): { lastSeq: number; lastIngestTs: number } {
    return this.#openWriter().position;
  }

  async #readPosition(): Promise<{ lastSeq: number; lastIngestTs: number }> {
    const last = await this.#db.keys({ gte: PREFIX.seq, lt: prefixEnd(PREFIX.seq), reverse: true, limit: 1 }).all();
    const key = last[0];
    if (key === undefined) return { lastSeq: 0, lastIngestTs: 0 };
    const seq = parseSeqFromSeqKey(key);
    const event = await this.#getBySeq(seq);
    return { lastSeq: seq, lastIngestTs: event?.ingestTs ?? 0 };
  }

  #openWriter(): EventWriter {
    if (this.#status !== 'open' || this.#writer === undefined) {
      throw new AuditError(AuditErrorCode.STORE_NOT_OPEN, `the audit store at ${this.location} is ${this.#status}`, { retryable: true });
    }
    return this.#writer;
  }

  /**
   * Orders and stores events as the leader: assigns seq and ingestTs, skips ids already
   * stored, and resolves only once the batch is synced to disk.
   */
  async append(events: readonly AuditEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    return this.#openWriter().append(events, options);
  }

  async getByEventId(eventId: string): Promise<StoredEvent | undefined> {
    const suffix = await this.#db.get(idKey(eventId));
    if (suffix === undefined) return undefined;
    const value = await this.#db.get(PREFIX.time + suffix);
    return value === undefined ? undefined : (JSON.parse(value) as StoredEvent);
  }

  async #getBySeq(seq: number): Promise<StoredEvent | undefined> {
    const ts = await this.#db.get(seqKey(seq));
    if (ts === undefined) return undefined;
    const value = await this.#db.get(timeKey(decodeUint(ts), seq));
    return value === undefined ? undefined : (JSON.parse(value) as StoredEvent);
  }

  /** Events with seq > `afterSeq` in ingest order, at most `limit` of them. */
  async readBySeq(afterSeq: number, limit: number): Promise<StoredEvent[]> {
    const entries = await this.#db.iterator({ gt: seqKey(afterSeq), lt: prefixEnd(PREFIX.seq), limit }).all();
    const keys = entries.map(([key, ts]) => timeKey(decodeUint(ts), parseSeqFromSeqKey(key)));
    const values = await this.#db.getMany(keys);
    return values.flatMap((v) => (v === undefined ? [] : [JSON.parse(v) as StoredEvent]));
  }

  /**
   * Matching events newest first (event time, then seq, both descending). Streams from a
   * LevelDB iterator over the time range, so memory stays bounded however much matches;
   * breaking out of the loop closes the iterator.
   */
  async *search(filter: Omit<SearchFilter, 'limit'>): AsyncGenerator<StoredEvent> {
    const matches = compileFilter({ ...filter, limit: 1 });
    const range = {
      gte: filter.fromMs === undefined ? PREFIX.time : timeLowerBound(filter.fromMs),
      lt: filter.toMs === undefined ? prefixEnd(PREFIX.time) : timeUpperBoundInclusive(filter.toMs),
      reverse: true,
    };
    this.#openWriter();
    for await (const value of this.#db.values(range)) {
      const event = JSON.parse(value) as StoredEvent;
      if (matches(event)) yield event;
    }
  }

  /**
   * Deletes events whose event time is before `cutoffMs`, oldest first, `batchSize` at a time,
   * calling `between()` after each batch so a large prune can yield to ingest and stop early.
   * Deletes are not synced: a prune lost in a crash is simply redone.
   */
  async pruneBefore(cutoffMs: number, batchSize: number, between: () => Promise<boolean>): Promise<PruneResult> {
    const result: PruneResult = { deleted: 0, batches: 0 };
    for (;;) {
      if (this.#status !== 'open') return result;
      const entries = await this.#db.iterator({ gte: PREFIX.time, lt: timeLowerBound(cutoffMs), limit: batchSize }).all();
      if (entries.length === 0) return result;
      const ops = entries.flatMap(([key, value]) => {
        const event = JSON.parse(value) as StoredEvent;
        return [
          { type: 'del' as const, key },
          { type: 'del' as const, key: seqKey(event.seq) },
          { type: 'del' as const, key: idKey(event.eventId) },
        ];
      });
      await this.#db.batch(ops, { sync: false });
      result.deleted += entries.length;
      result.batches++;
      if (!(await between())) return result;
    }
  }

  /** Reads a replicated-metadata value (settings, watermark, …). */
  async getMeta<T>(name: string): Promise<T | undefined> {
    this.#openWriter();
    const value = await this.#db.get(metaKey(name));
    return value === undefined ? undefined : (JSON.parse(value) as T);
  }

  /** Reads a value of this node's own metadata (node id, …). */
  async getLocal<T>(name: string): Promise<T | undefined> {
    this.#openWriter();
    const value = await this.#db.get(localKey(name));
    return value === undefined ? undefined : (JSON.parse(value) as T);
  }

  async putLocal(name: string, value: unknown): Promise<void> {
    this.#openWriter();
    await this.#db.put(localKey(name), JSON.stringify(value), { sync: true });
  }

  /** Bytes of the LevelDB files on disk (tables, logs, manifest). */
  async sizeOnDiskBytes(): Promise<number> {
    const names = await readdir(this.location);
    const sizes = await Promise.all(names.map((name) => stat(join(this.location, name)).then((s) => s.size, () => 0)));
    return sizes.reduce((a, b) => a + b, 0);
  }

  /** Waits for queued writes, then closes LevelDB. Idempotent. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#status = 'closing';
      await this.#writer?.flush();
      await this.#db.close();
      this.#status = 'closed';
    })();
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
