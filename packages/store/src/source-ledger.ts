import type { Level } from 'level';
import { localKey } from './event-keys.js';
import { SOURCE_ID_KEY, stringFieldOfJson } from './json-field.js';
import { loadSourceLedger, type LedgerAdmission } from './source-ledger-load.js';
import { sourceJoinedKey, sourceLastDayKey, sourceRangeKey } from './source-ledger-keys.js';
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
 * ledger (kept in memory on every copy, answered in pages) without bound. A source keeps its
 * place while it sends; only an idle one gives it up, and only when the ledger is nearly full
 * (LEDGER_SOURCE_IDLE_DAYS).
 */
export const LEDGER_SOURCES_MAX = 10_000;

/**
 * Idle sources. Sources come and go (a sourceId per pod, per job run), and places once taken
 * for good would leave every source that comes after the first 10,000 untracked, its holes
 * unseen, however long the others have been gone. The ledger numbers the days it sees events
 * on: the first event whose UTC day (of its ingestTs, the log's time, which every copy reads
 * the same) is later than the last one's starts the next day number. Each source keeps the day
 * number of its newest event. At the start of each day, when the ledger tracks at least
 * LEDGER_RETIRE_FROM_SOURCES sources, every source without an event over more than this many
 * days of events is retired: its ranges are dropped and its counts added to `retired`
 * (sources, received, missing: its holes as they stood are still counted as missing, since
 * nothing can fill them now). A retired source that sends again starts anew.
 *
 * Days of events rather than calendar days: ingest time never goes back, so a leader whose
 * clock jumped a year ahead moves it a year at once, and calendar days would retire every
 * source idle at that moment; it is one day of events. Nothing but the log decides this, so
 * every copy that ordered the same events in the same order retires the same sources at the
 * same event, whatever batches it got them in.
 */
export const LEDGER_SOURCE_IDLE_DAYS = 30;

/** Tracked sources from which idle ones are retired (90% of LEDGER_SOURCES_MAX): places free up a day before new sources would be turned away. */
export const LEDGER_RETIRE_FROM_SOURCES = 9_000;

const DAY_MS = 86_400_000;

/** The retired sources' counts, kept in this node's metadata. */
export const RETIRED_SOURCES_KEY = localKey('ledgerRetiredSources');
/** The ledger's day (LedgerDay as JSON): the newest UTC day of an event it took, and its number. */
export const LEDGER_DAY_KEY = localKey('ledgerDay');

/** The ledger's count of days with events (LEDGER_SOURCE_IDLE_DAYS). */
interface LedgerDay {
  /** The newest UTC day (days since 1970) of an event's ingestTs. */
  day: number;
  /** How many days with events came before it (the first is 0): sources are dated by it. */
  number: number;
}

/** What the retired sources held when they were retired, summed. */
export interface RetiredSources {
  sources: number;
  received: number;
  missing: number;
}

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
  /** Sources retired for being idle (LEDGER_SOURCE_IDLE_DAYS), and the sourceSeqs they missed then. */
  retiredSources: number;
  retiredMissing: number;
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
  /** Each tracked source's day number of its newest event (absent: none known, see LedgerChange). */
  readonly #lastDay = new Map<string, number>();
  #retired: RetiredSources = { sources: 0, received: 0, missing: 0 };
  /** Undefined before the first event with an ingestTs. */
  #day: LedgerDay | undefined;

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
      admit: (sourceId, ranges, lastDay) => {
        ledger.#set(sourceId, ranges);
        if (lastDay !== undefined) ledger.#lastDay.set(sourceId, lastDay);
      },
    };
    ledger.#other = await loadSourceLedger(db, OTHER_SOURCES_KEY, admission);
    const retired = await db.get(RETIRED_SOURCES_KEY);
    if (retired !== undefined) ledger.#retired = JSON.parse(retired) as RetiredSources;
    const day = await db.get(LEDGER_DAY_KEY);
    if (day !== undefined) ledger.#day = JSON.parse(day) as LedgerDay;
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

  /** Drops a retired source, keeping the totals. */
  #remove(sourceId: string): void {
    const ranges = this.#sources.get(sourceId);
    if (ranges === undefined) return;
    this.#missing -= ranges.missing;
    if (ranges.missing > 0) this.#withGaps--;
    this.#ranges -= ranges.ranges.length;
    this.#shared -= beyondReserve(ranges.ranges.length);
    this.#sources.delete(sourceId);
    this.#lastDay.delete(sourceId);
    this.#ids.splice(sortedPosition(this.#ids, sourceId) - 1, 1);
  }

  /**
   * The additions of one batch: applied to copies, put into the batch, and made visible by
   * {@link LedgerChange.commit} once the batch is written (a failed write changes nothing).
   */
  begin(): LedgerChange {
    return new LedgerChange(this.#sources, {
      other: () => this.#other,
      shared: () => this.#shared,
      lastDay: (sourceId) => this.#lastDay.get(sourceId),
      day: () => this.#day,
      retired: () => this.#retired,
      apply: (change) => {
        for (const sourceId of change.retiring) this.#remove(sourceId);
        for (const [sourceId, ranges] of change.changed) this.#set(sourceId, ranges);
        for (const [sourceId, day] of change.lastDays) this.#lastDay.set(sourceId, day);
        this.#other = change.other;
        this.#retired = change.retired;
        this.#day = change.day;
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
    return {
      sources: this.#sources.size,
      sourcesWithGaps: this.#withGaps,
      missing: this.#missing,
      otherSourceEvents: this.#other,
      retiredSources: this.#retired.sources,
      retiredMissing: this.#retired.missing,
    };
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

/** What a change makes of the ledger once written. */
interface AppliedChange {
  /** Sources retired, dropped before `changed` is put in place (a retired source sent again is in both). */
  retiring: ReadonlySet<string>;
  changed: ReadonlyMap<string, SourceRanges>;
  lastDays: ReadonlyMap<string, number>;
  other: number;
  retired: RetiredSources;
  day: LedgerDay | undefined;
}

/** What a change reads of the ledger it changes, and how it changes it once written. */
interface LedgerState {
  other(): number;
  /** The shared ranges in use (beyond the sources' reserves). */
  shared(): number;
  lastDay(sourceId: string): number | undefined;
  day(): LedgerDay | undefined;
  retired(): RetiredSources;
  apply(change: AppliedChange): void;
}

/** One source a change touched: its changed copy, and what of it the batch must store. */
interface ChangedSource {
  ranges: SourceRanges;
  writes: RangeWrites;
  joinedBefore: number;
  /** New to the ledger in this change (not tracked when it began, or retired in it). */
  fresh: boolean;
}

export class LedgerChange {
  readonly #sources: ReadonlyMap<string, SourceRanges>;
  readonly #ledger: LedgerState;
  readonly #changed = new Map<string, ChangedSource>();
  /** Tracked sources this change retires: their stored keys are deleted. */
  readonly #retiring = new Set<string>();
  /** Sources' day numbers of their newest events this change moves. */
  readonly #lastDays = new Map<string, number>();
  /** Sources this change adds that the ledger does not track yet. */
  #added = 0;
  /** How the shared ranges in use change with this change. */
  #sharedDelta = 0;
  /** Events of untracked sources this change counts. */
  #otherEvents = 0;
  #otherWritten: number | undefined;
  /** The retired sources' counts once written, when this change retires any. */
  #retired: RetiredSources | undefined;
  /** The ledger's day once written, when this change moves it. */
  #day: LedgerDay | undefined;

  constructor(sources: ReadonlyMap<string, SourceRanges>, ledger: LedgerState) {
    this.#sources = sources;
    this.#ledger = ledger;
  }

  /**
   * Reads the source of one stored event's JSON and records it; events without a sourceSeq
   * change nothing. A source new to a ledger that tracks LEDGER_SOURCES_MAX already is counted
   * with the other sources. `ingestTs`, the event's place in the log's time, is given for the
   * events the log ordered: it moves the source's last active day and, on a new day, may retire
   * idle sources (LEDGER_SOURCE_IDLE_DAYS). Without it (an event sampled out, never ordered;
   * the build of a ledger from an old store, which reads events in event-time order) neither
   * happens, so that only the log's order decides them.
   */
  addJson(json: string, ingestTs?: number): void {
    const source = sourceOfJson(json);
    if (source === undefined) return;
    const { sourceId } = source;
    let day: number | undefined;
    if (ingestTs !== undefined) {
      const before = this.#day ?? this.#ledger.day();
      const calendarDay = Math.floor(ingestTs / DAY_MS);
      const opens = before === undefined || calendarDay > before.day;
      const current = opens ? { day: calendarDay, number: before === undefined ? 0 : before.number + 1 } : before;
      if (opens) this.#day = current;
      day = current.number;
      // The event's own source is active on its day: noted before idle sources are looked for.
      if (this.#changed.has(sourceId) || (this.#sources.has(sourceId) && !this.#retiring.has(sourceId))) this.#noteDay(sourceId, day);
      if (opens) this.#openDay(day, before === undefined);
    }
    const changed = this.#changed.get(sourceId);
    if (changed !== undefined) {
      this.#add(changed.ranges, source.sourceSeq, changed.writes);
      return;
    }
    const stored = this.#retiring.has(sourceId) ? undefined : this.#sources.get(sourceId);
    if (stored === undefined && this.#tracked() >= LEDGER_SOURCES_MAX) {
      this.#otherEvents++;
      return;
    }
    if (stored === undefined) {
      const ranges = new SourceRanges();
      const writes: RangeWrites = new Map();
      this.#add(ranges, source.sourceSeq, writes);
      this.#changed.set(sourceId, { ranges, writes, joinedBefore: 0, fresh: true });
      this.#added++;
      // A source new on this node alone (sampled out) is dated by the ledger's day, when known.
      const dated = day ?? (this.#day ?? this.#ledger.day())?.number;
      if (dated !== undefined) this.#lastDays.set(sourceId, dated);
      return;
    }
    const ranges = stored.copy();
    const writes: RangeWrites = new Map();
    // A sourceSeq received before writes nothing.
    if (!this.#add(ranges, source.sourceSeq, writes)) return;
    this.#changed.set(sourceId, { ranges, writes, joinedBefore: stored.joined, fresh: false });
  }

  /** Sources tracked once this change is written. */
  #tracked(): number {
    return this.#sources.size - this.#retiring.size + this.#added;
  }

  /** A tracked source's day number of its newest event as this change leaves it. */
  #lastDayOf(sourceId: string): number | undefined {
    return this.#lastDays.get(sourceId) ?? (this.#retiring.has(sourceId) || this.#changed.get(sourceId)?.fresh === true ? undefined : this.#ledger.lastDay(sourceId));
  }

  /** Moves a tracked source's day number to `day` when that is newer. */
  #noteDay(sourceId: string, day: number | undefined): void {
    if (day === undefined) return;
    const last = this.#lastDayOf(sourceId);
    if (last === undefined || day > last) this.#lastDays.set(sourceId, day);
  }

  /**
   * Day number `day` opened: retires the idle sources when the ledger is nearly full. The very
   * first day a ledger sees (`first`) dates every source it holds without a day (kept by a
   * version before days were), so those have the whole idle period from then.
   */
  #openDay(day: number, first: boolean): void {
    if (first) {
      for (const sourceId of this.#sources.keys()) if (this.#lastDayOf(sourceId) === undefined && !this.#retiring.has(sourceId)) this.#lastDays.set(sourceId, day);
      return;
    }
    if (this.#tracked() < LEDGER_RETIRE_FROM_SOURCES) return;
    const idleThrough = day - LEDGER_SOURCE_IDLE_DAYS - 1;
    const idle: string[] = [];
    for (const sourceId of this.#sources.keys()) {
      if (this.#retiring.has(sourceId) || this.#changed.get(sourceId)?.fresh === true) continue;
      if ((this.#lastDayOf(sourceId) ?? -Infinity) <= idleThrough) idle.push(sourceId);
    }
    for (const [sourceId, changed] of this.#changed) if (changed.fresh && (this.#lastDayOf(sourceId) ?? -Infinity) <= idleThrough) idle.push(sourceId);
    for (const sourceId of idle) this.#retire(sourceId);
  }

  /** Retires one source: its counts go to the retired ones, its keys are deleted when written. */
  #retire(sourceId: string): void {
    const changed = this.#changed.get(sourceId);
    const ranges = changed?.ranges ?? this.#sources.get(sourceId);
    if (ranges === undefined) return;
    const retired = this.#retired ?? this.#ledger.retired();
    this.#retired = { sources: retired.sources + 1, received: retired.received + ranges.received, missing: retired.missing + ranges.missing };
    // Its ranges no longer count against the shared ones (what the change added of them included).
    this.#sharedDelta -= beyondReserve(ranges.ranges.length);
    this.#lastDays.delete(sourceId);
    this.#changed.delete(sourceId);
    if (changed?.fresh === true) this.#added--;
    else this.#retiring.add(sourceId);
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
    // Deletes first: a source retired and sent again in this change writes its new keys after.
    for (const sourceId of this.#retiring) {
      const stored = this.#sources.get(sourceId) as SourceRanges;
      for (const [from] of stored.ranges) batch.del(sourceRangeKey(sourceId, from));
      if (stored.joined > 0) batch.del(sourceJoinedKey(sourceId));
      batch.del(sourceLastDayKey(sourceId));
    }
    for (const [sourceId, { ranges, writes, joinedBefore }] of this.#changed) {
      putSourceWrites(batch, sourceId, writes, ranges.joined !== joinedBefore ? ranges.joined : undefined);
    }
    for (const [sourceId, day] of this.#lastDays) batch.put(sourceLastDayKey(sourceId), String(day));
    if (this.#otherEvents > 0) {
      this.#otherWritten = this.#ledger.other() + this.#otherEvents;
      batch.put(OTHER_SOURCES_KEY, String(this.#otherWritten));
    }
    if (this.#retired !== undefined) batch.put(RETIRED_SOURCES_KEY, JSON.stringify(this.#retired));
    if (this.#day !== undefined) batch.put(LEDGER_DAY_KEY, JSON.stringify(this.#day));
  }

  /** After the batch was written: the changes become the ledger. */
  commit(): void {
    this.#ledger.apply({
      retiring: this.#retiring,
      changed: new Map([...this.#changed].map(([sourceId, { ranges }]) => [sourceId, ranges])),
      lastDays: this.#lastDays,
      other: this.#otherWritten ?? this.#ledger.other(),
      retired: this.#retired ?? this.#ledger.retired(),
      day: this.#day ?? this.#ledger.day(),
    });
    this.#changed.clear();
    this.#retiring.clear();
    this.#lastDays.clear();
    this.#added = 0;
    this.#sharedDelta = 0;
    this.#otherEvents = 0;
    this.#otherWritten = undefined;
    this.#retired = undefined;
    this.#day = undefined;
  }
}
