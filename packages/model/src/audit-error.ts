/**
 * Stable error codes for operating errors. Programming errors throw TypeError or fail an
 * assertion instead; only these codes cross package boundaries, and only the server maps
 * them to HTTP statuses.
 */
export const AuditErrorCode = {
  /** A request (event, parameter, setting) was refused as invalid; nothing was stored. */
  BAD_REQUEST: 'AUDIT_BAD_REQUEST',
  /**
   * An erasure named one of auditlake's own records (source `auditlake`: settings changes,
   * refusals, tier adoptions, maintenance runs, integrity records); nothing was erased.
   */
  SELF_RECORD_NOT_ERASABLE: 'AUDIT_SELF_RECORD_NOT_ERASABLE',
  /** The request body declared a media type or charset the node does not read (only UTF-8 JSON). */
  UNSUPPORTED_MEDIA_TYPE: 'AUDIT_UNSUPPORTED_MEDIA_TYPE',
  /** The request body was larger than the configured limit. */
  BODY_TOO_LARGE: 'AUDIT_BODY_TOO_LARGE',
  /** A runtime setting was refused; the message is the reference document's wording. */
  SETTINGS_INVALID: 'AUDIT_SETTINGS_INVALID',
  /** The node configuration (properties file, --set, environment) is invalid. */
  CONFIG_INVALID: 'AUDIT_CONFIG_INVALID',
  /** Missing or unusable credentials. */
  UNAUTHENTICATED: 'AUDIT_UNAUTHENTICATED',
  /** Valid credentials without the role the operation needs. */
  FORBIDDEN: 'AUDIT_FORBIDDEN',
  /**
   * An event carried a sourceId that is not bound to the sending principal
   * (`auditlake.ingest.sources.<principal>`); nothing of the request was stored.
   */
  SOURCE_NOT_BOUND: 'AUDIT_SOURCE_NOT_BOUND',
  /**
   * An open endpoint (`/health`, `/metrics`) was asked for under a Host name the node does not
   * answer to: what a web page reaching the node through DNS rebinding sends.
   */
  HOST_NOT_ALLOWED: 'AUDIT_HOST_NOT_ALLOWED',
  /** The store is not open (opening, closing or closed). */
  STORE_NOT_OPEN: 'AUDIT_STORE_NOT_OPEN',
  /** The local store could not write (disk full, I/O error); nothing of the request was stored. */
  STORE_WRITE_FAILED: 'AUDIT_STORE_WRITE_FAILED',
  /** A configured limit (queue, batch) was exceeded. */
  LIMIT_EXCEEDED: 'AUDIT_LIMIT_EXCEEDED',
  /** A search ran past `auditlake.audit.search.timeout.ms` and was stopped; narrower filters answer sooner. */
  SEARCH_TIMEOUT: 'AUDIT_SEARCH_TIMEOUT',
  /** The operation needs the leader and this node is not it. */
  NOT_LEADER: 'AUDIT_NOT_LEADER',
  /**
   * A standby passed a write to the leader, which gave no answer in time or broke the
   * connection: the leader may have carried it out, so the caller looks before sending it again.
   */
  LEADER_NO_ANSWER: 'AUDIT_LEADER_NO_ANSWER',
  /** A message carried a term older than the one this node has seen. */
  STALE_TERM: 'AUDIT_STALE_TERM',
  /** `ack=replicated`: the events are stored here but no other node confirmed them in time. */
  REPLICATION_TIMEOUT: 'AUDIT_REPLICATION_TIMEOUT',
  /** The configured tiering target cannot be used. */
  TIER_TARGET_UNUSABLE: 'AUDIT_TIER_TARGET_UNUSABLE',
  /** An object asked for by key does not exist in the object store. */
  OBJECT_NOT_FOUND: 'AUDIT_OBJECT_NOT_FOUND',
  /** A conditional create found the key already taken: another writer got there first. */
  OBJECT_EXISTS: 'AUDIT_OBJECT_EXISTS',
  /** The object store failed or could not be reached (network, permissions, timeout). */
  OBJECT_STORE_FAILED: 'AUDIT_OBJECT_STORE_FAILED',
  /** A tiered table or location holds something this node cannot read or commit on. */
  TABLE_INVALID: 'AUDIT_TABLE_INVALID',
  /** Row groups of Parquet files with different schemas were to be copied into one file (table maintenance then re-encodes them). */
  PARQUET_SCHEMA_MISMATCH: 'AUDIT_PARQUET_SCHEMA_MISMATCH',
  /** A tier file encoder worker failed or died; the sweep or maintenance run retries later. */
  ENCODER_FAILED: 'AUDIT_ENCODER_FAILED',
  /** A verifier worker thread (`auditlake verify --threads`) failed or died; the verification was not done. */
  VERIFIER_FAILED: 'AUDIT_VERIFIER_FAILED',
  /** A node could not be reached, or kept failing, through every retry (the CLI's client). */
  UNREACHABLE: 'AUDIT_UNREACHABLE',
  /** Replicated log entries do not continue this node's record chain (docs/integrity.md): refused, nothing stored. */
  INTEGRITY_MISMATCH: 'AUDIT_INTEGRITY_MISMATCH',
  /**
   * This node's data belongs to another cluster than the one its coordinator holds (the cluster
   * token it remembers differs): it takes no part there, so it can neither depose that cluster's
   * leader nor replace its log and settings.
   */
  CLUSTER_MISMATCH: 'AUDIT_CLUSTER_MISMATCH',
  /** Another running process (another data dir) is a member under this node's `--node-id`: this one takes no part. */
  NODE_ID_IN_USE: 'AUDIT_NODE_ID_IN_USE',
} as const;

export type AuditErrorCode = (typeof AuditErrorCode)[keyof typeof AuditErrorCode];

export interface AuditErrorOptions {
  cause?: unknown;
  /**
   * True when the same call may succeed later without any change by the caller; the HTTP
   * answer then carries `Retry-After`.
   */
  retryable?: boolean;
}

/** The one error class for operating errors: a stable `code`, an actionable message. */
export class AuditError extends Error {
  override readonly name = 'AuditError';
  readonly code: AuditErrorCode;
  readonly retryable: boolean;

  constructor(code: AuditErrorCode, message: string, options: AuditErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** True when `err` is an AuditError, optionally with the given code. */
export function isAuditError(err: unknown, code?: AuditErrorCode): err is AuditError {
  return err instanceof AuditError && (code === undefined || err.code === code);
}
