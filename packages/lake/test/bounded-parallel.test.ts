// Goal: mapBounded keeps at most `limit` calls in flight, answers in the order of its items, and
// on a failure hands out no more items and rejects only once the calls already started have
// settled — so a caller bounded by its turns (the re-send lookup gate) never has this map's calls
// still running after it heard of the failure.
import { describe, expect, it } from 'vitest';
import { mapBounded } from '../src/bounded-parallel.js';

/** Calls the test ends by hand, with how many run at once. */
function manualCalls() {
  const pending: Array<{ item: number; resolve: (v: string) => void; reject: (e: Error) => void }> = [];
  let running = 0;
  let runningMax = 0;
  const fn = (item: number) =>
    new Promise<string>((resolve, reject) => {
      running++;
      runningMax = Math.max(runningMax, running);
      const done = () => running--;
      pending.push({ item, resolve: (v) => (done(), resolve(v)), reject: (e) => (done(), reject(e)) });
    });
  return { pending, fn, running: () => running, runningMax: () => runningMax };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('mapBounded', () => {
  it('keeps at most `limit` calls in flight and answers in the order of the items', async () => {
    const calls = manualCalls();
    const all = mapBounded([0, 1, 2, 3, 4], 2, calls.fn);
    await settle();
    expect(calls.pending.map((p) => p.item)).toEqual([0, 1]);
    calls.pending[1]!.resolve('b');
    await settle();
    calls.pending[0]!.resolve('a');
    await settle();
    for (const p of calls.pending.slice(2)) p.resolve(String.fromCharCode(97 + p.item));
    await settle();
    for (const p of calls.pending.slice(4)) p.resolve(String.fromCharCode(97 + p.item));
    expect(await all).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(calls.runningMax()).toBe(2);
  });

  it('after a failure starts no more calls, and rejects only once the calls in flight have settled', async () => {
    const calls = manualCalls();
    let rejected: unknown;
    const all = mapBounded([0, 1, 2, 3, 4, 5], 3, calls.fn).catch((err: unknown) => (rejected = err));
    await settle();
    expect(calls.pending.map((p) => p.item)).toEqual([0, 1, 2]);
    calls.pending[0]!.reject(new Error('503 SlowDown'));
    await settle();
    // Nothing new handed out; the map has not answered while two calls still run.
    expect(calls.pending.map((p) => p.item)).toEqual([0, 1, 2]);
    expect(rejected).toBeUndefined();
    calls.pending[1]!.resolve('b');
    await settle();
    expect(rejected).toBeUndefined();
    calls.pending[2]!.reject(new Error('later failure'));
    await all;
    expect((rejected as Error).message).toBe('503 SlowDown');
    expect(calls.running()).toBe(0);
    expect(calls.pending).toHaveLength(3);
  });

  it('refuses a limit that would run nothing', async () => {
    await expect(mapBounded([1], 0, async () => 1)).rejects.toThrow('limit must be a positive integer, got 0');
  });
});
