// Goal: the cron timer fires at each time its schedule matches on the wall clock, and a step of that clock neither stalls it (a step back: it fires at the next matching time of the new clock, within a minute of real time) nor makes it walk the skipped times (a step of a year forward: one tick, then on from the new time); ticks never overlap; stop() leaves no timer.
import { CronSchedule } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { CRON_RECHECK_MS, CronTimer } from '../src/index.js';
import { SteppedClock } from './stepped-cron-clock.js';

const YEAR_MS = 365 * 86_400_000;

function timerOn(expression: string, clock: SteppedClock, tick?: () => Promise<void>): { timer: CronTimer; ticks: number[] } {
  const ticks: number[] = [];
  const timer = new CronTimer(
    CronSchedule.parse(expression),
    async () => {
      ticks.push(clock.wallMs());
      await tick?.();
    },
    clock,
  );
  return { timer, ticks };
}

describe('CronTimer', () => {
  it('fires at each matching time of the wall clock', async () => {
    const start = new Date(2026, 11, 5, 10, 0, 0, 250).getTime();
    const clock = new SteppedClock(start);
    const { timer, ticks } = timerOn('*/20 * * * * *', clock);
    expect(timer.nextRunMs()).toBe(start - 250 + 20_000);
    await clock.advance(61_000);
    expect(ticks).toEqual([20_000, 40_000, 60_000].map((s) => start - 250 + s));
    expect(timer.nextRunMs()).toBe(start - 250 + 80_000);
    timer.stop();
    expect(clock.pending.size).toBe(0);
  });

  it('after the wall clock steps back an hour, fires at the next matching time of the new clock, not an hour later', async () => {
    const start = new Date(2026, 11, 5, 10, 0, 30).getTime();
    const clock = new SteppedClock(start);
    const { timer, ticks } = timerOn('*/5 * * * *', clock);
    await clock.advance(5 * 60_000);
    expect(ticks).toEqual([new Date(2026, 11, 5, 10, 5).getTime()]);
    // 10:05:30 becomes 09:05:30: the next time is 09:10 (4.5 minutes of real time), not 10:10 (an hour and 4.5 minutes).
    clock.wall -= 3_600_000;
    await clock.advance(4.5 * 60_000 + CRON_RECHECK_MS);
    expect(ticks).toEqual([new Date(2026, 11, 5, 10, 5).getTime(), new Date(2026, 11, 5, 9, 10).getTime()]);
    expect(timer.nextRunMs()).toBe(new Date(2026, 11, 5, 9, 15).getTime());
    timer.stop();
  });

  it('after the wall clock steps a year forward, a per-second cron fires once and goes on from the new time, walking none of the skipped times', async () => {
    const start = new Date(2026, 11, 5, 10, 0, 0).getTime();
    const clock = new SteppedClock(start);
    const { timer, ticks } = timerOn('* * * * * *', clock);
    await clock.advance(2_000);
    expect(ticks).toEqual([start + 1000, start + 2000]);
    clock.wall += YEAR_MS;
    await clock.advance(1_000);
    expect(ticks).toEqual([start + 1000, start + 2000, start + YEAR_MS + 3000]);
    expect(timer.nextRunMs()).toBe(start + YEAR_MS + 4000);
    // Every timer it set waited at most a second: none was armed for a skipped time.
    expect(Math.max(...clock.delays)).toBeLessThanOrEqual(1_000);
    timer.stop();
  });

  it('a tick still running when the next time comes is not called again; that time is skipped', async () => {
    const start = new Date(2026, 11, 5, 10, 0, 0).getTime();
    const clock = new SteppedClock(start);
    let release: () => void = () => undefined;
    let running = 0;
    let overlapped = false;
    const { timer, ticks } = timerOn('* * * * * *', clock, async () => {
      running++;
      overlapped ||= running > 1;
      await new Promise<void>((resolve) => (release = resolve));
      running--;
    });
    await clock.advance(3_000);
    expect(ticks).toEqual([start + 1000]);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    await clock.advance(1_000);
    expect(ticks).toEqual([start + 1000, start + 4000]);
    expect(overlapped).toBe(false);
    timer.stop();
    release();
  });

  it('a tick that throws at once neither escapes the timer nor stops the cron', async () => {
    const start = new Date(2026, 11, 5, 10, 0, 0).getTime();
    const clock = new SteppedClock(start);
    const ticks: number[] = [];
    const timer = new CronTimer(
      CronSchedule.parse('* * * * * *'),
      // Not async: it throws as it is called.
      () => {
        ticks.push(clock.wallMs());
        throw new Error('tick failed at once');
      },
      clock,
    );
    await clock.advance(3_000);
    expect(ticks).toEqual([start + 1000, start + 2000, start + 3000]);
    timer.stop();
  });

  it('waits for a time years ahead in timers of at most a minute (setTimeout cannot wait past 24.8 days), and stop() cancels its timer', async () => {
    // 29 February on a Monday: next in 2044.
    const clock = new SteppedClock(new Date(2026, 11, 5).getTime());
    const { timer, ticks } = timerOn('0 0 29 2 1', clock);
    expect(timer.nextRunMs()).toBe(new Date(2044, 1, 29).getTime());
    await clock.advance(10 * CRON_RECHECK_MS);
    expect(ticks).toEqual([]);
    expect(Math.max(...clock.delays)).toBe(CRON_RECHECK_MS);
    expect(clock.pending.size).toBe(1);
    timer.stop();
    expect(clock.pending.size).toBe(0);
    await clock.advance(10 * CRON_RECHECK_MS);
    expect(clock.delays.length).toBe(11);
  });
});
