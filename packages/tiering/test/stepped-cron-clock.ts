import type { CronClock } from '../src/index.js';

/** A wall clock that can be stepped, and timers that run on real (monotonic) time, advanced by hand. */
export class SteppedClock implements CronClock {
  wall: number;
  /** Real time since the start: timers are due by it, whatever the wall clock does. */
  elapsed = 0;
  /** Timers set and neither fired nor cancelled. */
  readonly pending = new Set<{ dueAt: number; callback: () => void }>();
  /** Every delay a timer was set with. */
  readonly delays: number[] = [];

  constructor(wallMs: number) {
    this.wall = wallMs;
  }

  wallMs(): number {
    return this.wall;
  }

  setTimer(callback: () => void, delayMs: number) {
    const timer = { dueAt: this.elapsed + delayMs, callback };
    this.delays.push(delayMs);
    this.pending.add(timer);
    return { cancel: () => void this.pending.delete(timer) };
  }

  /** Lets `ms` of real time pass, the wall clock with it, firing timers as they fall due. */
  async advance(ms: number): Promise<void> {
    const end = this.elapsed + ms;
    for (;;) {
      const due = [...this.pending].filter((timer) => timer.dueAt <= end).sort((a, b) => a.dueAt - b.dueAt)[0];
      if (due === undefined) break;
      this.wall += due.dueAt - this.elapsed;
      this.elapsed = due.dueAt;
      this.pending.delete(due);
      due.callback();
      // A tick's promise chain settles before the next timer.
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.wall += end - this.elapsed;
    this.elapsed = end;
  }

  /** Sets the wall clock to `wallMs` and fires every pending timer at once: what a cron's wake does when its time comes. */
  fireAt(wallMs: number): void {
    this.wall = wallMs;
    const due = [...this.pending];
    this.pending.clear();
    for (const timer of due) timer.callback();
  }
}
