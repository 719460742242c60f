import { parseFailure, type ValueParser } from './config-values.js';

/** Allowed values per field, in order; the seconds field is optional (6 fields). */
const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] },
  { name: 'day-of-week', min: 0, max: 7, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
] as const;
const SECONDS = { name: 'second', min: 0, max: 59 } as const;

type Field = { name: string; min: number; max: number; names?: readonly string[] };

function value(field: Field, text: string): number | undefined {
  if (/^\d+$/.test(text)) {
    const n = Number(text);
    return n >= field.min && n <= field.max ? n : undefined;
  }
  const index = field.names?.indexOf(text.toLowerCase()) ?? -1;
  return index < 0 ? undefined : index + (field.name === 'month' ? 1 : 0);
}

function validItem(field: Field, item: string): boolean {
  const [range = '', step, extra] = item.split('/');
  if (extra !== undefined || (step !== undefined && !/^[1-9]\d*$/.test(step))) return false;
  if (range === '*') return true;
  const [from = '', to, more] = range.split('-');
  if (more !== undefined) return false;
  const low = value(field, from);
  if (low === undefined) return false;
  if (to === undefined) return step === undefined;
  const high = value(field, to);
  return high !== undefined && low <= high;
}

/** The values a valid item stands for. */
function itemValues(field: Field, item: string): number[] {
  const [range = '', step] = item.split('/');
  const [from = '', to] = range.split('-');
  const low = range === '*' ? field.min : (value(field, from) as number);
  const high = range === '*' ? field.max : to === undefined ? low : (value(field, to) as number);
  const values: number[] = [];
  for (let n = low; n <= high; n += step === undefined ? 1 : Number(step)) values.push(n);
  return values;
}

/** The most days each month (1-12) can have (February 29). */
const MAX_DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * An expression none of whose days of month occurs in any of its months (`31 2`, `30 2`,
 * `31 4,6,9,11`) never runs, whatever the weekday field says: it is refused.
 */
function neverRuns(dayField: string, monthField: string): boolean {
  const days = dayField.split(',').flatMap((item) => itemValues(FIELDS[2], item));
  const months = monthField.split(',').flatMap((item) => itemValues(FIELDS[3], item));
  return !months.some((month) => days.some((day) => day <= (MAX_DAYS_IN_MONTH[month - 1] as number)));
}

/** The fields of a well-formed expression, or a failure. */
function cronParts(v: string): string[] {
  const parts = v.trim().split(/\s+/);
  const fields: readonly Field[] = parts.length === 6 ? [SECONDS, ...FIELDS] : FIELDS;
  const ok = (parts.length === 5 || parts.length === 6) && parts.every((part, i) => part.split(',').every((item) => validItem(fields[i] as Field, item)));
  if (!ok) parseFailure('must be a cron expression of 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first');
  return parts;
}

/**
 * A cron expression as the maintenance schedule takes it: 5 fields (minute hour day-of-month
 * month day-of-week) or 6 (seconds first), each `*`, a value, a range `a-b`, a step `*\/n` or
 * `a-b/n`, or a comma list of these; month and weekday names allowed. Refused too: a day of
 * month that never occurs in the months named (`0 0 31 2 *`), which would never run.
 */
export const cronExpression: ValueParser<string> = (v) => {
  const parts = cronParts(v);
  const [day = '', month = ''] = parts.slice(-3, -1);
  if (neverRuns(day, month)) parseFailure(`must be a cron expression whose day of month occurs in its months (day ${day} never occurs in month ${month}, so it would never run)`);
  return parts.join(' ');
};

/**
 * The cron as a stored settings record may hold it: well-formed, though perhaps refused by
 * {@link cronExpression} (a record written by an older version, before it refused days that
 * never occur). It still loads, so the node starts; table maintenance then fails to register
 * it, and says so, until the setting is changed.
 */
export const storedCronExpression: ValueParser<string> = (v) => cronParts(v).join(' ');

/** The days {@link CronSchedule.nextAfterMs} looks ahead: every weekday of February 29 occurs within them. */
const LOOKAHEAD_DAYS = 366 * 100;

/**
 * When a cron expression ({@link cronExpression}'s grammar) fires, in the process's local time.
 * A time matches when every field allows it: day of month and day of week must both match
 * (not either, as in Vixie cron), as node-cron, which scheduled maintenance before, has it.
 */
export class CronSchedule {
  readonly #seconds: readonly number[];
  readonly #minutes: readonly number[];
  readonly #hours: readonly number[];
  readonly #days: ReadonlySet<number>;
  readonly #months: ReadonlySet<number>;
  readonly #weekdays: ReadonlySet<number>;

  private constructor(parts: string[]) {
    const fields: readonly Field[] = parts.length === 6 ? [SECONDS, ...FIELDS] : FIELDS;
    const values = parts.map((part, i) => [...new Set(part.split(',').flatMap((item) => itemValues(fields[i] as Field, item)))].sort((a, b) => a - b));
    const [seconds = [0], minutes = [], hours = [], days = [], months = [], weekdays = []] = parts.length === 6 ? values : [[0], ...values];
    this.#seconds = seconds;
    this.#minutes = minutes;
    this.#hours = hours;
    this.#days = new Set(days);
    this.#months = new Set(months);
    // 7 is Sunday too.
    this.#weekdays = new Set(weekdays.map((day) => day % 7));
  }

  /** The schedule of `expression`; throws an Error naming the problem when cronExpression refuses it. */
  static parse(expression: string): CronSchedule {
    return new CronSchedule(cronExpression(expression).split(' '));
  }

  /**
   * The first time, in whole seconds, strictly after `afterMs` that the schedule matches, or
   * null when none does in the next hundred years. A local time a daylight-saving change skips
   * counts as the time Date gives it (as far past the gap as it named into it), unless a time
   * named after it comes first; of a time a change repeats, the first pass counts.
   */
  nextAfterMs(afterMs: number): number | null {
    const start = new Date(Math.floor(afterMs / 1000) * 1000 + 1000);
    for (let i = 0; i < LOOKAHEAD_DAYS; i++) {
      const day = new Date(start.getFullYear(), start.getMonth(), start.getDate() + i);
      if (!this.#months.has(day.getMonth() + 1) || !this.#days.has(day.getDate()) || !this.#weekdays.has(day.getDay())) continue;
      const at = this.#earliestOn(day, i === 0 ? start : undefined);
      if (at !== undefined) return at;
    }
    return null;
  }

  /**
   * The earliest time the schedule names on `day`, at or after `start` when given. Times are
   * tried in the order they name; one a daylight-saving change skips comes out moved past the
   * gap, possibly after a later one that exists (a 30-minute change: 02:15 becomes 02:45, after
   * 02:40), so the search goes on past it to the first that exists.
   */
  #earliestOn(day: Date, start: Date | undefined): number | undefined {
    const [year, month, date] = [day.getFullYear(), day.getMonth(), day.getDate()];
    // Times of day before the start are skipped without building a Date.
    const [startHour, startMinute, startSecond] = start === undefined ? [-1, -1, -1] : [start.getHours(), start.getMinutes(), start.getSeconds()];
    const startMs = start?.getTime() ?? -Infinity;
    let moved: number | undefined;
    for (const hour of this.#hours) {
      if (hour < startHour) continue;
      for (const minute of this.#minutes) {
        if (hour === startHour && minute < startMinute) continue;
        for (const second of this.#seconds) {
          if (hour === startHour && minute === startMinute && second < startSecond) continue;
          const local = new Date(year, month, date, hour, minute, second);
          const at = local.getTime();
          if (at < startMs) continue;
          const exists = local.getHours() === hour && local.getMinutes() === minute;
          if (exists) return Math.min(at, moved ?? at);
          moved = Math.min(at, moved ?? at);
        }
      }
    }
    return moved;
  }
}
