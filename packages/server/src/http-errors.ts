import { AuditErrorCode, isAuditError } from '@auditlake/model';

/** The one place error codes become HTTP statuses (docs/architecture.md: only the server knows HTTP). */
const STATUS_BY_CODE: Record<AuditErrorCode, number> = {
  [AuditErrorCode.BAD_REQUEST]: 400,
  [AuditErrorCode.SELF_RECORD_NOT_ERASABLE]: 400,
  [AuditErrorCode.SETTINGS_INVALID]: 400,
  [AuditErrorCode.TIER_TARGET_UNUSABLE]: 400,
  [AuditErrorCode.BODY_TOO_LARGE]: 413,
  [AuditErrorCode.UNSUPPORTED_MEDIA_TYPE]: 415,
  [AuditErrorCode.UNAUTHENTICATED]: 401,
  [AuditErrorCode.FORBIDDEN]: 403,
  [AuditErrorCode.SOURCE_NOT_BOUND]: 403,
  [AuditErrorCode.HOST_NOT_ALLOWED]: 403,
  [AuditErrorCode.LIMIT_EXCEEDED]: 429,
  [AuditErrorCode.SEARCH_TIMEOUT]: 503,
  [AuditErrorCode.NOT_LEADER]: 503,
  [AuditErrorCode.STALE_TERM]: 503,
  [AuditErrorCode.STORE_NOT_OPEN]: 503,
  [AuditErrorCode.UNREACHABLE]: 502,
  [AuditErrorCode.STORE_WRITE_FAILED]: 503,
  [AuditErrorCode.REPLICATION_TIMEOUT]: 503,
  [AuditErrorCode.LEADER_NO_ANSWER]: 504,
  [AuditErrorCode.CONFIG_INVALID]: 500,
  [AuditErrorCode.OBJECT_NOT_FOUND]: 502,
  [AuditErrorCode.OBJECT_EXISTS]: 409,
  [AuditErrorCode.OBJECT_STORE_FAILED]: 502,
  [AuditErrorCode.TABLE_INVALID]: 502,
  [AuditErrorCode.INTEGRITY_MISMATCH]: 409,
  [AuditErrorCode.CLUSTER_MISMATCH]: 503,
  [AuditErrorCode.NODE_ID_IN_USE]: 503,
  [AuditErrorCode.ENCODER_FAILED]: 500,
  [AuditErrorCode.PARQUET_SCHEMA_MISMATCH]: 500,
  [AuditErrorCode.VERIFIER_FAILED]: 500,
};

/** The contract's code for a client error the framework raised (a missing or unknown content type, a malformed body). */
const CODE_BY_CLIENT_STATUS: Partial<Record<number, AuditErrorCode>> = {
  401: AuditErrorCode.UNAUTHENTICATED,
  403: AuditErrorCode.FORBIDDEN,
  413: AuditErrorCode.BODY_TOO_LARGE,
  415: AuditErrorCode.UNSUPPORTED_MEDIA_TYPE,
  429: AuditErrorCode.LIMIT_EXCEEDED,
};

/** Seconds a client should wait before retrying a retryable error (`Retry-After`). */
export const RETRY_AFTER_SECONDS = 1;

export interface HttpError {
  statusCode: number;
  body: { status: 'error'; error: string; code: string };
  /** Present on retryable errors: the `Retry-After` header's value, in seconds. */
  retryAfterSeconds?: number;
}

interface FastifyLikeError {
  statusCode?: number;
  code?: string;
  message: string;
}

const MIB = 1024 * 1024;

/** What the request said that a framework error's message leaves out. */
export interface RequestContext {
  /** The request's Content-Type, if it sent one. */
  contentType?: string | undefined;
  /** The route's body limit in bytes. */
  bodyLimitBytes?: number | undefined;
}

/**
 * Maps anything thrown while serving a request to a status and the contract's error body. The
 * framework's own words for a body too large ("Request body is too large") or of no known type
 * ("Unsupported Media Type") say neither the limit nor what to send: they are said here.
 */
export function toHttpError(err: unknown, context: RequestContext = {}): HttpError {
  if (isAuditError(err)) {
    const mapped: HttpError = { statusCode: STATUS_BY_CODE[err.code], body: { status: 'error', error: err.message, code: err.code } };
    if (err.retryable) mapped.retryAfterSeconds = RETRY_AFTER_SECONDS;
    return mapped;
  }
  const e = err as FastifyLikeError;
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    const bytes = context.bodyLimitBytes;
    const limit = bytes === undefined ? 'the limit' : `the limit of ${bytes} bytes${bytes % MIB === 0 ? ` (${bytes / MIB} MiB)` : ''}`;
    return { statusCode: 413, body: { status: 'error', error: `request body is larger than ${limit}; nothing was stored (send fewer events per request)`, code: AuditErrorCode.BODY_TOO_LARGE } };
  }
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    const sent = context.contentType === undefined || context.contentType === '' ? 'none' : JSON.stringify(context.contentType);
    return { statusCode: 415, body: { status: 'error', error: `request body must be JSON: send Content-Type: application/json (got ${sent})`, code: AuditErrorCode.UNSUPPORTED_MEDIA_TYPE } };
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    const invalidJson = e instanceof SyntaxError || e.code === 'FST_ERR_CTP_INVALID_JSON_BODY';
    const message = invalidJson ? `request body is not valid JSON: ${e.message}` : e.message;
    // The contract's codes only: a framework's own code (FST_…) means nothing to a client.
    return { statusCode: e.statusCode, body: { status: 'error', error: message, code: CODE_BY_CLIENT_STATUS[e.statusCode] ?? AuditErrorCode.BAD_REQUEST } };
  }
  return { statusCode: 500, body: { status: 'error', error: 'internal error; see the node log', code: 'AUDIT_INTERNAL' } };
}
