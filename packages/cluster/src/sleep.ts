import type { Clock } from './clock.js';

/** Resolves after `ms` on `clock`, or at once when `signal` aborts; never rejects. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = clock.setTimer(done, ms);
    function done() {
      timer.cancel();
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
