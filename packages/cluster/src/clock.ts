import { performance } from 'node:perf_hooks';

/** A pending callback from Clock.setTimer; cancel() is idempotent. */
export interface Timer {
  cancel(): void;
}

/**
 * Where cluster code gets time from. Injected so a simulation can run whole clusters in
 * virtual time: nothing in this package reads the system clock or starts a timer directly.
 */
export interface Clock {
  /** Milliseconds on a clock that never goes back (lease timing, deadlines). */
  monotonicMs(): number;
  /** Milliseconds since the epoch (times shown to operators and published to peers). */
  wallMs(): number;
  /** Calls `callback` once, `delayMs` from now, unless cancelled first. */
  setTimer(callback: () => void, delayMs: number): Timer;
}

/** The process's own clocks and timers. */
export const systemClock: Clock = {
  monotonicMs: () => performance.now(),
  wallMs: () => Date.now(),
  setTimer(callback, delayMs) {
    const handle = setTimeout(callback, Math.max(0, delayMs));
    return { cancel: () => clearTimeout(handle) };
  },
};
