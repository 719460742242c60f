import type { AuditEvent, StoredEvent } from '@auditlake/model';

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
  entries: StoredEvent[];
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
  events: AuditEvent[];
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
