/**
 * Counts refused requests per client address in fixed windows, so one client's flood of bad
 * credentials is answered 429 past a threshold and summarised, instead of each refusal
 * becoming a stored, replicated audit event. Pure bookkeeping over an injected clock.
 */
export interface ClientRefusalsOptions {
  /** Refusals per client per window answered and recorded one by one; past it, 429. */
  refusalsMax: number;
  windowMs: number;
  /** Clients tracked at once; past it, new addresses share one entry (`*`), still bounded. */
  clientsMax: number;
}

/** The refusals of one client's window past the threshold: recorded as one summary event. */
export interface RefusalSummary {
  clientAddress: string;
  /** Refusals answered 429 (not recorded one by one). */
  count: number;
  fromMs: number;
  toMs: number;
}

export type RefusalVerdict = { limited: false } | { limited: true; retryAfterSec: number };

interface ClientWindow {
  startMs: number;
  refused: number;
}

/** The address under which clients beyond `clientsMax` are counted together. */
export const OTHER_CLIENTS = '*';

export class ClientRefusals {
  readonly #options: ClientRefusalsOptions;
  readonly #windows = new Map<string, ClientWindow>();

  constructor(options: ClientRefusalsOptions) {
    for (const [name, value] of Object.entries(options)) {
      if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`${name} must be a positive integer, got ${String(value)}`);
    }
    this.#options = options;
  }

  /** Counts one refusal of `clientAddress` at `nowMs`: limited once the window's threshold is passed. */
  refuse(clientAddress: string, nowMs: number): RefusalVerdict {
    const { refusalsMax, windowMs, clientsMax } = this.#options;
    const key = this.#windows.has(clientAddress) || this.#windows.size < clientsMax ? clientAddress : OTHER_CLIENTS;
    let window = this.#windows.get(key);
    if (window !== undefined && nowMs >= window.startMs + windowMs) {
      if (window.refused > refusalsMax) this.#pending.push(this.#summary(key, window));
      window = undefined;
    }
    if (window === undefined) {
      window = { startMs: nowMs, refused: 0 };
      this.#windows.set(key, window);
    }
    window.refused++;
    if (window.refused <= refusalsMax) return { limited: false };
    return { limited: true, retryAfterSec: Math.max(1, Math.ceil((window.startMs + windowMs - nowMs) / 1000)) };
  }

  /** Summaries of windows replaced in refuse() before takeEnded() saw them. */
  readonly #pending: RefusalSummary[] = [];

  #summary(clientAddress: string, window: ClientWindow): RefusalSummary {
    return { clientAddress, count: window.refused - this.#options.refusalsMax, fromMs: window.startMs, toMs: window.startMs + this.#options.windowMs };
  }

  /**
   * The summaries of every window that has ended by `nowMs` with refusals past the threshold
   * (or of every window, ended or not, with `all`, at shutdown), each returned once; ended
   * windows are forgotten, so the map holds only clients refused within the last window.
   */
  takeEnded(nowMs: number, all = false): RefusalSummary[] {
    const summaries = this.#pending.splice(0);
    for (const [key, window] of this.#windows) {
      if (!all && nowMs < window.startMs + this.#options.windowMs) continue;
      if (window.refused > this.#options.refusalsMax) summaries.push(this.#summary(key, window));
      this.#windows.delete(key);
    }
    return summaries;
  }

  /** Clients with a window open (for tests and the memory bound). */
  get clientCount(): number {
    return this.#windows.size;
  }
}
