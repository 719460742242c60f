import type { Clock, Timer } from '../src/clock.js';

/** A clock that moves only when told to: timers due by then fire in order. */
export class ManualClock implements Clock {
  #nowMs = 0;
  #timers: Array<{ atMs: number; order: number; callback: () => void; cancelled: boolean }> = [];
  #order = 0;

  monotonicMs(): number {
    return this.#nowMs;
  }

  wallMs(): number {
    return 1_700_000_000_000 + this.#nowMs;
  }

  setTimer(callback: () => void, delayMs: number): Timer {
    const timer = { atMs: this.#nowMs + Math.max(0, delayMs), order: this.#order++, callback, cancelled: false };
    this.#timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  advance(ms: number): void {
    const until = this.#nowMs + ms;
    for (;;) {
      const due = this.#timers.filter((t) => !t.cancelled && t.atMs <= until).sort((a, b) => a.atMs - b.atMs || a.order - b.order)[0];
      if (due === undefined) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#nowMs = due.atMs;
      due.callback();
    }
    this.#nowMs = until;
  }
}
