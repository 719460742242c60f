/** Where progress goes: standard error, or anything with the same two members (tests). */
export interface ProgressOutput {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

/** Without a terminal, a progress line at most this often by default. */
export const LINE_INTERVAL_MS = 5_000;
/** On a terminal the bar is redrawn at most this often. */
const BAR_INTERVAL_MS = 100;
const BAR_WIDTH = 30;

/** What a long command's progress says at one moment. */
export interface ProgressView {
  /** The share of the work done, 0..1, when it is known: fills the bar and gives a percentage. */
  done: number | undefined;
  /** On a terminal: what follows the bar and the percentage. */
  barText(): string;
  /** Without a terminal: the whole line (the percentage is passed in, '' when unknown). */
  lineText(percent: string): string;
}

export interface ProgressLineOptions {
  out: ProgressOutput;
  /** Without a terminal: one line at most this often. */
  lineIntervalMs?: number;
  now?: () => number;
}

/**
 * Progress on standard error for import and export: a bar redrawn in place on a terminal,
 * otherwise a line every few seconds (a log or CI output must not fill with carriage returns).
 * Lines that must stay readable (a malformed record, a retry) go through `note`, which keeps
 * the bar below them. The first output comes one interval in, so a quick command prints only
 * its summary.
 */
export class ProgressLine {
  readonly #out: ProgressOutput;
  readonly #tty: boolean;
  readonly #intervalMs: number;
  readonly #now: () => number;
  readonly #view: () => ProgressView;
  #lastMs: number;
  #barShown = false;

  constructor(options: ProgressLineOptions, view: () => ProgressView) {
    this.#out = options.out;
    this.#tty = options.out.isTTY === true;
    this.#intervalMs = this.#tty ? BAR_INTERVAL_MS : (options.lineIntervalMs ?? LINE_INTERVAL_MS);
    this.#now = options.now ?? Date.now;
    this.#view = view;
    this.#lastMs = this.#now();
  }

  /** The work moved on: shows it when an interval has passed since the last output. */
  tick(): void {
    const now = this.#now();
    if (now - this.#lastMs < this.#intervalMs) return;
    this.#lastMs = now;
    this.#show();
  }

  /** A line that must stay readable: printed above the bar. */
  note(line: string): void {
    this.#clearBar();
    this.#out.write(line + '\n');
    if (this.#barShown) this.#show();
  }

  /** Removes the bar, so the summary starts on a clean line. */
  finish(): void {
    this.#clearBar();
    this.#barShown = false;
  }

  #show(): void {
    const view = this.#view();
    const done = view.done === undefined ? undefined : Math.min(1, Math.max(0, view.done));
    const percent = done === undefined ? '' : `${Math.floor(done * 100)}%`;
    if (this.#tty) {
      const filled = done === undefined ? 0 : Math.round(done * BAR_WIDTH);
      this.#out.write(`\r\x1b[K[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${percent.padStart(4)} ${view.barText()}`);
      this.#barShown = true;
    } else {
      this.#out.write(view.lineText(percent) + '\n');
    }
  }

  #clearBar(): void {
    if (this.#tty && this.#barShown) this.#out.write('\r\x1b[K');
  }
}
