import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Level } from 'level';
import { PREFIX, prefixEnd, prunedIdKey } from './event-keys.js';
import { GrowingBloomFilter } from './growing-bloom-filter.js';

/** Anything that takes puts: a chained LevelDB batch. */
interface PutSink {
  put(key: string, value: string): unknown;
}

/** Keys read per step of a sweep; the event loop gets a turn after each. */
const SCAN_PAGE_KEYS = 10_000;

/** How long ids are kept after their event's time by default (auditlake.ingest.resend.ids.keep.days). */
export const PRUNED_IDS_KEEP_MS_DEFAULT = 30 * 24 * 60 * 60 * 1000;

/** How often kept ids past their time are deleted and the filter built again: once a day. */
export const PRUNED_IDS_SWEEP_INTERVAL_MS = 24 * 60 * 60 * 1000;

/**
 * Where filling the filter stands: `loading` until every kept id was read, `loaded` after;
 * `stopped` when the store closed first, `failed` when a read failed. Only `loaded` lets the
 * filter rule an id out.
 */
export type PrunedIdsLoad = 'loading' | 'loaded' | 'stopped' | 'failed';

/** PrunedIds.figures. */
export interface PrunedIdsFigures {
  /** Ids kept: those the last sweep kept and those added since (an id kept again counts again). */
  ids: number;
  /** Bytes of memory the filter takes (two filters while a sweep builds the next). */
  filterBytes: number;
  /** The first sweep has not read every id yet: every client-chosen id of an append is read meanwhile. */
  filling: boolean;
  /**
   * The filter reached its memory bound: every client-chosen id of an append is read until a
   * sweep finds fewer ids kept (a shorter auditlake.ingest.resend.ids.keep.days keeps fewer).
   */
  filterFull: boolean;
}

export interface PrunedIdsOptions {
  /** How long after its event's time an id is kept (auditlake.ingest.resend.ids.keep.days). */
  keepMs: number;
  /** The store's clock. */
  now: () => number;
  /** Runs `run` in the store writer's turn: no prune writes a kept id meanwhile. */
  inWriterTurn: (run: () => Promise<void>) => Promise<void>;
  /** How often a sweep runs on its own (default PRUNED_IDS_SWEEP_INTERVAL_MS). */
  sweepIntervalMs?: number;
  /** The filter's memory bound (GrowingBloomFilter's bytesMax; smaller in tests). */
  filterBytesMax?: number;
}

/**
 * The eventIds whose tiered events this log's retention deleted, each with that event's time
 * (`p!<eventId>` → the time in ms, written in the prune's own batch). The log's de-duplication
 * finds an id only while the log holds it; once retention deleted the event, a re-send under the
 * id — with any time, or none — is looked for in the tier at the time kept here, and judged
 * against the tier's copy as it would have been against the log's (resent-after-retention.ts).
 *
 * Kept for `keepMs` after the event's time (30 days by default), not for good: each id costs
 * ~50 bytes on disk and 1.5–3 in memory, so a node deleting what it ingests at 100 events/s
 * keeps ~260 million ids a month (~13 GB of disk); a year's (the default before) was ~150 GB
 * and a filter past what a probe reaches. Retries and replayed spools come within days; a
 * re-send under an id older than that is judged by its time alone (the rule for ids deleted
 * before ids were kept), which catches every re-send carrying its original time. The filter's
 * memory is bounded (GrowingBloomFilter: past it every id is read). Figures in
 * docs/architecture.md, "Local cleanup".
 *
 * Read from LevelDB for the events of each append that may be such a re-send (`timesOf`), not
 * held in memory. In memory is only a Bloom filter of them (GrowingBloomFilter), so an id it
 * rules out is not read. A sweep reads every kept id in the background, a page of keys per turn
 * of the event loop, deletes those past their time (in the writer's turn, checked again there)
 * and builds a new filter of the rest, sized for them, which then takes the old one's place:
 * once when the store opens (so a store with millions of ids opens at once) and then once a
 * day. Until the first sweep has read every key, every id counts as one that may have been
 * deleted (read, not ruled out), so what is found never depends on how far it got; ids a prune
 * keeps meanwhile go into both filters (adding an id twice changes nothing). A first sweep that
 * fails leaves it so: every id is read. A later one that fails keeps the filter it had.
 */
export class PrunedIds {
  readonly #db: Level<string, string>;
  readonly #options: PrunedIdsOptions;
  #filter: GrowingBloomFilter;
  /** The filter a sweep is building, while it runs: kept ids go into it too. */
  #next: GrowingBloomFilter | undefined;
  /** Ids in the filter (those the last sweep kept and those added since): the next filter's size. */
  #count = 0;
  #load: PrunedIdsLoad = 'loading';
  #stopping = false;
  #sweeps: Promise<void>;
  #timer: NodeJS.Timeout | undefined;

  private constructor(db: Level<string, string>, options: PrunedIdsOptions) {
    this.#db = db;
    this.#options = options;
    this.#filter = new GrowingBloomFilter(options.filterBytesMax === undefined ? {} : { bytesMax: options.filterBytesMax });
    this.#sweeps = this.#sweepAndSchedule();
  }

  /** Starts the first sweep in the background (`load` tells how far it got). */
  static open(db: Level<string, string>, options: PrunedIdsOptions): PrunedIds {
    return new PrunedIds(db, options);
  }

  get load(): PrunedIdsLoad {
    return this.#load;
  }

  /** What the kept ids take and where their filter stands, for the node's gauges. */
  get figures(): PrunedIdsFigures {
    return { ids: this.#count, filterBytes: this.#filter.bytes + (this.#next?.bytes ?? 0), filling: this.#load === 'loading', filterFull: this.#filter.full };
  }

  /** Whether an event timed `timestamp` is young enough for its id to be kept (a prune asks before keeping it). */
  keeps(timestamp: number): boolean {
    return timestamp >= this.#options.now() - this.#options.keepMs;
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

  /** Ids whose keys a written batch put: into the filter, and the one a sweep builds (before any append is told of the prune). */
  added(eventIds: Iterable<string>): void {
    for (const id of eventIds) {
      this.#filter.add(id);
      this.#next?.add(id);
      this.#count++;
    }
  }

  /** Runs a sweep now, after any running one (one runs on its own each day): resolves with where the filter stands. */
  async sweep(): Promise<PrunedIdsLoad> {
    const next = this.#sweeps.then(() => this.#sweepOnce());
    this.#sweeps = next;
    await next;
    return this.#load;
  }

  /** Stops the sweeps and waits until the running one closed its iterator; the store closes LevelDB after this. */
  async close(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#timer);
    await this.#sweeps;
  }

  async #sweepAndSchedule(): Promise<void> {
    await this.#sweepOnce();
    if (this.#stopping) return;
    this.#timer = setTimeout(() => {
      this.#sweeps = this.#sweeps.then(() => this.#sweepAndSchedule());
    }, this.#options.sweepIntervalMs ?? PRUNED_IDS_SWEEP_INTERVAL_MS);
    this.#timer.unref();
  }

  /** Reads every kept id, deletes those past their time, and puts a filter of the rest in the old one's place; never rejects. */
  async #sweepOnce(): Promise<void> {
    if (this.#stopping) return;
    const cutoff = this.#options.now() - this.#options.keepMs;
    // Made before the iterator: an id a prune keeps from here on goes into it (added), whether
    // or not the iterator's snapshot holds its key.
    const next = new GrowingBloomFilter({ expectedIds: this.#count, ...(this.#options.filterBytesMax === undefined ? {} : { bytesMax: this.#options.filterBytesMax }) });
    this.#next = next;
    const countBefore = this.#count;
    let count = 0;
    let read = false;
    // Not cached: a scan of millions of keys must not push the events' blocks out of the cache.
    const entries = this.#db.iterator({ gte: PREFIX.prunedId, lt: prefixEnd(PREFIX.prunedId), fillCache: false });
    try {
      while (!this.#stopping) {
        const page = await entries.nextv(SCAN_PAGE_KEYS);
        if (page.length === 0) {
          read = true;
          break;
        }
        const expired: string[] = [];
        for (const [key, value] of page) {
          if (Number(value) < cutoff) expired.push(key);
          else {
            next.add(key.slice(PREFIX.prunedId.length));
            count++;
          }
        }
        if (expired.length > 0) await this.#deleteExpired(expired, cutoff);
        await yieldToEventLoop();
      }
    } catch {
      // The first sweep's failure leaves every id read (as while it ran); a later one's keeps the filter it had.
    } finally {
      this.#next = undefined;
      await entries.close().catch(() => undefined);
    }
    if (read) {
      // Ids added while it ran are in `next`, and not among those the iterator read (its snapshot was taken first).
      this.#filter = next;
      this.#count = count + (this.#count - countBefore);
      this.#load = 'loaded';
    } else if (this.#load === 'loading') this.#load = this.#stopping ? 'stopped' : 'failed';
  }

  /**
   * Deletes the kept ids among `keys` still past `cutoff`, in the writer's turn: a prune that
   * kept one of them again since the sweep read it (a second copy deleted, with a later time)
   * wrote its new time in that turn, which is read again here and kept.
   */
  async #deleteExpired(keys: string[], cutoff: number): Promise<void> {
    await this.#options.inWriterTurn(async () => {
      const values = await this.#db.getMany(keys);
      const batch = this.#db.batch();
      keys.forEach((key, i) => {
        if (Number(values[i]) < cutoff) batch.del(key);
      });
      await batch.write();
    });
  }
}

const NO_TIMES: ReadonlyMap<string, number> = new Map();
