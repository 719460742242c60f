/**
 * The time the writer stamps as ingestTs. It is the wall clock, except while the wall clock is
 * behind the log's last ingestTs (stepped back, or a node restarted with a slower clock): then
 * it is that last ingestTs plus the monotonic time elapsed since, so ingestTs goes on at real
 * speed. Taking `max(wall, last)` instead gave every event of the whole stretch the same
 * millisecond: nothing settled for tiering until the wall clock caught up, then the stretch went
 * to S3 as one millisecond group, which a batch never splits (one unbounded batch).
 */
export class IngestClock {
  readonly #wall: () => number;
  readonly #monotonic: () => number;
  /** The last ingestTs of the log as this clock saw it, and the monotonic time it stands for. */
  #last: number;
  #lastMonotonic: number;

  constructor(wall: () => number, monotonic: () => number, lastIngestTs: number) {
    this.#wall = wall;
    this.#monotonic = monotonic;
    this.#last = lastIngestTs;
    this.#lastMonotonic = monotonic();
  }

  /**
   * The ingestTs of a stamp taken now after a log whose last ingestTs is `logLast`; never below
   * it. Nothing changes: what the sweep's settle window is measured against.
   */
  peek(logLast: number): number {
    const wall = this.#wall();
    const { last, lastMonotonic } = this.#base(logLast);
    return wall >= last ? wall : last + Math.max(0, Math.floor(this.#monotonic() - lastMonotonic));
  }

  /** A stamp for the next group of the log whose last ingestTs is `logLast`: never below it. */
  stamp(logLast: number): number {
    const wall = this.#wall();
    const monotonic = this.#monotonic();
    const base = this.#base(logLast);
    if (wall >= base.last) {
      this.#last = wall;
      this.#lastMonotonic = monotonic;
      return wall;
    }
    // Whole milliseconds only: the fraction left carries to the next stamp.
    const advance = Math.max(0, Math.floor(monotonic - base.lastMonotonic));
    this.#last = base.last + advance;
    this.#lastMonotonic = base.lastMonotonic + advance;
    return this.#last;
  }

  /** The log moved other than by a stamp (entries applied, a cut): its last ingestTs counts from now. */
  #base(logLast: number): { last: number; lastMonotonic: number } {
    if (logLast === this.#last) return { last: this.#last, lastMonotonic: this.#lastMonotonic };
    this.#last = logLast;
    this.#lastMonotonic = this.#monotonic();
    return { last: this.#last, lastMonotonic: this.#lastMonotonic };
  }
}
