import { ProgressLine, type ProgressOutput } from '../progress-line.js';

export interface ExportProgressOptions {
  out: ProgressOutput;
  /**
   * The time range the export walks, newest first, as epoch ms: from `to` (else the newest
   * event) down to `from`. With `from` known the progress says how much of the range is done.
   */
  fromMs: number | undefined;
  /** Without a terminal: one line at most this often. */
  lineIntervalMs?: number;
  now?: () => number;
}

const count = new Intl.NumberFormat('en-US');

/**
 * Export progress on standard error: events written and how far back in time the export has
 * reached (pages come newest first); the share of the `from`…newest range done when `from` is
 * given.
 */
export class ExportProgress {
  readonly #fromMs: number | undefined;
  readonly #line: ProgressLine;
  #newestMs: number | undefined;
  #events = 0;
  #oldestMs: number | undefined;

  constructor(options: ExportProgressOptions) {
    this.#fromMs = options.fromMs;
    this.#line = new ProgressLine(options, () => {
      const reached = this.#oldestMs === undefined ? '' : `back to ${new Date(this.#oldestMs).toISOString()}`;
      return {
        done: this.#done(),
        barText: () => `${count.format(this.#events)} events ${reached}`,
        lineText: (percent) => `export: ${count.format(this.#events)} events written${percent ? ` (${percent} of the time range)` : ''}, ${reached}`,
      };
    });
  }

  /** A page was written: `oldestMs` is its last (oldest) event's time. */
  page(events: number, oldestMs: number | undefined, newestMs: number | undefined): void {
    this.#events += events;
    if (oldestMs !== undefined) this.#oldestMs = oldestMs;
    this.#newestMs ??= newestMs;
    this.#line.tick();
  }

  /** A line that must stay readable (a retry): printed above the bar. */
  note(line: string): void {
    this.#line.note(line);
  }

  finish(): void {
    this.#line.finish();
  }

  /** The share of the time range done, 0..1, when `from` bounds it. */
  #done(): number | undefined {
    if (this.#fromMs === undefined || this.#newestMs === undefined || this.#oldestMs === undefined) return undefined;
    const span = this.#newestMs - this.#fromMs;
    if (span <= 0) return undefined;
    return (this.#newestMs - this.#oldestMs) / span;
  }
}
