// Goal: tierStatus's deferred figure never makes a read wait for a scan (only the first read counts), is recounted in the background once the bounded staleness is reached, and then answers the new count, counting from a cutoff never before the epoch — with the clock and the count injected.
import { describe, expect, it } from 'vitest';
import { DEFERRED_COUNT_MAX, DEFERRED_RECOUNT_CHANGED_MS, DEFERRED_RECOUNT_MS, DeferredCount } from '../src/deferred-count.js';

/** A count the test answers by hand: each call waits until the test resolves it. */
function manualCount() {
  const calls: Array<{ cutoffMs: number; afterSeq: number; max: number; answer: (n: number) => void }> = [];
  const count = (cutoffMs: number, afterSeq: number, max: number) => new Promise<number>((answer) => calls.push({ cutoffMs, afterSeq, max, answer }));
  return { calls, count };
}

const DAY_MS = 86_400_000;
/** A clock reading of these days (cutoffs a few days back stay after the epoch). */
const NOW = Date.UTC(2026, 0, 1);

describe('DeferredCount', () => {
  it('the first read waits for a count; later reads answer the last count and recount in the background once stale', async () => {
    const { calls, count } = manualCount();
    const deferred = new DeferredCount(count);
    const inputs = { nowMs: NOW, retentionMs: DAY_MS, watermarkSeq: 10 };

    const first = deferred.read(inputs);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ cutoffMs: NOW - DAY_MS, afterSeq: 10, max: DEFERRED_COUNT_MAX });
    calls[0]!.answer(12);
    expect(await first).toBe(12);

    // Fresh: answered from memory, nothing counted.
    expect(await deferred.read({ ...inputs, nowMs: inputs.nowMs + DEFERRED_RECOUNT_MS - 1 })).toBe(12);
    expect(calls).toHaveLength(1);

    // Stale by age: the last count at once, one recount started (a second read shares it).
    expect(await deferred.read({ ...inputs, nowMs: inputs.nowMs + DEFERRED_RECOUNT_MS })).toBe(12);
    expect(await deferred.read({ ...inputs, nowMs: inputs.nowMs + DEFERRED_RECOUNT_MS + 5 })).toBe(12);
    expect(calls).toHaveLength(2);
    calls[1]!.answer(3);
    await expect.poll(() => deferred.read({ ...inputs, nowMs: inputs.nowMs + DEFERRED_RECOUNT_MS + 10 })).toBe(3);
    expect(calls).toHaveLength(2);
  });

  it('a moved watermark or a new retention is counted again after the shorter bound', async () => {
    const { calls, count } = manualCount();
    const deferred = new DeferredCount(count);
    const inputs = { nowMs: NOW, retentionMs: DAY_MS, watermarkSeq: 10 };
    const first = deferred.read(inputs);
    calls[0]!.answer(7);
    await first;

    // The watermark moved, but the count is younger than the shorter bound: no recount yet.
    expect(await deferred.read({ ...inputs, watermarkSeq: 20, nowMs: inputs.nowMs + DEFERRED_RECOUNT_CHANGED_MS - 1 })).toBe(7);
    expect(calls).toHaveLength(1);
    expect(await deferred.read({ ...inputs, watermarkSeq: 20, nowMs: inputs.nowMs + DEFERRED_RECOUNT_CHANGED_MS })).toBe(7);
    expect(calls).toHaveLength(2);
    expect(calls[1]).toMatchObject({ afterSeq: 20 });
    calls[1]!.answer(0);
    await expect.poll(() => deferred.read({ ...inputs, watermarkSeq: 20, nowMs: inputs.nowMs + DEFERRED_RECOUNT_CHANGED_MS })).toBe(0);

    // A new retention: counted with the new cutoff.
    const later = inputs.nowMs + 2 * DEFERRED_RECOUNT_CHANGED_MS;
    expect(await deferred.read({ nowMs: later, retentionMs: 2 * DAY_MS, watermarkSeq: 20 })).toBe(0);
    expect(calls[2]).toMatchObject({ cutoffMs: later - 2 * DAY_MS, afterSeq: 20 });
  });

  it('counts from the epoch when the retention reaches further back (36500 days, "keep 100 years")', async () => {
    const { calls, count } = manualCount();
    const deferred = new DeferredCount(count);
    const first = deferred.read({ nowMs: NOW, retentionMs: 36_500 * DAY_MS, watermarkSeq: 3 });
    expect(calls[0]).toMatchObject({ cutoffMs: 0, afterSeq: 3 });
    calls[0]!.answer(0);
    expect(await first).toBe(0);
  });

  it('a failed recount keeps the last count and is tried again by the next stale read', async () => {
    let fail = false;
    let calls = 0;
    const deferred = new DeferredCount(async () => {
      calls++;
      if (fail) throw new Error('store closing');
      return 4;
    });
    const inputs = { nowMs: 0, retentionMs: DAY_MS, watermarkSeq: 0 };
    expect(await deferred.read(inputs)).toBe(4);
    fail = true;
    expect(await deferred.read({ ...inputs, nowMs: DEFERRED_RECOUNT_MS })).toBe(4);
    await expect.poll(() => calls).toBe(2);
    fail = false;
    await expect.poll(() => deferred.read({ ...inputs, nowMs: DEFERRED_RECOUNT_MS + 1 })).toBe(4);
    expect(calls).toBe(3);
  });
});
