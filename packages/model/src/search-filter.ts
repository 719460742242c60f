import { AuditError, AuditErrorCode } from './audit-error.js';
import { READ_ACTION, type AuditEvent } from './event.js';

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
  /** Inclusive bounds on event time, epoch ms. */
  fromMs?: number;
  toMs?: number;
  limit: number;
}

export const SEARCH_PARAMS = ['user', 'engine', 'table', 'action', 'q', 'from', 'to', 'limit'] as const;
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

function epochMs(name: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) bad(`parameter ${name} must be epoch millis (a non-negative integer): ${value}`);
  return n;
}

/**
 * Parses search parameters. Unknown parameters are refused: a misspelt filter (`usr=alice`)
 * silently returning everything is the worst answer an audit viewer can give.
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
  const from = single(params, 'from');
  if (from !== undefined && from !== '') filter.fromMs = epochMs('from', from);
  const to = single(params, 'to');
  if (to !== undefined && to !== '') filter.toMs = epochMs('to', to);
  if (filter.fromMs !== undefined && filter.toMs !== undefined && filter.fromMs > filter.toMs) {
    bad(`parameter from must not be after to: ${filter.fromMs} > ${filter.toMs}`);
  }
  const limit = single(params, 'limit');
  if (limit !== undefined && limit !== '') {
    const n = Number(limit);
    if (!/^\d+$/.test(limit) || !Number.isSafeInteger(n) || n < 1) bad(`parameter limit must be a positive integer: ${limit}`);
    // Capped, not refused: the reference caps at the viewer's max page.
    filter.limit = Math.min(n, maxPage);
  }
  return filter;
}

/** Builds the predicate for everything but the time range, which the store applies as a key range. */
export function compileFilter(filter: SearchFilter): (event: AuditEvent) => boolean {
  const { user, engine, table, q, action } = filter;
  return (event) => {
    if (user !== undefined && event.userId !== user) return false;
    if (engine !== undefined && event.source.toLowerCase() !== engine) return false;
    if (action === 'read' && event.action !== READ_ACTION) return false;
    if (action === 'write' && event.action === READ_ACTION) return false;
    if (table !== undefined && !event.tables.some((t) => t.includes(table))) return false;
    if (q !== undefined && !matchesText(event, q)) return false;
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
