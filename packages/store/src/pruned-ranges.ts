/** Seqs retention deleted from this store, and the chain hash of the last one in the range. */
export interface PrunedRange {
  fromSeq: number;
  toSeq: number;
  /** chain_hash of the entry at `toSeq`; absent for entries without chain fields. */
  chainHash?: string;
}

/**
 * Most ranges kept. Retention deletes by event time, so late events leave islands; past this
 * many, the ranges closest together are joined (the seqs between are still in the log, so
 * calling them deleted only means the verifier cannot link across those holes), down to
 * PRUNED_RANGES_JOINED_TO at once.
 */
export const PRUNED_RANGES_MAX = 10_000;

/**
 * Ranges left after a join. Joining one pair per range added scanned all 10,000 ranges each
 * time (~90 µs), and once at the bound nearly every deleted entry adds one: a prune batch of
 * 1,000 held the writer ~90 ms. Joining a tenth at once makes the scan one per ~1,000 adds.
 */
export const PRUNED_RANGES_JOINED_TO = 9_000;

/**
 * The seqs retention deleted, as sorted, disjoint ranges: what lets a verifier tell records
 * retention removed from records that went missing, and go on with the chain after them.
 */
export class PrunedRanges {
  #ranges: PrunedRange[];

  constructor(ranges: readonly PrunedRange[]) {
    this.#ranges = ranges.map((range) => ({ ...range })).sort((a, b) => a.fromSeq - b.fromSeq);
  }

  get all(): readonly PrunedRange[] {
    return this.#ranges;
  }

  /** Adds one deleted entry. */
  add(seq: number, chainHash: string | undefined): void {
    const ranges = this.#ranges;
    // The first range that starts after seq.
    let low = 0;
    let high = ranges.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((ranges[mid] as PrunedRange).fromSeq <= seq) low = mid + 1;
      else high = mid;
    }
    const before = ranges[low - 1];
    const after = ranges[low];
    if (before !== undefined && before.toSeq >= seq) return;
    if (before !== undefined && before.toSeq === seq - 1) {
      before.toSeq = seq;
      setAnchor(before, chainHash);
      if (after !== undefined && after.fromSeq === seq + 1) {
        before.toSeq = after.toSeq;
        setAnchor(before, after.chainHash);
        ranges.splice(low, 1);
      }
    } else if (after !== undefined && after.fromSeq === seq + 1) {
      after.fromSeq = seq;
    } else {
      const range: PrunedRange = { fromSeq: seq, toSeq: seq };
      setAnchor(range, chainHash);
      ranges.splice(low, 0, range);
      if (ranges.length > PRUNED_RANGES_MAX) this.#joinClosest();
    }
  }

  /**
   * Adds a whole range after every range held (seqs another node's retention deleted, which a
   * replicated batch skipped), joined to the last one when it follows it without a hole. One
   * that does not come after every range held is not added (false).
   */
  addAfter(range: PrunedRange): boolean {
    const last = this.#ranges.at(-1);
    if (range.fromSeq > range.toSeq || (last !== undefined && range.fromSeq <= last.toSeq)) return false;
    if (last !== undefined && last.toSeq === range.fromSeq - 1) {
      last.toSeq = range.toSeq;
      setAnchor(last, range.chainHash);
      return true;
    }
    const added: PrunedRange = { fromSeq: range.fromSeq, toSeq: range.toSeq };
    setAnchor(added, range.chainHash);
    this.#ranges.push(added);
    if (this.#ranges.length > PRUNED_RANGES_MAX) this.#joinClosest();
    return true;
  }

  /**
   * Forgets ranges from `seq` on (the log was cut there). A range the cut ends inside now ends
   * at `seq - 1`, with `chainHashAtCut` (the chain hash there, when the log knows it: an entry
   * a join of ranges left inside) or without one.
   */
  cutFrom(seq: number, chainHashAtCut?: string): void {
    this.#ranges = this.#ranges.filter((range) => range.fromSeq < seq);
    const last = this.#ranges.at(-1);
    if (last !== undefined && last.toSeq >= seq) {
      last.toSeq = seq - 1;
      setAnchor(last, chainHashAtCut);
    }
  }

  /** The chain hash kept for `seq` when it ends a range. */
  anchorAt(seq: number): string | undefined {
    return this.#ranges.find((range) => range.toSeq === seq)?.chainHash;
  }

  /** Joins the ranges with the smallest holes between them until PRUNED_RANGES_JOINED_TO are left. */
  #joinClosest(): void {
    const ranges = this.#ranges;
    const gapBefore = (i: number) => (ranges[i] as PrunedRange).fromSeq - (ranges[i - 1] as PrunedRange).toSeq;
    // Ranges to join to the one before them: the smallest holes, the earliest of equal ones.
    const joined = Array.from({ length: ranges.length - 1 }, (_, i) => i + 1)
      .sort((a, b) => gapBefore(a) - gapBefore(b) || a - b)
      .slice(0, ranges.length - PRUNED_RANGES_JOINED_TO);
    const joins = new Uint8Array(ranges.length);
    for (const i of joined) joins[i] = 1;
    const kept: PrunedRange[] = [];
    for (let i = 0; i < ranges.length; i++) {
      const range = ranges[i] as PrunedRange;
      const left = kept.at(-1);
      if (joins[i] === 1 && left !== undefined) {
        left.toSeq = range.toSeq;
        setAnchor(left, range.chainHash);
      } else kept.push(range);
    }
    this.#ranges = kept;
  }
}

function setAnchor(range: PrunedRange, chainHash: string | undefined): void {
  if (chainHash === undefined) delete range.chainHash;
  else range.chainHash = chainHash;
}
