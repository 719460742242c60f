import { AuditError, AuditErrorCode } from './audit-error.js';
import { READ_ACTION, type AuditEvent, type Decision } from './event.js';
import { decodeCursor, isAfterCursor, type EventPosition, type SearchCursor } from './search-cursor.js';

export type ActionKind = 'read' | 'write' | 'all';

/** A parsed `GET /admin/audit` query (reference "Search and Filters"). */
export interface SearchFilter {
  /** Exact user id. */
  user?: string;
  /** Engine, compared case-insensitively (stored lower-cased here). */
  engine?: string;
  /** Substring of any touched table. */
  table?: string;
  action: ActionKind;
  /** Free-text substring, lower-cased, over query, details, resource, user, action and tables. */
  q?: string;
  /** The authorization outcome; '' selects events without one (`decision=none`). */
  decision?: Decision | '';
  /** Inclusive bounds on event time, epoch ms; a bare-date `to` is the end of that UTC day. */
  fromMs?: number;
  toMs?: number;
  /** Only events strictly after this position in the newest-first order (the next page). */
  cursor?: SearchCursor;
  limit: number;
}

export const SEARCH_PARAMS = ['user', 'engine', 'table', 'action', 'decision', 'q', 'from', 'to', 'cursor', 'limit'] as const;
export const DEFAULT_SEARCH_LIMIT = 200;

function bad(message: string): never {
  throw new AuditError(AuditErrorCode.BAD_REQUEST, message);
}

function single(params: Record<string, unknown>, name: string): string | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') bad(`parameter ${name} must be given once`);
  return value;
}

/** `2026-11-01`, or a date-time with seconds optional and a zone (`Z` or `±hh:mm`) required. */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/;

const BARE_DATE = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

/**
 * A time bound: epoch millis, or an ISO-8601 date or date-time. A date-time must name its zone:
 * a server guessing the caller's local time would shift the window by hours. A bare date
 * (`2026-11-30`, a UTC day) is that day's first millisecond, or with `end` (an inclusive upper
 * bound, `to`) its last: `to=2026-11-30` takes in the whole 30th, as the completeness ledger's
 * `to` does. AUDIT_BAD_REQUEST naming the parameter otherwise.
 */
export function timeBound(name: string, value: string, end = false): number {
  if (/^\d+$/.test(value)) {
    const n = Number(value);
    if (Number.isSafeInteger(n)) return n;
  } else if (ISO_8601.test(value)) {
    const n = Date.parse(value);
    // Said as what it is: the time is well formed, and no event time is that early (review).
    if (Number.isSafeInteger(n) && n < 0) bad(`parameter ${name} is before 1970-01-01T00:00:00Z, where event times start: ${value}`);
    if (Number.isSafeInteger(n)) {
      // Date.parse rolls a day that does not exist over (2026-02-30 is 2026-03-02, T24:00 the
      // next day): a window asked for that way would silently be another one.
      if (!isCalendarDate(value)) bad(`parameter ${name} names a day that does not exist: ${value}`);
      if (value.slice(11, 13) === '24') bad(`parameter ${name} has hour 24 (use 00 of the next day): ${value}`);
      return end && BARE_DATE.test(value) ? n + DAY_MS - 1 : n;
    }
  }
  return bad(`parameter ${name} must be epoch millis or an ISO-8601 time with a zone (e.g. 2026-11-01T09:30:00Z): ${value}`);
}

/** Whether the `YYYY-MM-DD` a time starts with is a day of the calendar (no 02-30, no 04-31). */
function isCalendarDate(value: string): boolean {
  const year = Number(value.slice(0, 4));
  const month = Number(value.slice(5, 7));
  const day = Number(value.slice(8, 10));
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

function decision(value: string): Decision | '' {
  const upper = value.toUpperCase();
  if (upper === 'ALLOW' || upper === 'DENY') return upper;
  if (upper === 'NONE') return '';
  return bad(`parameter decision must be ALLOW, DENY or none: ${value}`);
}

/**
 * Parses search parameters. Unknown parameters are refused: a misspelt filter (`usr=alice`)
 * silently returning everything is the worst answer an audit viewer can give. So is a `limit`
 * above `maxPage` (auditlake.audit.viewer.max.page): cut silently, it would read as "that is
 * everything"; refused, the caller learns to page with the cursor or narrow the filters.
 */
export function parseSearchParams(params: Record<string, unknown>, maxPage: number): SearchFilter {
  for (const name of Object.keys(params)) {
    if (!(SEARCH_PARAMS as readonly string[]).includes(name)) bad(`unknown parameter: ${name} (known: ${SEARCH_PARAMS.join(', ')})`);
  }
  const filter: SearchFilter = { action: 'all', limit: Math.min(DEFAULT_SEARCH_LIMIT, maxPage) };
  const user = single(params, 'user');
  if (user) filter.user = user;
  const engine = single(params, 'engine');
  if (engine) filter.engine = engine.toLowerCase();
  const table = single(params, 'table');
  if (table) filter.table = table;
  const q = single(params, 'q');
  if (q) filter.q = q.toLowerCase();
  const action = single(params, 'action');
  if (action !== undefined && action !== '') {
    if (action !== 'read' && action !== 'write' && action !== 'all') bad(`parameter action must be read, write or all: ${action}`);
    filter.action = action;
  }
  const decisionParam = single(params, 'decision');
  if (decisionParam !== undefined && decisionParam !== '') filter.decision = decision(decisionParam);
  const from = single(params, 'from');
  if (from !== undefined && from !== '') filter.fromMs = timeBound('from', from);
  const to = single(params, 'to');
  if (to !== undefined && to !== '') filter.toMs = timeBound('to', to, true);
  if (filter.fromMs !== undefined && filter.toMs !== undefined && filter.fromMs > filter.toMs) {
    bad(`parameter from must not be after to: ${filter.fromMs} > ${filter.toMs}`);
  }
  const limit = single(params, 'limit');
  if (limit !== undefined && limit !== '') {
    const n = Number(limit);
    if (!/^\d+$/.test(limit) || !Number.isSafeInteger(n) || n < 1) bad(`parameter limit must be a positive integer: ${limit}`);
    if (n > maxPage) bad(`parameter limit must be at most ${maxPage} (auditlake.audit.viewer.max.page): ${limit}; page with nextCursor or narrow the filters`);
    filter.limit = n;
  }
  const cursor = single(params, 'cursor');
  if (cursor !== undefined && cursor !== '') filter.cursor = decodeCursor(cursor);
  return filter;
}

/**
 * The latest event time the filter can match: `to`, lowered to the cursor's time on a later
 * page (everything after the cursor is at or before it). Stores and tiers range-scan to here.
 */
export function upperTimeMs(filter: Pick<SearchFilter, 'toMs' | 'cursor'>): number | undefined {
  if (filter.cursor === undefined) return filter.toMs;
  return filter.toMs === undefined ? filter.cursor.timestamp : Math.min(filter.toMs, filter.cursor.timestamp);
}

/**
 * Builds the predicate for everything but the time range, which the store applies as a key
 * range. With a cursor, an event must also come strictly after it: pass events with their
 * `ingestTs` (stored or tiered ones) then.
 */
export function compileFilter(filter: SearchFilter): (event: AuditEvent & Partial<EventPosition>) => boolean {
  const { user, engine, table, q, action, cursor } = filter;
  const decisionWanted = filter.decision;
  return (event) => {
    if (user !== undefined && event.userId !== user) return false;
    if (engine !== undefined && event.source.toLowerCase() !== engine) return false;
    if (decisionWanted !== undefined && event.decision !== decisionWanted) return false;
    if (action === 'read' && event.action !== READ_ACTION) return false;
    if (action === 'write' && event.action === READ_ACTION) return false;
    if (table !== undefined && !event.tables.some((t) => t.includes(table))) return false;
    if (q !== undefined && !matchesText(event, q)) return false;
    if (cursor !== undefined && !isAfterCursor(cursor, { timestamp: event.timestamp, ingestTs: event.ingestTs ?? 0, eventId: event.eventId })) return false;
    return true;
  };
}

function matchesText(event: AuditEvent, qLower: string): boolean {
  return (
    event.query.toLowerCase().includes(qLower) ||
    event.details.toLowerCase().includes(qLower) ||
    event.resource.toLowerCase().includes(qLower) ||
    event.userId.toLowerCase().includes(qLower) ||
    event.action.toLowerCase().includes(qLower) ||
    event.tables.some((t) => t.toLowerCase().includes(qLower))
  );
}

/** True when `event` falls inside the filter's inclusive time range. */
export function inTimeRange(filter: SearchFilter, timestampMs: number): boolean {
  return (filter.fromMs === undefined || timestampMs >= filter.fromMs) && (filter.toMs === undefined || timestampMs <= filter.toMs);
}
