import { ProgressLine, type ProgressOutput } from './progress-line.js';

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

const count = new Intl.NumberFormat('en-US');

/**
 * Import progress on standard error: records read and sent, the file being read, and the share
 * of the input's bytes read when its size is known. Reports such as malformed records go
 * through `note`, which keeps the bar below them.
 */
export class ImportProgress {
  readonly #totalBytes: number | undefined;
  readonly #line: ProgressLine;
  #state: ProgressState = { bytesRead: 0, records: 0, sent: 0, file: '' };

  constructor(options: ImportProgressOptions) {
    this.#totalBytes = options.totalBytes;
    this.#line = new ProgressLine(options, () => {
      const { bytesRead, records, sent, file } = this.#state;
      return {
        done: this.#totalBytes ? bytesRead / this.#totalBytes : undefined,
        barText: () => `${count.format(records)} records, ${count.format(sent)} sent  ${file}`,
        lineText: (percent) => `import: ${count.format(records)} records read${percent ? ` (${percent} of the input)` : ''}, ${count.format(sent)} sent; reading ${file}`,
      };
    });
  }

  update(state: ProgressState): void {
    this.#state = state;
    this.#line.tick();
  }

  /** A line that must stay readable (a malformed record): printed above the bar. */
  note(line: string): void {
    this.#line.note(line);
  }

  /** Removes the bar, so the summary starts on a clean line. */
  finish(): void {
    this.#line.finish();
  }
}
