/**
 * Event times of imported records: ISO 8601 / RFC 3339 text (any number of fraction digits,
 * `Z` or a numeric offset), a bare local date-time read in a given time zone, or epoch numbers.
 */

/** The zone a time without an offset is read in: a fixed offset or an IANA zone. */
export type TimeZone = { kind: 'offset'; offsetMs: number; name: string } | { kind: 'iana'; name: string; format: Intl.DateTimeFormat };

export const UTC: TimeZone = { kind: 'offset', offsetMs: 0, name: 'UTC' };

const OFFSET = /^(?:Z|UTC|([+-])(\d{2}):?(\d{2}))$/i;

/**
 * Parses `--time-zone`: `UTC`, `Z`, `+08:00` / `-0530`, or an IANA name such as
 * `Asia/Shanghai` (daylight saving honoured per record). Undefined when it is none of these.
 */
export function parseTimeZone(value: string): TimeZone | undefined {
  const offset = OFFSET.exec(value);
  if (offset) {
    if (offset[1] === undefined) return UTC;
    const hours = Number(offset[2]);
    const minutes = Number(offset[3]);
    if (hours > 23 || minutes > 59) return undefined;
    return { kind: 'offset', offsetMs: (offset[1] === '-' ? -1 : 1) * (hours * 60 + minutes) * 60_000, name: value };
  }
  try {
    const format = new Intl.DateTimeFormat('en-US', {
      timeZone: value,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    return { kind: 'iana', name: value, format };
  } catch {
    return undefined;
  }
}

/**
 * Date.UTC set field by field: Date.UTC reads years 0-99 as 1900-1999 (review: a record dated
 * 0099 was imported as 1999). Fields past their range roll over as Date.UTC's do.
 */
function utcMs(year: number, month0: number, day: number, hour: number, minute: number, second: number, ms: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month0, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime();
}

/** ms to add to a UTC instant to get the wall-clock time in `zone` at that instant. */
function zoneOffsetMs(zone: TimeZone, instantMs: number): number {
  if (zone.kind === 'offset') return zone.offsetMs;
  const parts: Record<string, number> = {};
  for (const part of zone.format.formatToParts(new Date(instantMs))) if (part.type !== 'literal') parts[part.type] = Number(part.value);
  const wall = utcMs(parts['year'] ?? 0, (parts['month'] ?? 1) - 1, parts['day'] ?? 1, parts['hour'] ?? 0, parts['minute'] ?? 0, parts['second'] ?? 0, 0);
  return wall - Math.floor(instantMs / 1000) * 1000;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The instant a wall-clock time in `zone` names. A zone's offset changes at most once within
 * two days, so the offsets in force a day before and a day after are the only ones the time
 * can have; those that give back this wall time fit. Where a daylight-saving change makes it
 * occur twice (clocks set back), the earlier instant is taken, as docs/import.md promises;
 * reading the offset near the time and again at the first guess found the later one in
 * zones east of UTC (Europe/Berlin 02:30 on the last Sunday of October became 01:30Z, not
 * 00:30Z). A time the clocks skipped is read with the offset after the change, as before.
 */
function fromWallClock(wallMs: number, zone: TimeZone): number {
  if (zone.kind === 'offset') return wallMs - zone.offsetMs;
  const before = zoneOffsetMs(zone, wallMs - DAY_MS);
  const after = zoneOffsetMs(zone, wallMs + DAY_MS);
  const fits = [...new Set([before, after])].map((offset) => wallMs - offset).filter((instant) => zoneOffsetMs(zone, instant) === wallMs - instant);
  return fits.length > 0 ? Math.min(...fits) : wallMs - after;
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/**
 * Epoch ms of an ISO 8601 date-time. Fractions beyond ms are cut (Lakekeeper writes µs); a
 * time without offset is read in `zone`. Undefined when the text is not such a time or names
 * no real date (month 13, February 30).
 */
export function parseIsoTime(text: string, zone: TimeZone): number | undefined {
  const m = ISO.exec(text.trim());
  if (!m) return undefined;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const ms = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 60) return undefined;
  const wall = utcMs(year, month - 1, day, hour, minute, Math.min(second, 59), ms);
  // A day past the month's end rolls over (February 30 into March): refuse rather than move the event.
  if (new Date(wall).getUTCDate() !== day) return undefined;
  const offset = m[8];
  if (offset === undefined) return fromWallClock(wall, zone);
  if (offset.toUpperCase() === 'Z') return wall;
  const sign = offset.startsWith('-') ? -1 : 1;
  const digits = offset.slice(1).replace(':', '');
  const offsetMinutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || '0');
  return wall - sign * offsetMinutes * 60_000;
}

/** Below this an epoch number is read as seconds (10^11 s is the year 5138; 10^11 ms is 1973). */
const EPOCH_SECONDS_MAX = 100_000_000_000;

/**
 * Epoch ms of a record's time field: ISO text, or an epoch number (seconds when below 10^11,
 * else ms; digits in a string count as a number). Undefined when it is neither.
 */
export function parseRecordTime(value: unknown, zone: TimeZone): number | undefined {
  if (typeof value === 'number') return epochMs(value);
  if (typeof value !== 'string') return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return epochMs(Number(value));
  return parseIsoTime(value, zone);
}

function epochMs(value: number): number | undefined {
  if (!Number.isFinite(value) || value < 0) return undefined;
  return Math.floor(value < EPOCH_SECONDS_MAX ? value * 1000 : value);
}
