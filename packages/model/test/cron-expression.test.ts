// Goal: the maintenance cron setting accepts the expressions the scheduler runs and refuses anything else (days of month that never occur too) with a message naming the key; a stored cron that never runs still loads; CronSchedule finds the times node-cron finds.
import cron from 'node-cron';
import { describe, expect, it } from 'vitest';
import { AuditErrorCode, CronSchedule, defaultSettings, mergeSettings, parseSettings, resolveConfig } from '../src/index.js';

const stored = defaultSettings(resolveConfig());

describe('audit.tier.maintenance.cron', () => {
  for (const cron of ['0 * * * *', '*/15 * * * *', '0 3 * * sun', '0 0 1 jan,jul *', '30 2 * * 1-5', '0 */5 * * * *', '5,35 0-23/2 * * *']) {
    it(`accepts ${cron}`, () => {
      expect(mergeSettings(stored, { 'audit.tier.maintenance.cron': cron }).effective.maintenanceCron).toBe(cron);
    });
  }
  for (const cron of ['', 'hourly', '* * * *', '60 * * * *', '0 24 * * *', '0 0 0 * *', '0 0 * 13 *', '0 0 * * 8', '*/0 * * * *', '5-1 * * * *', '1 2 3 4 5 6 7']) {
    it(`refuses ${JSON.stringify(cron)} naming the key`, () => {
      expect(() => mergeSettings(stored, { 'audit.tier.maintenance.cron': cron })).toThrow(
        expect.objectContaining({ code: AuditErrorCode.SETTINGS_INVALID, message: expect.stringMatching(/^audit\.tier\.maintenance\.cron must be a cron expression/) }),
      );
    });
  }
  // These never run (node-cron refuses them too: "31 2 is an impossible day of month").
  for (const cron of ['0 0 31 2 *', '0 0 30 2 *', '0 0 31 4 *', '0 0 31 4,6,9,11 *', '0 0 30-31 feb *', '0 0 0 31 apr *', '0 0 31 2 mon']) {
    it(`refuses ${JSON.stringify(cron)}, a day of month that never occurs, naming the key and the value`, () => {
      expect(() => mergeSettings(stored, { 'audit.tier.maintenance.cron': cron })).toThrow(
        expect.objectContaining({
          code: AuditErrorCode.SETTINGS_INVALID,
          message: expect.stringMatching(new RegExp(`^audit\\.tier\\.maintenance\\.cron must be a cron expression whose day of month occurs in its months .*: ${cron.replace(/\*/g, '\\*')}$`)),
        }),
      );
    });
  }
  for (const cron of ['0 0 29 2 *', '0 0 31 2,3 *', '0 0 30 4 *', '0 0 31 * *', '0 0 1-31 2 *', '0 0 */10 2 *', '0 0 31 jan-apr *']) {
    it(`accepts ${cron}, a day of month that occurs`, () => {
      expect(mergeSettings(stored, { 'audit.tier.maintenance.cron': cron }).effective.maintenanceCron).toBe(cron);
    });
  }
  it('loads a stored cron that never runs (written by an older version), and refuses it only when posted anew', () => {
    const older = { ...stored, 'audit.tier.maintenance.cron': '0 0 31 2 *' };
    expect(parseSettings(older).maintenanceCron).toBe('0 0 31 2 *');
    expect(mergeSettings(older, { 'audit.tier.maintenance.cron': '0 3 * * *' }).effective.maintenanceCron).toBe('0 3 * * *');
    expect(() => resolveConfig(new Map([['auditlake.audit.tier.maintenance.cron', '0 0 31 2 *']]))).toThrow(/auditlake\.audit\.tier\.maintenance\.cron must be a cron expression whose day of month occurs in its months .*: 0 0 31 2 \*$/);
  });
  it('refuses a bad cron in configuration too', () => {
    expect(() => resolveConfig(new Map([['auditlake.audit.tier.maintenance.cron', 'every hour']]))).toThrow(/auditlake\.audit\.tier\.maintenance\.cron must be a cron expression/);
  });
});

describe('CronSchedule', () => {
  // node-cron scheduled maintenance before CronSchedule did: it is the reference the schedule must agree with.
  const expressions = ['0 * * * *', '*/15 * * * *', '0 3 * * sun', '0 0 1 jan,jul *', '30 2 * * 1-5', '0 */5 * * * *', '5,35 0-23/2 * * *', '0 0 29 2 *', '0 0 13 * 5', '0 0 29 2 1', '* * * * * *', '0 0 * * 7', '10-20/3 4 1,15 * *', '59 23 31 * *'];

  /** node-cron's next `count` times after now, with now (the whole second both start from). */
  function reference(expression: string, count: number): { fromMs: number; times: number[] } {
    for (;;) {
      const before = Date.now();
      const task = cron.createTask(expression, () => undefined);
      const times = task.getNextRuns(count).map((date) => date.getTime());
      const after = Date.now();
      void task.destroy();
      // Both read the clock within one second: they start from the same whole second.
      if (Math.floor(before / 1000) === Math.floor(after / 1000)) return { fromMs: before, times };
    }
  }

  for (const expression of expressions) {
    it(`agrees with node-cron on the next times of ${expression}`, () => {
      const { fromMs, times } = reference(expression, 6);
      const schedule = CronSchedule.parse(expression);
      const ours: number[] = [];
      let at = fromMs;
      for (let i = 0; i < times.length; i++) ours.push((at = schedule.nextAfterMs(at) as number));
      expect(ours.map((ms) => new Date(ms).toISOString())).toEqual(times.map((ms) => new Date(ms).toISOString()));
    });
  }

  it('finds the next time strictly after the one given, in whole seconds', () => {
    const schedule = CronSchedule.parse('0 * * * *');
    const hour = new Date(2026, 11, 5, 10).getTime();
    expect(schedule.nextAfterMs(hour - 1)).toBe(hour);
    expect(schedule.nextAfterMs(hour)).toBe(hour + 3_600_000);
    expect(schedule.nextAfterMs(hour + 999)).toBe(hour + 3_600_000);
    expect(CronSchedule.parse('* * * * * *').nextAfterMs(hour + 1)).toBe(hour + 1000);
  });

  /** `run` with the process in time zone `tz` (Node reads TZ afresh when it is set). */
  function inZone<T>(tz: string, run: () => T): T {
    const before = process.env['TZ'];
    process.env['TZ'] = tz;
    try {
      return run();
    } finally {
      if (before === undefined) delete process.env['TZ'];
      else process.env['TZ'] = before;
    }
  }

  /** The next `count` times of `expression` after the local time given, as local ISO-like strings with their offsets. */
  function nextLocal(expression: string, from: [number, number, number, number, number], count: number): string[] {
    const schedule = CronSchedule.parse(expression);
    let at = new Date(...from).getTime();
    const times: string[] = [];
    for (let i = 0; i < count; i++) {
      at = schedule.nextAfterMs(at) as number;
      const local = new Date(at);
      const pad = (n: number) => String(n).padStart(2, '0');
      times.push(`${local.getFullYear()}-${pad(local.getMonth() + 1)}-${pad(local.getDate())} ${pad(local.getHours())}:${pad(local.getMinutes())} ${-local.getTimezoneOffset() / 60}`);
    }
    return times;
  }

  it('across a daylight-saving change forward: a skipped time runs once past the gap, unless a time after it that exists comes first', () => {
    // New York, 8 March 2026: 02:00 becomes 03:00; 02:30 runs at 03:30 that day.
    expect(inZone('America/New_York', () => nextLocal('30 2 * * *', [2026, 2, 7, 12, 0], 3))).toEqual(['2026-03-08 03:30 -4', '2026-03-09 02:30 -4', '2026-03-10 02:30 -4']);
    // Lord Howe, 4 October 2026: 02:00 becomes 02:30; 02:15 would come out at 02:45, after 02:40, which exists and runs first.
    expect(inZone('Australia/Lord_Howe', () => nextLocal('15,40 2 * * *', [2026, 9, 4, 1, 0], 3))).toEqual(['2026-10-04 02:40 11', '2026-10-05 02:15 11', '2026-10-05 02:40 11']);
  });

  it('across a daylight-saving change back: the repeated hour runs on its first pass only', () => {
    // London, 25 October 2026: 02:00 BST becomes 01:00 GMT.
    expect(inZone('Europe/London', () => nextLocal('0,30 1 * * *', [2026, 9, 25, 0, 45], 3))).toEqual(['2026-10-25 01:00 1', '2026-10-25 01:30 1', '2026-10-26 01:00 0']);
  });

  it('refuses what the setting refuses, naming the problem', () => {
    expect(() => CronSchedule.parse('0 0 31 2 *')).toThrow('must be a cron expression whose day of month occurs in its months (day 31 never occurs in month 2, so it would never run)');
    expect(() => CronSchedule.parse('hourly')).toThrow(/must be a cron expression of 5 fields/);
  });
});
