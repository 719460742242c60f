/** The toolbar's time ranges, exactly these, in this order. */
export const TIME_RANGES = [
  { value: 'any', label: 'Any time', spanMs: undefined },
  { value: '1h', label: 'Last hour', spanMs: 3_600_000 },
  { value: '24h', label: 'Last 24h', spanMs: 86_400_000 },
  { value: '7d', label: 'Last 7 days', spanMs: 7 * 86_400_000 },
  { value: '30d', label: 'Last 30 days', spanMs: 30 * 86_400_000 },
  { value: 'custom', label: 'Custom range…', spanMs: undefined },
] as const;

export type TimeRangeValue = (typeof TIME_RANGES)[number]['value'];

/** Max events offered; the default is 400. */
export const MAX_EVENTS = [100, 400, 1000, 5000] as const;
export const DEFAULT_MAX_EVENTS = 400;

/** The toolbar's window: a range, and for a custom one the pickers' values (browser local time, minute precision). */
export interface TimeWindow {
  range: TimeRangeValue;
  /** `YYYY-MM-DDTHH:MM` as a datetime-local input holds it; '' when not set. */
  from: string;
  to: string;
}

export function isTimeRange(value: string): value is TimeRangeValue {
  return TIME_RANGES.some((r) => r.value === value);
}

const LOCAL_MINUTE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/;
const MINUTE_MS = 60_000;

/** Epoch ms of a datetime-local value, read in the browser's time zone; undefined when empty or malformed. */
export function localMinuteMs(value: string): number | undefined {
  if (!LOCAL_MINUTE.test(value)) return undefined;
  // A date-time without an offset is local time (ECMAScript Date.parse).
  const ms = new Date(value).getTime();
  return Number.isFinite(ms) ? ms : undefined;
}

/** The datetime-local value (browser local time, minute precision) of an epoch ms. */
export function toLocalMinute(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export type WindowBounds = { fromMs?: number; toMs?: number } | { error: string };

/**
 * The `from`/`to` epoch-ms bounds a window asks the API for. A relative range ends now, and says
 * so: asked without `to`, "Last hour" also took events dated up to a day ahead (what ingest
 * accepts), newest first, and 400 such events from one ingest token filled the Overview's
 * window, its denials gone (security review). A custom one covers its To minute whole (to
 * :59.999), so "to 10:30" includes 10:30:45.
 */
export function windowBounds(window: TimeWindow, nowMs: number): WindowBounds {
  const range = TIME_RANGES.find((r) => r.value === window.range);
  if (range?.spanMs !== undefined) return { fromMs: nowMs - range.spanMs, toMs: nowMs };
  if (window.range !== 'custom') return {};
  const bounds: { fromMs?: number; toMs?: number } = {};
  if (window.from !== '') {
    const fromMs = localMinuteMs(window.from);
    if (fromMs === undefined) return { error: `From is not a date and time: ${window.from}` };
    bounds.fromMs = fromMs;
  }
  if (window.to !== '') {
    const toMs = localMinuteMs(window.to);
    if (toMs === undefined) return { error: `To is not a date and time: ${window.to}` };
    bounds.toMs = toMs + MINUTE_MS - 1;
  }
  if (bounds.fromMs !== undefined && bounds.toMs !== undefined && bounds.fromMs > bounds.toMs) return { error: 'From must not be after To' };
  return bounds;
}
