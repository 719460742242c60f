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
 * them are then no longer reported, the newest holes always are).
 */
export const SOURCE_RANGES_MAX = 10_000;

type Range = [from: number, to: number];

/** The received sourceSeqs of one source. */
export class SourceRanges {
  readonly #ranges: Range[];

  constructor(ranges: readonly (readonly [number, number])[] = []) {
    this.#ranges = ranges.map(([from, to]) => [from, to] as Range).sort((a, b) => a[0] - b[0]);
  }

  get ranges(): readonly (readonly [number, number])[] {
    return this.#ranges;
  }

  /** Records one received sourceSeq; true when it was not there yet. */
  add(seq: number): boolean {
    const ranges = this.#ranges;
    // Fast path: a source counting up by one.
    const last = ranges[ranges.length - 1];
    if (last !== undefined && seq === last[1] + 1) {
      last[1] = seq;
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
        ranges.splice(0, 2, [first[0], second[1]]);
      }
    }
    return true;
  }

  entry(sourceId: string): SourceLedgerEntry {
    const ranges = this.#ranges;
    const first = ranges[0] as Range;
    const gaps: Array<{ fromSeq: number; toSeq: number }> = [];
    let received = 0;
    let missing = 0;
    for (let i = 0; i < ranges.length; i++) {
      const [from, to] = ranges[i] as Range;
      received += to - from + 1;
      const next = ranges[i + 1];
      if (next !== undefined) {
        gaps.push({ fromSeq: to + 1, toSeq: next[0] - 1 });
        missing += next[0] - 1 - to;
      }
    }
    return { sourceId, received, firstSourceSeq: first[0], contiguousThrough: first[1], highestSourceSeq: (ranges[ranges.length - 1] as Range)[1], gaps, missing };
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

/** Every source's received sourceSeqs, as this log holds them. */
export class SourceLedger {
  readonly #sources: Map<string, SourceRanges>;

  constructor(stored: Iterable<[key: string, value: string]> = []) {
    this.#sources = new Map();
    for (const [key, value] of stored) this.#sources.set(key.slice(SOURCE_LEDGER_PREFIX.length), new SourceRanges(JSON.parse(value) as Range[]));
  }

  /**
   * The additions of one batch: applied to copies, put into the batch, and made visible by
   * {@link LedgerChange.commit} once the batch is written (a failed write changes nothing).
   */
  begin(): LedgerChange {
    return new LedgerChange(this.#sources);
  }

  /** Every source, by sourceId, optionally only one. */
  entries(sourceId?: string): SourceLedgerEntry[] {
    const ids = sourceId === undefined ? [...this.#sources.keys()].sort() : this.#sources.has(sourceId) ? [sourceId] : [];
    return ids.map((id) => (this.#sources.get(id) as SourceRanges).entry(id));
  }
}

export class LedgerChange {
  readonly #sources: Map<string, SourceRanges>;
  readonly #changed = new Map<string, SourceRanges>();

  constructor(sources: Map<string, SourceRanges>) {
    this.#sources = sources;
  }

  /** Reads the source of one stored event's JSON and records it; events without a sourceSeq change nothing. */
  addJson(json: string): void {
    const source = sourceOfJson(json);
    if (source === undefined) return;
    let ranges = this.#changed.get(source.sourceId);
    if (ranges === undefined) {
      ranges = new SourceRanges(this.#sources.get(source.sourceId)?.ranges ?? []);
      if (!ranges.add(source.sourceSeq)) return;
      this.#changed.set(source.sourceId, ranges);
      return;
    }
    ranges.add(source.sourceSeq);
  }

  /** Puts every changed source's ranges into the batch. */
  putChanged(batch: PutSink): void {
    for (const [sourceId, ranges] of this.#changed) batch.put(sourceLedgerKey(sourceId), JSON.stringify(ranges.ranges));
  }

  /** After the batch was written: the changes become the ledger. */
  commit(): void {
    for (const [sourceId, ranges] of this.#changed) this.#sources.set(sourceId, ranges);
    this.#changed.clear();
  }
}
