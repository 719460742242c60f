import { ProgressLine, type ProgressOutput } from './progress-line.js';

export interface VerifyProgressOptions {
  out: ProgressOutput;
  /** Without a terminal: one line at most this often. */
  lineIntervalMs?: number;
  now?: () => number;
}

const count = new Intl.NumberFormat('en-US');

/** Records folded between looks at the clock: a look per record would cost more than the fold. */
const TICK_EVERY_RECORDS = 4096;

/**
 * Verify's progress on standard error: records checked, the seq reached and the rate, and the
 * share of the history done once its end is known (the tiers' head, or the node's). A verify of
 * a tier of months runs for hours; without this it printed nothing until its verdict.
 */
export class VerifyProgress {
  readonly #line: ProgressLine;
  readonly #now: () => number;
  #startedMs: number;
  #records = 0;
  #seq: number | undefined;
  #firstSeq: number | undefined;
  #headSeq: number | undefined;

  constructor(options: VerifyProgressOptions) {
    this.#now = options.now ?? Date.now;
    this.#startedMs = this.#now();
    this.#line = new ProgressLine(options, () => {
      const at = this.#seq === undefined ? '' : `, at seq ${count.format(this.#seq)}${this.#headSeq === undefined ? '' : ` of ${count.format(this.#headSeq)}`}`;
      const text = `${count.format(this.#records)} records checked${at}, ${count.format(this.#rate())} records/s`;
      return { done: this.#done(), barText: () => text, lineText: (percent) => `verify: ${percent ? `${percent} ` : ''}${text}` };
    });
  }

  /** Where the history read ends (the seq the tiers' commits or the node's log reach). */
  expectHead(seq: number | undefined): void {
    this.#headSeq = seq;
  }

  /** One record folded. */
  record(seq: number): void {
    this.#firstSeq ??= seq;
    this.#seq = seq;
    if (++this.#records % TICK_EVERY_RECORDS === 0) this.#line.tick();
  }

  /** A line that must stay readable (the tier read again): printed above the bar. */
  note(line: string): void {
    this.#line.note(line);
  }

  /** Counts from zero again: the history is read again from its start. */
  restart(): void {
    this.#startedMs = this.#now();
    this.#records = 0;
    this.#seq = undefined;
    this.#firstSeq = undefined;
  }

  finish(): void {
    this.#line.finish();
  }

  #rate(): number {
    const seconds = (this.#now() - this.#startedMs) / 1000;
    return seconds <= 0 ? 0 : Math.round(this.#records / seconds);
  }

  #done(): number | undefined {
    if (this.#headSeq === undefined || this.#firstSeq === undefined || this.#seq === undefined || this.#headSeq <= this.#firstSeq) return undefined;
    return (this.#seq - this.#firstSeq) / (this.#headSeq - this.#firstSeq);
  }
}
