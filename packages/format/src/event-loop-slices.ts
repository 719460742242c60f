import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Longest stretch a long decode or encode keeps the event loop before it lets timers and I/O
 * run. A cluster leader renews its 3 s lease on timers of the same loop, and a search's or a
 * rewrite's manifests held it for seconds at 10,000 files (review); 10 ms keeps every stretch
 * at a few tens of ms while a 20,000-entry manifest yields only some dozens of times.
 */
export const EVENT_LOOP_SLICE_MS = 10;

/**
 * Work cut into steps: a generator that yields between steps (each short: an Avro block) and
 * returns the result. {@link runToEnd} runs it at once, {@link runInSlices} a slice at a time.
 */
export type Steps<T> = Generator<void, T, void>;

/** Runs every step now, synchronously. */
export function runToEnd<T>(steps: Steps<T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done === true) return next.value;
  }
}

/**
 * Runs the steps, giving the event loop a turn (setImmediate: after pending I/O and expired
 * timers) whenever `sliceMs` have passed since the last turn.
 */
export async function runInSlices<T>(steps: Steps<T>, sliceMs = EVENT_LOOP_SLICE_MS): Promise<T> {
  let sliceStart = performance.now();
  for (;;) {
    const next = steps.next();
    if (next.done === true) return next.value;
    if (performance.now() - sliceStart >= sliceMs) {
      await nextTurn();
      sliceStart = performance.now();
    }
  }
}

