import { encodeEvent, validateEvent, type EncodedEvent } from '@auditlake/model';

/** A standby (or a new leader catching up) asking a node for log entries. */
export interface PullRequest {
  nodeId: string;
  /** The asker's last seq and the term of that entry: where its log ends. */
  after: number;
  lastTerm: number;
  /** The newest term the asker knows; a node with an older one is stale. */
  term: number;
  /** Most entries wanted. */
  limit: number;
  /** Wait up to this long for new entries when there are none (long poll). */
  waitMs: number;
  /** Hash of the asker's replicated metadata; the answer carries the metadata when it differs. */
  metaHash: string;
  /** True when a new leader catches up from a peer: no leader checks, only the log-match check. */
  catchUp: boolean;
}

export interface PullResponse {
  term: number;
  nodeId: string;
  /**
   * Each entry a stored event's JSON, as UTF-8, exactly as the answering node stores it:
   * passed through without being parsed there, and stored as it is by the asker.
   */
  entries: Uint8Array[];
  /** The answering node's last seq. */
  lastSeq: number;
  /** The asker's log differs from this seq on: divert it and ask again. */
  divergedFrom?: number;
  meta?: Record<string, unknown>;
  metaHash: string;
}

/** A follower handing events from its outbox to the leader. */
export interface ForwardRequest {
  nodeId: string;
  term: number;
  /** Each a received event (AuditEvent) as JSON text, as the follower's outbox holds it. */
  events: string[];
}

export interface ForwardResponse {
  term: number;
  stored: number;
  duplicates: number;
}

/**
 * How cluster code reaches peers. The server implements it over HTTP (only the server knows
 * HTTP); every call has a deadline and rejects on any failure.
 */
export interface PeerTransport {
  pull(peerUrl: string, request: PullRequest, timeoutMs: number): Promise<PullResponse>;
  forward(peerUrl: string, request: ForwardRequest, timeoutMs: number): Promise<ForwardResponse>;
}

/** A term boundary of the log: `term` ordered its first event at `firstSeq`. Replicated. */
export interface TermStart {
  term: number;
  firstSeq: number;
}

export const TERM_STARTS_META = 'termStarts';

const STRING_FIELDS = ['eventId', 'userId', 'source', 'action', 'resource', 'decision', 'query', 'details'] as const;

/** Exactly an AuditEvent's fields with their types: what encodeEvent writes, nothing more. */
function isExactAuditEvent(raw: Record<string, unknown>): boolean {
  return (
    Object.keys(raw).length === STRING_FIELDS.length + 2 &&
    STRING_FIELDS.every((field) => typeof raw[field] === 'string') &&
    Array.isArray(raw['tables']) &&
    raw['tables'].every((table) => typeof table === 'string') &&
    Number.isSafeInteger(raw['timestamp'])
  );
}

/**
 * A forwarded (or outbox) event's JSON, ready to store. It was validated where it was
 * received. Text that is exactly an event (as the follower's encodeEvent wrote it) is stored
 * as sent, not serialised again; anything else is validated again and rebuilt to the event's
 * one shape; text that is not a valid event fails the forward rather than storing garbage.
 */
export function parseForwardedEvent(json: string): EncodedEvent {
  const raw = JSON.parse(json) as Record<string, unknown> | null;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || typeof raw['eventId'] !== 'string' || typeof raw['timestamp'] !== 'number') {
    throw new TypeError(`forwarded entry is not an audit event: ${json.slice(0, 200)}`);
  }
  if (isExactAuditEvent(raw)) return { eventId: raw['eventId'], timestamp: raw['timestamp'], json };
  return encodeEvent(validateEvent(raw, 'forwarded event', { nowMs: raw['timestamp'] }));
}
