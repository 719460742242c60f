// Goal: retention deletes by the wall clock but never ahead of the time the node has counted since its pruner started (monotonic): a wall clock stepped a year forward while the node runs deletes nothing more than before the step, and is reported once per step; a step back is taken as it is; a clock that corrects itself is followed again.
import type { AuditEvent } from '@auditlake/model';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DAY_MS, RetentionClock, RetentionPruner } from '../src/index.js';
import { useTempStores } from './temp-stores.js';

const stores = useTempStores('auditlake-retention-clock-');
const START = Date.UTC(2026, 11, 5);
const YEAR_MS = 365 * DAY_MS;

function ev(eventId: string, timestamp: number): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp };
}

/** A wall clock that can be stepped, beside a monotonic one that only advances. */
function clocks() {
  // Fractional, as performance.now() reads: retention's time must still be whole milliseconds.
  const state = { wall: START, monotonic: 1_000.25 };
  return {
    state,
    now: () => state.wall,
    monotonicNow: () => state.monotonic,
    /** Real time passes: both clocks move (the monotonic one by a fraction more, as two clocks do). */
    pass(ms: number) {
      state.wall += ms;
      state.monotonic += ms + 0.4;
    },
  };
}

describe('RetentionClock', () => {
  it('reads the wall clock until it steps ahead of the steady clock, then the steady clock; a step back is taken as it is', () => {
    const c = clocks();
    const clock = new RetentionClock(c.now, c.monotonicNow);
    c.pass(5_000);
    expect(clock.read()).toEqual({ wallMs: START + 5_000, steadyMs: START + 5_000, nowMs: START + 5_000 });
    c.state.wall += YEAR_MS;
    expect(clock.read()).toEqual({ wallMs: START + 5_000 + YEAR_MS, steadyMs: START + 5_000, nowMs: START + 5_000 });
    c.state.wall -= YEAR_MS + 3_600_000;
    c.pass(1_000);
    expect(clock.read().nowMs).toBe(START + 6_000 - 3_600_000);
  });
});

describe('RetentionPruner on a stepped clock', () => {
  it('deletes nothing more after the wall clock steps a year forward, reports the step once, and follows the clock again once it is corrected', async () => {
    const { store } = await stores.open();
    // Events 40, 20 and 1 day old; retention 30 days.
    await store.append([ev('old', START - 40 * DAY_MS), ev('mid', START - 20 * DAY_MS), ev('new', START - DAY_MS)]);
    const c = clocks();
    const ahead: Array<[number, number]> = [];
    const pruner = new RetentionPruner(store, {
      intervalMs: 60_000,
      batchSize: 10,
      now: c.now,
      monotonicNow: c.monotonicNow,
      policy: (nowMs) => ({ cutoffMs: nowMs - 30 * DAY_MS }),
      onClockAhead: (wallMs, steadyMs) => ahead.push([wallMs, steadyMs]),
    });
    onTestFinished(() => pruner.close());
    const stored = async () => (await store.readBySeq(0, 100)).map((e) => e.eventId);

    expect(await pruner.trigger()).toMatchObject({ deleted: 1 });
    expect(await stored()).toEqual(['mid', 'new']);

    // A year forward: by the wall clock every event is past retention.
    c.state.wall += YEAR_MS;
    expect(await pruner.trigger()).toEqual({ deleted: 0, batches: 0 });
    expect(await pruner.trigger()).toEqual({ deleted: 0, batches: 0 });
    expect(await stored()).toEqual(['mid', 'new']);
    expect(ahead).toEqual([[START + YEAR_MS, START]]);

    // Eleven days of real time later, 'mid' is 31 days old by the steady clock: deleted.
    c.pass(11 * DAY_MS);
    expect(await pruner.trigger()).toMatchObject({ deleted: 1 });
    expect(await stored()).toEqual(['new']);
    expect(ahead).toHaveLength(1);

    // The clock corrected: followed again, and a later step is reported anew.
    c.state.wall -= YEAR_MS;
    expect(await pruner.trigger()).toEqual({ deleted: 0, batches: 0 });
    c.state.wall += 2 * DAY_MS;
    expect(await pruner.trigger()).toEqual({ deleted: 0, batches: 0 });
    expect(await stored()).toEqual(['new']);
    expect(ahead).toEqual([
      [START + YEAR_MS, START],
      [START + 13 * DAY_MS, START + 11 * DAY_MS],
    ]);
  });
});
