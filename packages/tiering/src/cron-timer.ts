import type { CronSchedule } from '@auditlake/model';

/** A pending callback from CronClock.setTimer; cancel() is idempotent. */
export interface CronClockTimer {
  cancel(): void;
}

/** The wall clock a cron reads and the timers it waits with; injected so a test can step the clock. */
export interface CronClock {
  wallMs(): number;
  setTimer(callback: () => void, delayMs: number): CronClockTimer;
}

/** The process's clock and timers. */
export const systemCronClock: CronClock = {
  wallMs: () => Date.now(),
  setTimer(callback, delayMs) {
    const handle = setTimeout(callback, Math.max(0, delayMs));
    return { cancel: () => clearTimeout(handle) };
  },
};

/**
 * The longest a cron timer sleeps before it reads the wall clock again. A step of the clock is
 * noticed within it: after a step back the next time is found from the new clock (a timer set
 * for the old next time would idle for as long as the step), after a step forward the cron
 * fires once. It also keeps every timer far below setTimeout's 24.8-day limit.
 */
export const CRON_RECHECK_MS = 60_000;

/**
 * Calls `tick` at each time a CronSchedule matches on the wall clock. Every wake finds the next
 * time from the clock as it reads then, so a clock stepped a year forward fires once and goes
 * on from the new time, instead of walking each slot in between (node-cron's runner, which
 * this replaces, held the event loop ~39 s and logged 525,600 warnings for a per-minute cron
 * after a one-year step, and idled for as long as a step back). After a step back of more than
 * CRON_RECHECK_MS, a time it already fired at may come again and fire again (maintenance runs
 * are idempotent; waiting for the clock to pass the last time fired would be the stall again).
 * A tick still running when the next time comes is not called again (ticks never overlap);
 * that time is skipped, and a tick that never settles stops the cron.
 */
export class CronTimer {
  readonly #schedule: CronSchedule;
  readonly #tick: () => Promise<void>;
  readonly #clock: CronClock;
  #timer: CronClockTimer | undefined;
  #nextMs: number | null = null;
  #busy = false;
  #stopped = false;

  constructor(schedule: CronSchedule, tick: () => Promise<void>, clock: CronClock = systemCronClock) {
    this.#schedule = schedule;
    this.#tick = tick;
    this.#clock = clock;
    this.#arm();
  }

  /** The next time it fires (wall-clock ms), or null when the schedule never matches again. */
  nextRunMs(): number | null {
    return this.#nextMs;
  }

  /** Stops it for good; a tick under way finishes. */
  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  #arm(): void {
    if (this.#stopped) return;
    const nowMs = this.#clock.wallMs();
    this.#nextMs = this.#schedule.nextAfterMs(nowMs);
    const delayMs = this.#nextMs === null ? CRON_RECHECK_MS : Math.min(Math.max(0, this.#nextMs - nowMs), CRON_RECHECK_MS);
    this.#timer = this.#clock.setTimer(() => this.#wake(), delayMs);
  }

  #wake(): void {
    if (this.#stopped) return;
    const due = this.#nextMs !== null && this.#clock.wallMs() >= this.#nextMs;
    if (due && !this.#busy) {
      this.#busy = true;
      // Called inside a promise: a tick that throws at once, or returns no promise, neither
      // escapes into the timer (an uncaught exception) nor leaves the timer busy for good.
      Promise.resolve()
        .then(() => this.#tick())
        .catch(() => undefined)
        .finally(() => {
          this.#busy = false;
        });
    }
    // The next time from the clock as it reads now: never a walk over the times a step skipped.
    this.#arm();
  }
}
