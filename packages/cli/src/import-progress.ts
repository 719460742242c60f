/** Where progress goes: standard error, or anything with the same two members (tests). */
export interface ProgressOutput {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

export interface ProgressState {
  bytesRead: number;
  records: number;
  sent: number;
  file: string;
}

export interface ImportProgressOptions {
  out: ProgressOutput;
  /** Size of all inputs, when known (not for standard input): gives a percentage. */
  totalBytes: number | undefined;
  /** Without a terminal: one line at most this often. */
  lineIntervalMs?: number;
  now?: () => number;
}

const BAR_WIDTH = 30;
/** On a terminal the bar is redrawn at most this often. */
const BAR_INTERVAL_MS = 100;
export const LINE_INTERVAL_MS = 5_000;

const count = new Intl.NumberFormat('en-US');

/**
 * Import progress on standard error: a bar redrawn in place on a terminal, otherwise a line
 * every few seconds (a log or CI output must not fill with carriage returns). Reports such as
 * malformed records go through `note`, which keeps the bar below them.
 */
export class ImportProgress {
  readonly #out: ProgressOutput;
  readonly #tty: boolean;
  readonly #totalBytes: number | undefined;
  readonly #intervalMs: number;
  readonly #now: () => number;
  #lastMs = -Infinity;
  #state: ProgressState = { bytesRead: 0, records: 0, sent: 0, file: '' };
  #barShown = false;

  constructor(options: ImportProgressOptions) {
    this.#out = options.out;
    this.#tty = options.out.isTTY === true;
    this.#totalBytes = options.totalBytes;
    this.#intervalMs = this.#tty ? BAR_INTERVAL_MS : (options.lineIntervalMs ?? LINE_INTERVAL_MS);
    this.#now = options.now ?? Date.now;
    // The first line comes one interval in: a quick import prints only its summary.
    this.#lastMs = this.#now();
  }

  update(state: ProgressState): void {
    this.#state = state;
    const now = this.#now();
    if (now - this.#lastMs < this.#intervalMs) return;
    this.#lastMs = now;
    this.#show();
  }

  /** A line that must stay readable (a malformed record): printed above the bar. */
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

  #percent(): string {
    if (this.#totalBytes === undefined || this.#totalBytes === 0) return '';
    return `${Math.min(100, Math.floor((this.#state.bytesRead / this.#totalBytes) * 100))}%`;
  }

  #show(): void {
    const { records, sent, file } = this.#state;
    const percent = this.#percent();
    if (this.#tty) {
      const filled = this.#totalBytes ? Math.round((Math.min(this.#state.bytesRead, this.#totalBytes) / this.#totalBytes) * BAR_WIDTH) : 0;
      const bar = '#'.repeat(filled) + '.'.repeat(BAR_WIDTH - filled);
      this.#out.write(`\r\x1b[K[${bar}] ${percent.padStart(4)} ${count.format(records)} records, ${count.format(sent)} sent  ${file}`);
      this.#barShown = true;
    } else {
      this.#out.write(`import: ${count.format(records)} records read${percent ? ` (${percent} of the input)` : ''}, ${count.format(sent)} sent; reading ${file}\n`);
    }
  }

  #clearBar(): void {
    if (this.#tty && this.#barShown) this.#out.write('\r\x1b[K');
  }
}
