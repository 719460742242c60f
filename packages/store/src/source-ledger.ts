import type { Level } from 'level';
import { localKey } from './event-keys.js';
import { SOURCE_ID_KEY, stringFieldOfJson } from './json-field.js';
import { loadSourceLedger, type LedgerAdmission } from './source-ledger-load.js';
import { sourceJoinedKey, sourceRangeKey } from './source-ledger-keys.js';
import { SOURCE_RANGES_MAX, SourceRanges, type RangeWrites, type SourceLedgerEntry } from './source-ranges.js';

export { SOURCE_RANGES_MAX, SourceRanges, type SourceLedgerEntry } from './source-ranges.js';

/**
 * The completeness ledger: per source (an event's `sourceId`), which of its per-source sequence
 * numbers (`sourceSeq`) this log has received, kept as sorted, disjoint ranges. From them come
 * the highest sourceSeq received without a hole since the first, and the holes themselves —
 * events a source sent (it counted them) that never arrived. Receiving a sourceSeq twice (a
 * retry, a truncated suffix ordered again) changes nothing; retention does not take a
 * sourceSeq back (it was received).
 *
 * Every copy of the log keeps it in memory, so it is bounded however a holder of an ingest token
 * chooses sourceIds and sourceSeqs: in sources (LEDGER_SOURCES_MAX), in ranges per source
 * (SOURCE_RANGES_MAX) and in ranges over all sources (LEDGER_RANGES_MAX). Each bound depends
 * only on the ledger and the order events arrive in, so every copy that received the same
 * events in the same order holds the same ledger.
 */

/**
 * Most sources the ledger tracks one by one, each with its ranges. Past it, the events with a
 * sourceSeq of any further source are counted together (`otherSources`), without ranges: a
 * holder of an ingest token sending a new sourceId with every event would otherwise grow the
 * ledger (kept in memory on every copy, answered in pages) without bound. The
 * first sources seen keep their place; a source's place is never given to another.
 */
export const LEDGER_SOURCES_MAX = 10_000;

/**
 * Ranges every tracked source may hold whatever the others hold (its first range and up to
 * 9 holes): sources that fill the shared budget cannot hide a later hole of another source.
 */
export const SOURCE_RANGES_RESERVED = 10;

/**
 * Most ranges the ledger holds over all sources: each tracked source's reserve
 * (LEDGER_SOURCES_MAX × SOURCE_RANGES_RESERVED = 100,000) and 100,000 shared by the sources
 * that hold more. A source that needs a new range past its reserve while the shared ones are
 * taken (or past SOURCE_RANGES_MAX) joins its own two oldest ranges instead, as the per-source
 * bound does: its newest holes stay listed and `received` stays exact. Some 90 bytes of
 * memory a range (measured with the source maps around them): about 19 MB at the bound, on
 * every copy of the log.
 */
export const LEDGER_RANGES_MAX = 200_000;

/** The ranges beyond the reserves, over all sources. */
const SHARED_RANGES_MAX = LEDGER_RANGES_MAX - LEDGER_SOURCES_MAX * SOURCE_RANGES_RESERVED;

/** How many of a source's ranges count against the shared ones. */
function beyondReserve(ranges: number): number {
  return ranges > SOURCE_RANGES_RESERVED ? ranges - SOURCE_RANGES_RESERVED : 0;
}

/** Whether a source holding `ranges` may add one, `sharedInUse` of the shared ones being taken. */
function mayAddRange(ranges: number, sharedInUse: number): boolean {
  return ranges < SOURCE_RANGES_RESERVED || (ranges < SOURCE_RANGES_MAX && sharedInUse < SHARED_RANGES_MAX);
}

/**
 * The sourceId and sourceSeq of an event, read from its JSON text without parsing it: both
 * keys are written unquoted-inside-a-string only where they are keys (inside a string value
 * every `"` is escaped), so finding `,"sourceSeq":` finds the field. Undefined when the event
 * has no sourceSeq.
 */
export function sourceOfJson(json: string): { sourceId: string; sourceSeq: number } | undefined {
  const seqAt = json.indexOf(',"sourceSeq":');
  if (seqAt < 0) return undefined;
  const sourceId = stringFieldOfJson(json, SOURCE_ID_KEY);
  if (sourceId === undefined) return undefined;
  const seqStart = seqAt + 13;
  let seqEnd = seqStart;
  while (seqEnd < json.length) {
    const c = json.charCodeAt(seqEnd);
    if (c < 0x30 || c > 0x39) break;
    seqEnd++;
  }
  return { sourceId, sourceSeq: Number(json.slice(seqStart, seqEnd)) };
}

/** Anything that takes puts and deletes: a chained LevelDB batch. */
export interface WriteSink {
  put(key: string, value: string): unknown;
  del(key: string): unknown;
}

/** Puts what changed of one source's ranges into a batch. */
export function putSourceWrites(batch: WriteSink, sourceId: string, writes: RangeWrites, joined: number | undefined): void {
  for (const [from, to] of writes) {
    if (to === null) batch.del(sourceRangeKey(sourceId, from));
    else batch.put(sourceRangeKey(sourceId, from), String(to));
  }
  if (joined !== undefined) batch.put(sourceJoinedKey(sourceId), String(joined));
}

/**
 * Where the events of the sources past LEDGER_SOURCES_MAX are counted: in this node's own
 * metadata, not with the ranges (every string is a possible sourceId).
 */
export const OTHER_SOURCES_KEY = localKey('ledgerOtherSources');

/** The ledger summed up, kept as it changes (a /metrics scrape reads it without building entries). */
export interface SourceLedgerSummary {
  /** Sources tracked one by one (at most LEDGER_SOURCES_MAX). */
  sources: number;
  /** Of those, the ones with a hole. */
  sourcesWithGaps: number;
  /** sourceSeqs the tracked sources miss, over all of them. */
  missing: number;
  /** Events with a sourceSeq of sources past LEDGER_SOURCES_MAX, counted together (no ranges, no holes). */
  otherSourceEvents: number;
}

/** One page of the ledger's sources, by sourceId. */
export interface SourceLedgerPage {
  sources: SourceLedgerEntry[];
  /** The last sourceId of this page when more follow (ask again with it as `after`), else null. */
  next: string | null;
}

/** Every source's received sourceSeqs, as this log holds them. */
export class SourceLedger {
  readonly #sources = new Map<string, SourceRanges>();
  /** The tracked sourceIds, sorted (pages are answered from it). */
  readonly #ids: string[] = [];
  /** Events with a sourceSeq of sources the ledger does not track one by one. */
  #other = 0;
  #missing = 0;
  #withGaps = 0;
  /** Ranges held over all sources, and those of them beyond the sources' reserves. */
  #ranges = 0;
  #shared = 0;

  /**
   * Reads a store's ledger (source-ledger-load.ts), moving the ranges a version before stored
   * in one value per source to a key per range, and fitting what it reads into the bounds.
   */
  static async load(db: Level<string, string>): Promise<SourceLedger> {
    const ledger = new SourceLedger();
    const admission: LedgerAdmission = {
      tracked: () => ledger.#sources.size,
      sourcesMax: LEDGER_SOURCES_MAX,
      rangesAllowed: () => Math.min(SOURCE_RANGES_MAX, SOURCE_RANGES_RESERVED + Math.max(0, SHARED_RANGES_MAX - ledger.#shared)),
      admit: (sourceId, ranges) => ledger.#set(sourceId, ranges),
    };
    ledger.#other = await loadSourceLedger(db, OTHER_SOURCES_KEY, admission);
    return ledger;
  }

  /**
   * Counts the other sources' events from zero again (durably): for a backfill, which reads
   * every stored event and counts those of untracked sources once more.
   */
  async restartOtherCount(db: Level<string, string>): Promise<void> {
    await db.del(OTHER_SOURCES_KEY, { sync: true });
    this.#other = 0;
  }

  /** Puts one source's ranges in place, keeping the totals. */
  #set(sourceId: string, ranges: SourceRanges): void {
    const before = this.#sources.get(sourceId);
    if (before !== undefined) {
      this.#missing -= before.missing;
      if (before.missing > 0) this.#withGaps--;
      this.#ranges -= before.ranges.length;
      this.#shared -= beyondReserve(before.ranges.length);
    } else this.#ids.splice(sortedPosition(this.#ids, sourceId), 0, sourceId);
    this.#sources.set(sourceId, ranges);
    this.#missing += ranges.missing;
    if (ranges.missing > 0) this.#withGaps++;
    this.#ranges += ranges.ranges.length;
    this.#shared += beyondReserve(ranges.ranges.length);
  }

  /**
   * The additions of one batch: applied to copies, put into the batch, and made visible by
   * {@link LedgerChange.commit} once the batch is written (a failed write changes nothing).
   */
  begin(): LedgerChange {
    return new LedgerChange(this.#sources, {
      other: () => this.#other,
      shared: () => this.#shared,
      apply: (changed, other) => {
        for (const [sourceId, ranges] of changed) this.#set(sourceId, ranges);
        this.#other = other;
      },
    });
  }

  /** Every tracked source, by sourceId, optionally only one; with `gapsMax`, each with its newest that many holes. */
  entries(sourceId?: string, gapsMax?: number): SourceLedgerEntry[] {
    const ids = sourceId === undefined ? this.#ids : this.#sources.has(sourceId) ? [sourceId] : [];
    return ids.map((id) => (this.#sources.get(id) as SourceRanges).entry(id, gapsMax));
  }

  /** Up to `limit` sources after the sourceId `after` (from the first without it), each with its newest `gapsMax` holes. */
  page(options: { after?: string; limit: number; gapsMax: number }): SourceLedgerPage {
    const start = options.after === undefined ? 0 : sortedPosition(this.#ids, options.after);
    const ids = this.#ids.slice(start, start + options.limit);
    const sources = ids.map((id) => (this.#sources.get(id) as SourceRanges).entry(id, options.gapsMax));
    const more = start + ids.length < this.#ids.length;
    return { sources, next: more && ids.length > 0 ? (ids[ids.length - 1] as string) : null };
  }

  /** The totals, without building any entry. */
  summary(): SourceLedgerSummary {
    return { sources: this.#sources.size, sourcesWithGaps: this.#withGaps, missing: this.#missing, otherSourceEvents: this.#other };
  }

  /** Ranges held over all sources (at most LEDGER_RANGES_MAX). */
  get rangeCount(): number {
    return this.#ranges;
  }
}

/** Where `id` goes in sorted `ids`: after every id up to and including it. */
function sortedPosition(ids: readonly string[], id: string): number {
  let low = 0;
  let high = ids.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if ((ids[mid] as string) <= id) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** What a change reads of the ledger it changes, and how it changes it once written. */
interface LedgerState {
  other(): number;
  /** The shared ranges in use (beyond the sources' reserves). */
  shared(): number;
  apply(changed: ReadonlyMap<string, SourceRanges>, other: number): void;
}

/** One source a change touched: its changed copy, and what of it the batch must store. */
interface ChangedSource {
  ranges: SourceRanges;
  writes: RangeWrites;
  joinedBefore: number;
}

export class LedgerChange {
  readonly #sources: ReadonlyMap<string, SourceRanges>;
  readonly #ledger: LedgerState;
  readonly #changed = new Map<string, ChangedSource>();
  /** Sources this change adds that the ledger does not track yet. */
  #added = 0;
  /** How the shared ranges in use change with this change. */
  #sharedDelta = 0;
  /** Events of untracked sources this change counts. */
  #otherEvents = 0;
  #otherWritten: number | undefined;

  constructor(sources: ReadonlyMap<string, SourceRanges>, ledger: LedgerState) {
    this.#sources = sources;
    this.#ledger = ledger;
  }

  /**
   * Reads the source of one stored event's JSON and records it; events without a sourceSeq
   * change nothing. A source new to a ledger that tracks LEDGER_SOURCES_MAX already is counted
   * with the other sources.
   */
  addJson(json: string): void {
    const source = sourceOfJson(json);
    if (source === undefined) return;
    const changed = this.#changed.get(source.sourceId);
    if (changed !== undefined) {
      this.#add(changed.ranges, source.sourceSeq, changed.writes);
      return;
    }
    const stored = this.#sources.get(source.sourceId);
    if (stored === undefined && this.#sources.size + this.#added >= LEDGER_SOURCES_MAX) {
      this.#otherEvents++;
      return;
    }
    const ranges = stored === undefined ? new SourceRanges() : stored.copy();
    const writes: RangeWrites = new Map();
    // A sourceSeq received before writes nothing.
    if (!this.#add(ranges, source.sourceSeq, writes)) return;
    this.#changed.set(source.sourceId, { ranges, writes, joinedBefore: stored?.joined ?? 0 });
    if (stored === undefined) this.#added++;
  }

  /** Adds one sourceSeq to a source's copy, within the ledger's budgets. */
  #add(ranges: SourceRanges, seq: number, writes: RangeWrites): boolean {
    const held = ranges.ranges.length;
    const added = ranges.add(seq, mayAddRange(held, this.#ledger.shared() + this.#sharedDelta), writes);
    this.#sharedDelta += beyondReserve(ranges.ranges.length) - beyondReserve(held);
    return added;
  }

  /** Puts what changed of every changed source's ranges (and the other sources' count) into the batch. */
  putChanged(batch: WriteSink): void {
    for (const [sourceId, { ranges, writes, joinedBefore }] of this.#changed) {
      putSourceWrites(batch, sourceId, writes, ranges.joined !== joinedBefore ? ranges.joined : undefined);
    }
    if (this.#otherEvents > 0) {
      this.#otherWritten = this.#ledger.other() + this.#otherEvents;
      batch.put(OTHER_SOURCES_KEY, String(this.#otherWritten));
    }
  }

  /** After the batch was written: the changes become the ledger. */
  commit(): void {
    this.#ledger.apply(new Map([...this.#changed].map(([sourceId, { ranges }]) => [sourceId, ranges])), this.#otherWritten ?? this.#ledger.other());
    this.#changed.clear();
    this.#added = 0;
    this.#sharedDelta = 0;
    this.#otherEvents = 0;
    this.#otherWritten = undefined;
  }
}
