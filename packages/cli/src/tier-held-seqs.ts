/** A seq range, both ends included. */
export interface SeqSpan {
  fromSeq: number;
  toSeq: number;
}

/**
 * Finds the seqs the tiers must hold (what the node lists as committed to them) that no tier
 * stream delivered. Read with the node, such a record still verified from the node's copy, so a
 * tier that lost committed rows (a manifest dropped from the manifest list, its counts edited
 * to match) passed while every engine reading the tier missed them (review). Fed the tier
 * streams' seqs in ascending order, as the merge delivers them.
 */
export class TierHeldSeqs {
  /** The ranges to hold, sorted and merged. */
  readonly #spans: SeqSpan[];
  #span = 0;
  /** The next seq of the current span not yet delivered. */
  #next: number;
  readonly #missing: SeqSpan[] = [];

  constructor(spans: readonly SeqSpan[]) {
    const sorted = [...spans].sort((a, b) => a.fromSeq - b.fromSeq);
    const merged: SeqSpan[] = [];
    for (const span of sorted) {
      const last = merged.at(-1);
      if (last !== undefined && span.fromSeq <= last.toSeq + 1) last.toSeq = Math.max(last.toSeq, span.toSeq);
      else merged.push({ ...span });
    }
    this.#spans = merged;
    this.#next = merged[0]?.fromSeq ?? 0;
  }

  /** A seq a tier stream delivered (ascending; repeats allowed). */
  see(seq: number): void {
    for (let span = this.#spans[this.#span]; span !== undefined; span = this.#spans[this.#span]) {
      if (seq < this.#next) return;
      if (seq <= span.toSeq) {
        if (seq > this.#next) this.#missing.push({ fromSeq: this.#next, toSeq: seq - 1 });
        this.#next = seq + 1;
        return;
      }
      // Past this span: what it had left was never delivered.
      this.#closeSpan();
    }
  }

  /** The ranges to hold that no tier stream delivered, ascending. */
  finish(): SeqSpan[] {
    while (this.#spans[this.#span] !== undefined) this.#closeSpan();
    return this.#missing;
  }

  #closeSpan(): void {
    const span = this.#spans[this.#span] as SeqSpan;
    if (this.#next <= span.toSeq) this.#missing.push({ fromSeq: this.#next, toSeq: span.toSeq });
    this.#span++;
    this.#next = this.#spans[this.#span]?.fromSeq ?? 0;
  }
}
