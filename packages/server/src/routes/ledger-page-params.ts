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

/** How one page of the ledger's sources is asked for. */
export interface LedgerPageParams {
  /** Start after this sourceId (the `next` of the page before); from the first without it. */
  after?: string;
  limit: number;
  gapsLimit: number;
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

/** `after`, `limit` and `gapsLimit` of a ledger request; `after` only without `sourceId` (which names one source). */
export function ledgerPageParams(query: Record<string, unknown>): LedgerPageParams {
  const after = query['after'];
  if (after !== undefined && (typeof after !== 'string' || after === '')) {
    throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter after must be one non-empty sourceId (the next of the page before): ${text(after)}`);
  }
  if (after !== undefined && query['sourceId'] !== undefined) {
    throw new AuditError(AuditErrorCode.BAD_REQUEST, 'parameter after pages through all sources: it cannot be combined with sourceId');
  }
  return {
    ...(after !== undefined ? { after } : {}),
    limit: integerParam(query, 'limit', 1, LEDGER_PAGE_SOURCES_MAX, LEDGER_PAGE_SOURCES_DEFAULT),
    gapsLimit: integerParam(query, 'gapsLimit', 0, LEDGER_PAGE_GAPS_MAX, LEDGER_PAGE_GAPS_DEFAULT),
  };
}
