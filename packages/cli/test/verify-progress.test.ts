// Goal: a long verify says how far it is — records checked, the seq reached of the history's
// end, the rate — a line every few seconds off a terminal, a bar on one; a quick one says nothing
// before its verdict; a read begun again counts from zero and says why.
import { describe, expect, it } from 'vitest';
import { VerifyProgress } from '../src/verify-progress.js';

function output(isTTY: boolean): { text: () => string; write(t: string): void; isTTY: boolean } {
  let text = '';
  return { text: () => text, write: (t: string) => void (text += t), isTTY };
}

/** Folds seqs from..to, the clock moving `msEach` per record. */
function fold(progress: VerifyProgress, from: number, to: number, clock: { now: number }, msEach: number): void {
  for (let seq = from; seq <= to; seq++) {
    clock.now += msEach;
    progress.record(seq);
  }
}

describe('verify progress', () => {
  it('off a terminal: one line per interval, with the share of the history done and the rate', () => {
    const out = output(false);
    const clock = { now: 0 };
    const progress = new VerifyProgress({ out, lineIntervalMs: 5_000, now: () => clock.now });
    progress.expectHead(100_001);
    // 4,096 records in 4.096 s: looked at, but within the interval.
    fold(progress, 1, 4_096, clock, 1);
    expect(out.text()).toBe('');
    fold(progress, 4_097, 20_480, clock, 1);
    expect(out.text().split('\n')).toEqual(['verify: 8% 8,192 records checked, at seq 8,192 of 100,001, 1,000 records/s', 'verify: 16% 16,384 records checked, at seq 16,384 of 100,001, 1,000 records/s', '']);
    progress.finish();
  });

  it('without a known end: no percentage; a restart counts from zero after a note saying why', () => {
    const out = output(false);
    const clock = { now: 0 };
    const progress = new VerifyProgress({ out, lineIntervalMs: 1_000, now: () => clock.now });
    fold(progress, 1, 4_096, clock, 1);
    expect(out.text()).toBe('verify: 4,096 records checked, at seq 4,096, 1,000 records/s\n');
    progress.note('verify: reading the tier again');
    progress.restart();
    fold(progress, 1, 4_096, clock, 0.5);
    expect(out.text().split('\n').slice(1)).toEqual(['verify: reading the tier again', 'verify: 4,096 records checked, at seq 4,096, 2,000 records/s', '']);
  });

  it('on a terminal: a bar redrawn in place and cleared at the end', () => {
    const out = output(true);
    const clock = { now: 0 };
    const progress = new VerifyProgress({ out, now: () => clock.now });
    progress.expectHead(8_193);
    fold(progress, 1, 4_096, clock, 1);
    expect(out.text()).toBe(`\r\x1b[K[${'#'.repeat(15)}${'.'.repeat(15)}]  49% 4,096 records checked, at seq 4,096 of 8,193, 1,000 records/s`);
    progress.finish();
    expect(out.text().endsWith('\r\x1b[K')).toBe(true);
  });

  it('a verify shorter than the interval prints nothing', () => {
    const out = output(false);
    const clock = { now: 0 };
    const progress = new VerifyProgress({ out, now: () => clock.now });
    fold(progress, 1, 50_000, clock, 0.01);
    progress.finish();
    expect(out.text()).toBe('');
  });
});
