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

/**
 * A cron expression as the maintenance schedule takes it: 5 fields (minute hour day-of-month
 * month day-of-week) or 6 (seconds first), each `*`, a value, a range `a-b`, a step `*\/n` or
 * `a-b/n`, or a comma list of these; month and weekday names allowed.
 */
export const cronExpression: ValueParser<string> = (v) => {
  const parts = v.trim().split(/\s+/);
  const fields: readonly Field[] = parts.length === 6 ? [SECONDS, ...FIELDS] : FIELDS;
  const ok = (parts.length === 5 || parts.length === 6) && parts.every((part, i) => part.split(',').every((item) => validItem(fields[i] as Field, item)));
  if (!ok) parseFailure('must be a cron expression of 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first');
  return parts.join(' ');
};
