import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Level } from 'level';
import { PREFIX, prefixEnd, prunedIdKey } from './event-keys.js';
import { GrowingBloomFilter } from './growing-bloom-filter.js';

/** Anything that takes puts: a chained LevelDB batch. */
interface PutSink {
  put(key: string, value: string): unknown;
}

/** Keys read per step of the scan that fills the filter; the event loop gets a turn after each. */
const SCAN_PAGE_KEYS = 10_000;

/**
 * Where filling the filter stands: `loading` until every kept id was read, `loaded` after;
 * `stopped` when the store closed first, `failed` when a read failed. Only `loaded` lets the
 * filter rule an id out.
 */
export type PrunedIdsLoad = 'loading' | 'loaded' | 'stopped' | 'failed';

/**
 * The eventIds whose tiered events this log's retention deleted, each with that event's time
 * (`p!<eventId>` → the time in ms, written in the prune's own batch). The log's de-duplication
 * finds an id only while the log holds it; once retention deleted the event, a re-send under the
 * id — with any time, or none — is looked for in the tier at the time kept here, and judged
 * against the tier's copy as it would have been against the log's (resent-after-retention.ts).
 * Kept for good, as a primary key keeps every id: each costs some bytes on disk (figures in
 * docs/architecture.md, "Local cleanup").
 *
 * Read from LevelDB for the events of each append that may be such a re-send (`timesOf`), not
 * held in memory: every event ever tiered and deleted leaves one. In memory is only a Bloom
 * filter of them (GrowingBloomFilter), so an id it rules out is not read. The filter is filled
 * in the background once the store is open, a page of keys per turn of the event loop: a store
 * with millions of them opens at once. Until the scan has read every key, every id counts as
 * one that may have been deleted (read, not ruled out), so what is found never depends on how
 * far the scan got; ids deleted meanwhile go into the filter directly (adding an id twice
 * changes nothing). A scan that fails leaves it so: every id is read, as during the scan.
 */
export class PrunedIds {
  readonly #db: Level<string, string>;
  readonly #filter = new GrowingBloomFilter();
  #load: PrunedIdsLoad = 'loading';
  #stopping = false;
  readonly #scan: Promise<void>;

  private constructor(db: Level<string, string>) {
    this.#db = db;
    this.#scan = this.#fill();
  }

  /** Starts filling the filter in the background (`load` tells how far it got). */
  static open(db: Level<string, string>): PrunedIds {
    return new PrunedIds(db);
  }

  get load(): PrunedIdsLoad {
    return this.#load;
  }

  /** Whether `eventId` may be one retention deleted here: false only once the filter is filled and rules it out. */
  mayHave(eventId: string): boolean {
    return this.#load !== 'loaded' || this.#filter.mayHave(eventId);
  }

  /**
   * Whether `eventId` may be one retention deleted since the store opened: the filter alone,
   * which holds every id a prune committed since then, filled or not. What an append asks about
   * an event the log held when it was chosen and lacks at its write (AuditStore.appendEncoded).
   */
  mayHaveBeenAdded(eventId: string): boolean {
    return this.#filter.mayHave(eventId);
  }

  /**
   * The kept event time of each of `eventIds` retention deleted here: one read of the keys of
   * those the filter does not rule out, none when it rules out all (ordinary ingest).
   */
  async timesOf(eventIds: readonly string[]): Promise<ReadonlyMap<string, number>> {
    const ids = [...new Set(eventIds.filter((id) => this.mayHave(id)))];
    if (ids.length === 0) return NO_TIMES;
    const values = await this.#db.getMany(ids.map(prunedIdKey));
    const times = new Map<string, number>();
    ids.forEach((id, i) => {
      const time = values[i] === undefined ? Number.NaN : Number(values[i]);
      // A value of no known form is not a time to look at: the event is judged by its own time then.
      if (Number.isSafeInteger(time) && time >= 0) times.set(id, time);
    });
    return times;
  }

  /** Puts the key of an event retention deletes in `batch`; `added` once the batch is written. */
  put(batch: PutSink, eventId: string, timestamp: number): void {
    batch.put(prunedIdKey(eventId), String(timestamp));
  }

  /** Ids whose keys a written batch put: into the filter (before any append is told of the prune). */
  added(eventIds: Iterable<string>): void {
    for (const id of eventIds) this.#filter.add(id);
  }

  /** Stops the scan and waits until its iterator is closed; the store closes LevelDB after this. */
  async close(): Promise<void> {
    this.#stopping = true;
    await this.#scan;
  }

  /** Reads every kept id into the filter, a page per turn; never rejects. */
  async #fill(): Promise<void> {
    // Not cached: a scan of millions of keys must not push the events' blocks out of the cache.
    const keys = this.#db.keys({ gte: PREFIX.prunedId, lt: prefixEnd(PREFIX.prunedId), fillCache: false });
    try {
      for (;;) {
        if (this.#stopping) {
          this.#load = 'stopped';
          return;
        }
        const page = await keys.nextv(SCAN_PAGE_KEYS);
        if (page.length === 0) {
          this.#load = 'loaded';
          return;
        }
        for (const key of page) this.#filter.add(key.slice(PREFIX.prunedId.length));
        await yieldToEventLoop();
      }
    } catch {
      // Every id counts as one that may have been deleted, as during the scan: reads, never a miss.
      this.#load = this.#stopping ? 'stopped' : 'failed';
    } finally {
      await keys.close().catch(() => undefined);
    }
  }
}

const NO_TIMES: ReadonlyMap<string, number> = new Map();
