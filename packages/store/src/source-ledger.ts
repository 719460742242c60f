import type { Level } from 'level';
import { localKey, prefixEnd } from './event-keys.js';
import { SOURCE_ID_KEY, stringFieldOfJson } from './json-field.js';

/**
 * The completeness ledger: per source (an event's `sourceId`), which of its per-source sequence
 * numbers (`sourceSeq`) this log has received, kept as sorted, disjoint ranges. From them come
 * the highest sourceSeq received without a hole since the first, and the holes themselves —
 * events a source sent (it counted them) that never arrived. Receiving a sourceSeq twice (a
 * retry, a truncated suffix ordered again) changes nothing; retention does not take a
 * sourceSeq back (it was received).
 */

/** One source's view in the ledger. */
export interface SourceLedgerEntry {
  sourceId: string;
  /** How many distinct sourceSeqs were received. */
  received: number;
  firstSourceSeq: number;
  /** The highest sourceSeq with every one from firstSourceSeq up to it received. */
  contiguousThrough: number;
  highestSourceSeq: number;
  /** The sourceSeqs between the first and the highest that were not received, as ranges. */
  gaps: Array<{ fromSeq: number; toSeq: number }>;
  /** How many sourceSeqs the gaps hold. */
  missing: number;
}

/**
 * Most ranges kept per source. A source that skips a sourceSeq after every event would grow
 * its list without bound; past this many, the two oldest ranges are joined (the holes between
 * them are then no longer reported, the newest holes always are; `received` still counts only
 * the sourceSeqs that arrived).
 */
export const SOURCE_RANGES_MAX = 10_000;

/**
 * Most sources the ledger tracks one by one, each with its ranges. Past it, the events with a
 * sourceSeq of any further source are counted together (`otherSources`), without ranges: a
 * holder of an ingest token sending a new sourceId with every event would otherwise grow the
 * ledger (kept in memory, answered whole, summed by every /metrics scrape) without bound. The
 * first sources seen keep their place; a source's place is never given to another.
 */
export const LEDGER_SOURCES_MAX = 10_000;

type Range = [from: number, to: number];

/**
 * One source's ranges as stored under `g!`: a JSON array of `[from, to]` ranges, or, once the
 * two oldest were joined (SOURCE_RANGES_MAX) and the ranges hold sourceSeqs that never arrived,
 * `{"ranges": [...], "received": N}` with the distinct sourceSeqs received.
 */
export type StoredSourceRanges = Array<[number, number]> | { ranges: Array<[number, number]>; received: number };

/** The received sourceSeqs of one source. */
export class SourceRanges {
  readonly #ranges: Range[];
  /** How many sourceSeqs the ranges span (holes joined in included), kept with every change. */
  #spanned = 0;
  /** How many distinct sourceSeqs were received: the spans less the holes joined in. */
  #received = 0;

  /** `received` defaults to what the ranges span (no hole joined in). */
  constructor(ranges: readonly (readonly [number, number])[] = [], received?: number) {
    this.#ranges = ranges.map(([from, to]) => [from, to] as Range).sort((a, b) => a[0] - b[0]);
    for (const [from, to] of this.#ranges) this.#spanned += to - from + 1;
    this.#received = received ?? this.#spanned;
  }

  /** Reads the `g!` value (StoredSourceRanges). */
  static parse(json: string): SourceRanges {
    const stored = JSON.parse(json) as StoredSourceRanges;
    return Array.isArray(stored) ? new SourceRanges(stored) : new SourceRanges(stored.ranges, stored.received);
  }

  /** The `g!` value: the plain array while no hole was joined in (as versions before wrote it). */
  serialize(): string {
    return this.#received === this.#spanned ? JSON.stringify(this.#ranges) : JSON.stringify({ ranges: this.#ranges, received: this.#received });
  }

  get ranges(): readonly (readonly [number, number])[] {
    return this.#ranges;
  }

  /** How many distinct sourceSeqs were received. */
  get received(): number {
    return this.#received;
  }

  /** How many sourceSeqs the listed holes (between the ranges) hold. */
  get missing(): number {
    const ranges = this.#ranges;
    const first = ranges[0];
    const last = ranges[ranges.length - 1];
    return first === undefined || last === undefined ? 0 : last[1] - first[0] + 1 - this.#spanned;
  }

  /** Records one received sourceSeq; true when it was not there yet. */
  add(seq: number): boolean {
    const ranges = this.#ranges;
    // Fast path: a source counting up by one.
    const last = ranges[ranges.length - 1];
    if (last !== undefined && seq === last[1] + 1) {
      last[1] = seq;
      this.#spanned++;
      this.#received++;
      return true;
    }
    if (last !== undefined && seq >= last[0] && seq <= last[1]) return false;
    // The first range that starts after seq.
    let low = 0;
    let high = ranges.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((ranges[mid] as Range)[0] <= seq) low = mid + 1;
      else high = mid;
    }
    const before = ranges[low - 1];
    const after = ranges[low];
    if (before !== undefined && before[1] >= seq) return false;
    this.#spanned++;
    this.#received++;
    if (before !== undefined && before[1] === seq - 1) {
      before[1] = seq;
      if (after !== undefined && after[0] === seq + 1) {
        before[1] = after[1];
        ranges.splice(low, 1);
      }
    } else if (after !== undefined && after[0] === seq + 1) {
      after[0] = seq;
    } else {
      ranges.splice(low, 0, [seq, seq]);
      if (ranges.length > SOURCE_RANGES_MAX) {
        const [first, second] = ranges as [Range, Range];
        // The hole between them is no longer listed (nor in `missing`), but was not received.
        this.#spanned += second[0] - first[1] - 1;
        ranges.splice(0, 2, [first[0], second[1]]);
      }
    }
    return true;
  }

  /** An independent copy (a batch changes copies, made the ledger once written). */
  copy(): SourceRanges {
    return new SourceRanges(this.#ranges, this.#received);
  }

  entry(sourceId: string): SourceLedgerEntry {
    const ranges = this.#ranges;
    const first = ranges[0] as Range;
    const gaps: Array<{ fromSeq: number; toSeq: number }> = [];
    let missing = 0;
    for (let i = 0; i < ranges.length; i++) {
      const [, to] = ranges[i] as Range;
      const next = ranges[i + 1];
      if (next !== undefined) {
        gaps.push({ fromSeq: to + 1, toSeq: next[0] - 1 });
        missing += next[0] - 1 - to;
      }
    }
    return { sourceId, received: this.#received, firstSourceSeq: first[0], contiguousThrough: first[1], highestSourceSeq: (ranges[ranges.length - 1] as Range)[1], gaps, missing };
  }
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

/** Anything that takes puts: a chained LevelDB batch. */
interface PutSink {
  put(key: string, value: string): unknown;
}

/** Key of one source's received ranges. */
export const SOURCE_LEDGER_PREFIX = 'g!';

export function sourceLedgerKey(sourceId: string): string {
  return SOURCE_LEDGER_PREFIX + sourceId;
}

/**
 * Where the events of the sources past LEDGER_SOURCES_MAX are counted: in this node's own
 * metadata, not under `g!` (every string is a possible sourceId).
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

/** Every source's received sourceSeqs, as this log holds them. */
export class SourceLedger {
  readonly #sources = new Map<string, SourceRanges>();
  /** Events with a sourceSeq of sources the ledger does not track one by one. */
  #other = 0;
  #missing = 0;
  #withGaps = 0;

  /**
   * Reads a store's ledger. Sources stored past LEDGER_SOURCES_MAX (by a version without the
   * bound) are folded into the other sources' count, their sourceSeqs counted as events, and
   * their keys deleted with the new count in one batch, so they are folded once.
   */
  static async load(db: Level<string, string>): Promise<SourceLedger> {
    const ledger = new SourceLedger();
    let other = Number((await db.get(OTHER_SOURCES_KEY)) ?? 0);
    const folded: string[] = [];
    for await (const [key, value] of db.iterator({ gte: SOURCE_LEDGER_PREFIX, lt: prefixEnd(SOURCE_LEDGER_PREFIX) })) {
      const ranges = SourceRanges.parse(value);
      if (ledger.#sources.size < LEDGER_SOURCES_MAX) ledger.#set(key.slice(SOURCE_LEDGER_PREFIX.length), ranges);
      else {
        other += ranges.received;
        folded.push(key);
      }
    }
    if (folded.length > 0) {
      const batch = db.batch();
      for (const key of folded) batch.del(key);
      batch.put(OTHER_SOURCES_KEY, String(other));
      await batch.write({ sync: true });
    }
    ledger.#other = other;
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
    }
    this.#sources.set(sourceId, ranges);
    this.#missing += ranges.missing;
    if (ranges.missing > 0) this.#withGaps++;
  }

  /**
   * The additions of one batch: applied to copies, put into the batch, and made visible by
   * {@link LedgerChange.commit} once the batch is written (a failed write changes nothing).
   */
  begin(): LedgerChange {
    return new LedgerChange(this.#sources, () => this.#other, (changed, other) => {
      for (const [sourceId, ranges] of changed) this.#set(sourceId, ranges);
      this.#other = other;
    });
  }

  /** Every tracked source, by sourceId, optionally only one. */
  entries(sourceId?: string): SourceLedgerEntry[] {
    const ids = sourceId === undefined ? [...this.#sources.keys()].sort() : this.#sources.has(sourceId) ? [sourceId] : [];
    return ids.map((id) => (this.#sources.get(id) as SourceRanges).entry(id));
  }

  /** The totals, without building any entry. */
  summary(): SourceLedgerSummary {
    return { sources: this.#sources.size, sourcesWithGaps: this.#withGaps, missing: this.#missing, otherSourceEvents: this.#other };
  }
}

export class LedgerChange {
  readonly #sources: ReadonlyMap<string, SourceRanges>;
  readonly #other: () => number;
  readonly #apply: (changed: ReadonlyMap<string, SourceRanges>, other: number) => void;
  readonly #changed = new Map<string, SourceRanges>();
  /** Sources this change adds that the ledger does not track yet. */
  #added = 0;
  /** Events of untracked sources this change counts. */
  #otherEvents = 0;
  #otherWritten: number | undefined;

  constructor(sources: ReadonlyMap<string, SourceRanges>, other: () => number, apply: (changed: ReadonlyMap<string, SourceRanges>, other: number) => void) {
    this.#sources = sources;
    this.#other = other;
    this.#apply = apply;
  }

  /**
   * Reads the source of one stored event's JSON and records it; events without a sourceSeq
   * change nothing. A source new to a ledger that tracks LEDGER_SOURCES_MAX already is counted
   * with the other sources.
   */
  addJson(json: string): void {
    const source = sourceOfJson(json);
    if (source === undefined) return;
    let ranges = this.#changed.get(source.sourceId);
    if (ranges === undefined) {
      const stored = this.#sources.get(source.sourceId);
      if (stored === undefined && this.#sources.size + this.#added >= LEDGER_SOURCES_MAX) {
        this.#otherEvents++;
        return;
      }
      ranges = stored === undefined ? new SourceRanges() : stored.copy();
      if (!ranges.add(source.sourceSeq)) return;
      this.#changed.set(source.sourceId, ranges);
      if (stored === undefined) this.#added++;
      return;
    }
    ranges.add(source.sourceSeq);
  }

  /** Puts every changed source's ranges (and the other sources' count) into the batch. */
  putChanged(batch: PutSink): void {
    for (const [sourceId, ranges] of this.#changed) batch.put(sourceLedgerKey(sourceId), ranges.serialize());
    if (this.#otherEvents > 0) {
      this.#otherWritten = this.#other() + this.#otherEvents;
      batch.put(OTHER_SOURCES_KEY, String(this.#otherWritten));
    }
  }

  /** After the batch was written: the changes become the ledger. */
  commit(): void {
    this.#apply(this.#changed, this.#otherWritten ?? this.#other());
    this.#changed.clear();
    this.#added = 0;
    this.#otherEvents = 0;
    this.#otherWritten = undefined;
  }
}
