/**
 * One source's received sourceSeqs, as sorted, disjoint ranges, and the changes to them a batch
 * must store. The ledger (source-ledger.ts) decides, per added sourceSeq, whether the source
 * may hold one more range (its budgets); here the ranges only follow that decision.
 */

/** One source's view in the ledger, as GET /admin/audit/ledger answers it. */
export interface SourceLedgerEntry {
  sourceId: string;
  /** How many distinct sourceSeqs were received. */
  received: number;
  firstSourceSeq: number;
  /** The highest sourceSeq with every one from firstSourceSeq up to it received. */
  contiguousThrough: number;
  highestSourceSeq: number;
  /**
   * The sourceSeqs between the first and the highest that were not received, as ranges, in
   * ascending order: the newest `gapsMax` of them when the entry was asked with a bound.
   */
  gaps: Array<{ fromSeq: number; toSeq: number }>;
  /** How many holes the ledger lists for the source (`gaps` may show only the newest of them). */
  gapCount: number;
  /** True when `gaps` leaves out older holes (gapCount is larger than gaps.length). */
  gapsTruncated: boolean;
  /** How many sourceSeqs the listed holes hold, all of them (not only those in `gaps`). */
  missing: number;
}

/**
 * Most ranges kept per source. A source that skips a sourceSeq after every event would grow
 * its list without bound; past this many, the two oldest ranges are joined (the hole between
 * them is then no longer reported, the newest holes always are; `received` still counts only
 * the sourceSeqs that arrived). The ledger also bounds the ranges of all sources together
 * (LEDGER_RANGES_MAX in source-ledger.ts).
 */
export const SOURCE_RANGES_MAX = 1_000;

/** `[from, to]`, both received. Never changed in place: a copy of the list shares them. */
export type Range = readonly [from: number, to: number];

/**
 * What a batch must store of one source's ranges, by range start: the range's end, or null
 * for a start that no longer begins a range. Only the last change of a start counts.
 */
export type RangeWrites = Map<number, number | null>;

/** The received sourceSeqs of one source. */
export class SourceRanges {
  #ranges: Range[];
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

  get ranges(): readonly Range[] {
    return this.#ranges;
  }

  /** How many distinct sourceSeqs were received. */
  get received(): number {
    return this.#received;
  }

  /** How many sourceSeqs the ranges span that never arrived: holes joined into a range. */
  get joined(): number {
    return this.#spanned - this.#received;
  }

  /** How many sourceSeqs the listed holes (between the ranges) hold. */
  get missing(): number {
    const ranges = this.#ranges;
    const first = ranges[0];
    const last = ranges[ranges.length - 1];
    return first === undefined || last === undefined ? 0 : last[1] - first[0] + 1 - this.#spanned;
  }

  /**
   * Records one received sourceSeq; true when it was not there yet. When it needs a range of
   * its own and `mayAddRange` is false, the two oldest ranges are joined so the count of ranges
   * stays (a source's first range is always added). Every range start it changes is recorded
   * in `writes`.
   */
  add(seq: number, mayAddRange = this.#ranges.length < SOURCE_RANGES_MAX, writes?: RangeWrites): boolean {
    const ranges = this.#ranges;
    // Fast path: a source counting up by one.
    const last = ranges[ranges.length - 1];
    if (last !== undefined && seq === last[1] + 1) {
      ranges[ranges.length - 1] = [last[0], seq];
      writes?.set(last[0], seq);
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
      if (after !== undefined && after[0] === seq + 1) {
        ranges.splice(low - 1, 2, [before[0], after[1]]);
        writes?.set(after[0], null);
        writes?.set(before[0], after[1]);
      } else {
        ranges[low - 1] = [before[0], seq];
        writes?.set(before[0], seq);
      }
    } else if (after !== undefined && after[0] === seq + 1) {
      ranges[low] = [seq, after[1]];
      writes?.set(after[0], null);
      writes?.set(seq, after[1]);
    } else {
      ranges.splice(low, 0, [seq, seq]);
      writes?.set(seq, seq);
      if (!mayAddRange && ranges.length > 1) this.keepNewest(ranges.length - 1, writes);
    }
    return true;
  }

  /**
   * Joins the oldest ranges into one until at most `count` are left (at least one): the holes
   * between them are no longer listed, and not counted as received.
   */
  keepNewest(count: number, writes?: RangeWrites): void {
    const ranges = this.#ranges;
    const joinedRanges = ranges.length - Math.max(1, count) + 1;
    if (joinedRanges <= 1) return;
    const first = ranges[0] as Range;
    const lastJoined = ranges[joinedRanges - 1] as Range;
    for (let i = 1; i < joinedRanges; i++) {
      const range = ranges[i] as Range;
      // The hole before this range becomes part of the joined one (spanned, not received).
      this.#spanned += range[0] - (ranges[i - 1] as Range)[1] - 1;
      writes?.set(range[0], null);
    }
    ranges.splice(0, joinedRanges, [first[0], lastJoined[1]]);
    writes?.set(first[0], lastJoined[1]);
  }

  /** An independent copy (a batch changes copies, made the ledger once written): shares the ranges, which never change in place. */
  copy(): SourceRanges {
    const copy = new SourceRanges();
    copy.#ranges = this.#ranges.slice();
    copy.#spanned = this.#spanned;
    copy.#received = this.#received;
    return copy;
  }

  /** The entry answered for this source; with `gapsMax`, only the newest that many holes are listed. */
  entry(sourceId: string, gapsMax = Infinity): SourceLedgerEntry {
    const ranges = this.#ranges;
    const first = ranges[0] as Range;
    const gapCount = ranges.length - 1;
    const gaps: Array<{ fromSeq: number; toSeq: number }> = [];
    for (let i = Math.max(1, ranges.length - gapsMax); i < ranges.length; i++) {
      gaps.push({ fromSeq: (ranges[i - 1] as Range)[1] + 1, toSeq: (ranges[i] as Range)[0] - 1 });
    }
    return {
      sourceId,
      received: this.#received,
      firstSourceSeq: first[0],
      contiguousThrough: first[1],
      highestSourceSeq: (ranges[ranges.length - 1] as Range)[1],
      gaps,
      gapCount,
      gapsTruncated: gaps.length < gapCount,
      missing: this.missing,
    };
  }
}
