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
   * it. Nothing is stamped: what the sweep's settle window is measured against.
   */
  peek(logLast: number): number {
    return this.#next(logLast).ingestTs;
  }

  /** A stamp for the next group of the log whose last ingestTs is `logLast`: never below it. */
  stamp(logLast: number): number {
    const next = this.#next(logLast);
    this.#last = next.ingestTs;
    this.#lastMonotonic = next.monotonic;
    return next.ingestTs;
  }

  /** The next stamp, and the monotonic time it stands for (whole milliseconds: a fraction carries over). */
  #next(logLast: number): { ingestTs: number; monotonic: number } {
    // The log moved other than by a stamp (entries applied, a cut): its last ingestTs counts from now.
    if (logLast !== this.#last) {
      this.#last = logLast;
      this.#lastMonotonic = this.#monotonic();
    }
    const wall = this.#wall();
    const monotonic = this.#monotonic();
    if (wall >= this.#last) return { ingestTs: wall, monotonic };
    const advance = Math.max(0, Math.floor(monotonic - this.#lastMonotonic));
    return { ingestTs: this.#last + advance, monotonic: this.#lastMonotonic + advance };
  }
}
