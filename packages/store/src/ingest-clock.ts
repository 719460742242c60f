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
  /**
   * What this clock counts from: the highest of the stamps it handed out and the log's last
   * ingestTs as it saw it, and the monotonic time that stands for.
   */
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
   * it. Nothing is stamped: what the sweep's settle window is measured against, and what every
   * ingest request asks, also while a group is being written. It leaves the clock as it was,
   * but for noting when it first saw the log moved by others (as a stamp would).
   */
  peek(logLast: number): number {
    this.#see(logLast);
    return this.#next().ingestTs;
  }

  /** A stamp for the next group of the log whose last ingestTs is `logLast`: never below it. */
  stamp(logLast: number): number {
    this.#see(logLast);
    const next = this.#next();
    this.#last = next.ingestTs;
    this.#lastMonotonic = next.monotonic;
    return next.ingestTs;
  }

  /**
   * Counts from the log's last ingestTs when the log moved past what this clock counts from
   * other than by a stamp (entries applied from a leader): from the time it is first seen.
   */
  #see(logLast: number): void {
    // At or below, the log has not moved past this clock's own stamps: one handed out and not
    // written yet (a peek while its group is written, review) or never written (all repeats, a
    // failed write). Counting again from the log's end there gave the next group the stamp of
    // the one before: ingest time went on at half speed. A cut keeps the log's highest ingestTs.
    if (logLast <= this.#last) return;
    this.#last = logLast;
    this.#lastMonotonic = this.#monotonic();
  }

  /** The next stamp, and the monotonic time it stands for (whole milliseconds: a fraction carries over). */
  #next(): { ingestTs: number; monotonic: number } {
    const wall = this.#wall();
    const monotonic = this.#monotonic();
    if (wall >= this.#last) return { ingestTs: wall, monotonic };
    const advance = Math.max(0, Math.floor(monotonic - this.#lastMonotonic));
    return { ingestTs: this.#last + advance, monotonic: this.#lastMonotonic + advance };
  }
}
