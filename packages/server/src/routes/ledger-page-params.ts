import { AuditError, AuditErrorCode } from '@auditlake/model';

/** Sources one `GET /admin/audit/ledger` page holds unless `limit` says otherwise, and at most. */
export const LEDGER_PAGE_SOURCES_DEFAULT = 100;
export const LEDGER_PAGE_SOURCES_MAX = 1_000;

/**
 * Holes answered per source unless `gapsLimit` says otherwise, and at most: the newest ones.
 * With the ledger's bound on ranges over all sources (LEDGER_RANGES_MAX), a page of the largest
 * sizes still holds at most some 200,000 holes.
 */
export const LEDGER_PAGE_GAPS_DEFAULT = 100;
export const LEDGER_PAGE_GAPS_MAX = 1_000;

/**
 * Day rows one answer holds unless `daysLimit` says otherwise, and at most: events may name
 * any day, each adding rows, so the rows are paged too (`daysAfter`, `daysNext`).
 */
export const LEDGER_PAGE_DAY_ROWS_DEFAULT = 1_000;
export const LEDGER_PAGE_DAY_ROWS_MAX = 10_000;

/** How one page of the ledger's sources (and of its day rows) is asked for. */
export interface LedgerPageParams {
  /** Start after this sourceId (the `next` of the page before); from the first without it. */
  after?: string;
  limit: number;
  gapsLimit: number;
  /** Start after this day row (decoded from the `daysNext` of the answer before). */
  daysAfter?: string;
  daysLimit: number;
}

/** A day row's position as an answer gives it: opaque to clients (base64url of the row's key). */
export function dayCursor(next: string | null): string | null {
  return next === null ? null : Buffer.from(next, 'utf8').toString('base64url');
}

/** A day row's position read back from `daysAfter`; a key of a day row starts with its day. */
function dayPosition(raw: unknown): string | undefined {
  if (raw === undefined) return undefined;
  const position = typeof raw === 'string' && /^[A-Za-z0-9_-]+$/.test(raw) ? Buffer.from(raw, 'base64url').toString('utf8') : '';
  if (!/^\d{4}-\d{2}-\d{2}!/.test(position)) {
    throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter daysAfter must be the daysNext of an answer before: ${text(raw)}`);
  }
  return position;
}

function text(raw: unknown): string {
  return typeof raw === 'string' ? raw : JSON.stringify(raw);
}

/** An integer parameter from `min` to `max`, `fallback` when absent; else AUDIT_BAD_REQUEST naming it. */
function integerParam(query: Record<string, unknown>, name: string, min: number, max: number, fallback: number): number {
  const raw = query[name];
  if (raw === undefined) return fallback;
  const value = typeof raw === 'string' && /^\d{1,7}$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= min && value <= max)) throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter ${name} must be an integer from ${min} to ${max}: ${text(raw)}`);
  return value;
}

/** `after`, `limit`, `gapsLimit`, `daysAfter` and `daysLimit` of a ledger request; `after` only without `sourceId` (which names one source). */
export function ledgerPageParams(query: Record<string, unknown>): LedgerPageParams {
  const after = query['after'];
  if (after !== undefined && (typeof after !== 'string' || after === '')) {
    throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter after must be one non-empty sourceId (the next of the page before): ${text(after)}`);
  }
  if (after !== undefined && query['sourceId'] !== undefined) {
    throw new AuditError(AuditErrorCode.BAD_REQUEST, 'parameter after pages through all sources: it cannot be combined with sourceId');
  }
  const daysAfter = dayPosition(query['daysAfter']);
  return {
    ...(after !== undefined ? { after } : {}),
    limit: integerParam(query, 'limit', 1, LEDGER_PAGE_SOURCES_MAX, LEDGER_PAGE_SOURCES_DEFAULT),
    gapsLimit: integerParam(query, 'gapsLimit', 0, LEDGER_PAGE_GAPS_MAX, LEDGER_PAGE_GAPS_DEFAULT),
    ...(daysAfter !== undefined ? { daysAfter } : {}),
    daysLimit: integerParam(query, 'daysLimit', 1, LEDGER_PAGE_DAY_ROWS_MAX, LEDGER_PAGE_DAY_ROWS_DEFAULT),
  };
}
