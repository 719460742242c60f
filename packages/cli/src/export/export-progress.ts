import { LINE_INTERVAL_MS, type ProgressOutput } from '../import-progress.js';

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

const BAR_WIDTH = 30;
const BAR_INTERVAL_MS = 100;
const count = new Intl.NumberFormat('en-US');

/**
 * Export progress on standard error: events written and how far back in time the export has
 * reached (pages come newest first). On a terminal a bar redrawn in place, filled by the share
 * of the `from`…newest range done when `from` is given; otherwise a line every few seconds.
 */
export class ExportProgress {
  readonly #out: ProgressOutput;
  readonly #tty: boolean;
  readonly #fromMs: number | undefined;
  readonly #intervalMs: number;
  readonly #now: () => number;
  #lastMs: number;
  #newestMs: number | undefined;
  #events = 0;
  #oldestMs: number | undefined;
  #barShown = false;

  constructor(options: ExportProgressOptions) {
    this.#out = options.out;
    this.#tty = options.out.isTTY === true;
    this.#fromMs = options.fromMs;
    this.#intervalMs = this.#tty ? BAR_INTERVAL_MS : (options.lineIntervalMs ?? LINE_INTERVAL_MS);
    this.#now = options.now ?? Date.now;
    // The first line comes one interval in: a quick export prints only its summary.
    this.#lastMs = this.#now();
  }

  /** A page was written: `oldestMs` is its last (oldest) event's time. */
  page(events: number, oldestMs: number | undefined, newestMs: number | undefined): void {
    this.#events += events;
    if (oldestMs !== undefined) this.#oldestMs = oldestMs;
    this.#newestMs ??= newestMs;
    const now = this.#now();
    if (now - this.#lastMs < this.#intervalMs) return;
    this.#lastMs = now;
    this.#show();
  }

  /** A line that must stay readable (a retry): printed above the bar. */
  note(line: string): void {
    this.#clearBar();
    this.#out.write(line + '\n');
    if (this.#barShown) this.#show();
  }

  finish(): void {
    this.#clearBar();
    this.#barShown = false;
  }

  /** The share of the time range done, 0..1, when `from` bounds it. */
  #done(): number | undefined {
    if (this.#fromMs === undefined || this.#newestMs === undefined || this.#oldestMs === undefined) return undefined;
    const span = this.#newestMs - this.#fromMs;
    if (span <= 0) return undefined;
    return Math.min(1, Math.max(0, (this.#newestMs - this.#oldestMs) / span));
  }

  #show(): void {
    const done = this.#done();
    const percent = done === undefined ? '' : `${Math.floor(done * 100)}%`;
    const reached = this.#oldestMs === undefined ? '' : `back to ${new Date(this.#oldestMs).toISOString()}`;
    if (this.#tty) {
      const filled = done === undefined ? 0 : Math.round(done * BAR_WIDTH);
      this.#out.write(`\r\x1b[K[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${percent.padStart(4)} ${count.format(this.#events)} events ${reached}`);
      this.#barShown = true;
    } else {
      this.#out.write(`export: ${count.format(this.#events)} events written${percent ? ` (${percent} of the time range)` : ''}, ${reached}\n`);
    }
  }

  #clearBar(): void {
    if (this.#tty && this.#barShown) this.#out.write('\r\x1b[K');
  }
}
