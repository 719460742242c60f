import { encodeEvent, validateEvent, type AuditEvent, type EncodedEvent } from '@auditlake/model';
import type { AuditStore, CarriedCheckpoint, ErasedIdsPage, EventIdConflict, PrunedRange, SkippedByRetention, TermStart } from '@auditlake/store';

export type { TermStart };

/** A standby (or a new leader catching up) asking a node for log entries. */
export interface PullRequest {
  nodeId: string;
  /**
   * Where the asker's log ends: its last seq and the term of the entry there. Entries are
   * answered only if the answering node's own entry at `after` has term `lastTerm` (log
   * matching); else the answer says where the two logs can agree (`mismatch`).
   */
  after: number;
  lastTerm: number;
  /**
   * The chain hash of the asker's entry at `after`, when it has one. The answering node
   * matches only if its own entry there has the same (when it knows its own): a term number
   * can be handed out twice (the coordinator restarted empty while every node that knew the
   * latest term was down or paused), and then equal terms do not mean equal entries.
   */
  lastChainHash?: string;
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
  /**
   * Set while the asker's log owes itself the answering node's erased ids (it skipped seqs that
   * node's retention deleted, with any erasure records among them): the id the next page
   * follows, '' for the first. A matched answer carries the page (`erasedIds`) and does not
   * wait for entries.
   */
  erasedAfter?: string;
  /**
   * With `erasedAfter`: the highest seq the asker skipped while owing them, the term of its
   * entry there and the chain hash it keeps there (when it knows it). Only a node whose log
   * holds that entry in that term (with that hash, where it knows its own), and that owes none
   * itself, answers a page (any other may lack some of the ids the skipped records named).
   */
  erasedThrough?: { seq: number; term: number; chainHash?: string };
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
  /**
   * With no entries: the answering node's log went on past `after` to `throughSeq` (its entry
   * there of `term`), and its retention deleted every entry in between, erasure records maybe
   * among them. The asker owes itself that node's erased ids through there (AuditStore.owedForTail).
   */
  tailDeleted?: { throughSeq: number; term: number };
  /**
   * With entries: the answering node's term boundaries after `after`, which the asker records
   * with them, so its term runs are the answering node's (also inside gaps retention made).
   */
  termStarts?: TermStart[];
  /**
   * The asker's (after, lastTerm) is not an entry of the answering node's log. Carries that
   * log's term boundaries: the asker finds the common prefix (commonPrefix), moves its own
   * entries after it to the outbox, and asks again from there. No entries come with it.
   */
  mismatch?: { termStarts: TermStart[] };
  /**
   * With entries that skip the record of the answering node's newest checkpoint its retention
   * deleted (after `after`, before the last entry): that checkpoint as its index keeps it, with
   * the registration of the key that signed it. The asker keeps it as its own newest deleted
   * checkpoint (AuditStore.applyReplicated checks it first), so a checkpoint it signs as leader
   * continues the chain of checkpoints.
   */
  prunedCheckpoint?: CarriedCheckpoint;
  /**
   * With entries that skip seqs the answering node's retention deleted: those ranges (after
   * `after`, before the last entry), each with the chain hash at its end. The asker records them
   * as deleted by retention (so its log verifies across them) and checks the entry after each
   * against that hash (AuditStore.applyReplicated).
   */
  prunedRanges?: PrunedRange[];
  /**
   * With entries that skip seqs: the newest event time the answering node's retention deleted.
   * The asker takes it as its own (AuditStore.applyReplicated), so as leader it looks a re-send
   * of an event it never held up in the tier.
   */
  prunedTimeMax?: number;
  /**
   * With a matched answer: the asker's end was proven to be this log's — the same chain hash
   * there (also one kept at the end of a deleted range), or the asker sent none to compare. Absent
   * (and from nodes of earlier versions, which never send it): matched by term alone, the asker
   * having sent its hash where the answering node knows none (its retention deleted that entry).
   * Entries are sent either way (each is checked against the chain as it is applied), but an
   * unproven match proves nothing about the entries before it — a term number can be handed out
   * twice — so neither side counts it as the asker holding the answering node's log
   * (ack=replicated, tiering's bound).
   */
  proven?: true;
  /** The page of erased ids the asker asked for (`erasedAfter`), read after the entries; absent when this node cannot give a complete set. */
  erasedIds?: ErasedIdsPage;
  meta?: Record<string, unknown>;
  metaHash: string;
}

/** What a pull answer says its entries skip (AuditStore.applyReplicated keeps it with them). */
export function skippedOf(response: PullResponse): SkippedByRetention {
  return {
    ...(response.prunedRanges === undefined ? {} : { ranges: response.prunedRanges }),
    ...(response.prunedCheckpoint === undefined ? {} : { checkpoint: response.prunedCheckpoint }),
    ...(response.prunedTimeMax === undefined ? {} : { timeMax: response.prunedTimeMax }),
    ...(response.proven === true ? {} : { unproven: true }),
  };
}

/** What a pull asks for of the answering node's erased ids while `store` owes them (none when it does not). */
export async function erasedIdsAsk(store: AuditStore): Promise<Pick<PullRequest, 'erasedAfter' | 'erasedThrough'>> {
  const owed = store.erasedIdsOwed;
  if (owed === undefined) return {};
  const chainHash = await store.knownChainHashAt(owed.throughSeq);
  const term = store.erasedIdsOwedTerm() as number;
  return { erasedAfter: owed.after, erasedThrough: { seq: owed.throughSeq, term, ...(chainHash === undefined ? {} : { chainHash }) } };
}

/** A follower handing events from its outbox to the leader. */
export interface ForwardRequest {
  nodeId: string;
  term: number;
  /** Each a received event (AuditEvent) as JSON text, as the follower's outbox holds it. */
  events: string[];
  /**
   * One digit per event, bit 1 set when the follower assigned the event's eventId on receipt
   * and no forward carried it before, so no node can hold it and the leader skips its
   * idempotency lookup; bit 2 set when the follower set the event's time on receipt (it came
   * without `ts`), so the leader tells a retry of it from an eventId conflict by all but its time
   * (EncodedEvent.timeAssigned). Any other character, or no flags at all, means neither.
   */
  newIdFlags?: string;
}

/** The digit of event `i` in `flags` ('0'..'3'), or 0. */
function flagBits(flags: string, i: number): number {
  const bits = flags.charCodeAt(i) - 0x30;
  return bits >= 0 && bits <= 3 ? bits : 0;
}

/** The ids of `events` that `flags` marks as new (ForwardRequest.newIdFlags). */
export function newIdsOf(events: readonly EncodedEvent[], flags: string | undefined): Set<string> {
  const ids = new Set<string>();
  if (flags === undefined) return ids;
  events.forEach((event, i) => {
    if ((flagBits(flags, i) & 1) !== 0) ids.add(event.eventId);
  });
  return ids;
}

/** Marks the events whose time the follower set (ForwardRequest.newIdFlags, bit 2); returns them. */
export function markTimeAssigned(events: EncodedEvent[], flags: string | undefined): EncodedEvent[] {
  if (flags !== undefined) events.forEach((event, i) => {
    if ((flagBits(flags, i) & 2) !== 0) event.timeAssigned = true;
  });
  return events;
}

/** The flags for a forward of outbox entries, or undefined when none has one. */
export function newIdFlagsOf(entries: ReadonlyArray<{ unsentNewId: boolean; timeAssigned?: boolean }>): string | undefined {
  return entries.some((entry) => entry.unsentNewId || entry.timeAssigned === true) ? entries.map((entry) => String((entry.unsentNewId ? 1 : 0) | (entry.timeAssigned === true ? 2 : 0))).join('') : undefined;
}

export interface ForwardResponse {
  term: number;
  stored: number;
  /** Events the leader holds already with the same content (retries): kept once. */
  duplicates: number;
  /**
   * Events the leader refused because their eventId holds an event with other content (the
   * first stored is kept), with both content hashes; absent when none. The leader has recorded
   * them (an `audit:EventIdConflict` event); the forwarding node must not send them again.
   */
  conflicts?: EventIdConflict[];
  /**
   * EventIds among the events that the leader found held by the tier, not by its log (re-sent
   * after retention deleted them): absent when none. The forwarding node remembers them
   * (AuditStore.noteHeldByTier), so its `ack=replicated` wait counts them confirmed.
   */
  heldByTier?: string[];
}

/**
 * How cluster code reaches peers. The server implements it over HTTP (only the server knows
 * HTTP); every call has a deadline and rejects on any failure.
 */
export interface PeerTransport {
  pull(peerUrl: string, request: PullRequest, timeoutMs: number): Promise<PullResponse>;
  forward(peerUrl: string, request: ForwardRequest, timeoutMs: number): Promise<ForwardResponse>;
}

/** The fields of an AuditEvent in the order encodeEvent writes them. */
const CANONICAL_KEYS = 'eventId,userId,source,action,resource,decision,tables,query,details,timestamp';

/**
 * Whether `json` is, character for character, what encodeEvent writes for `event`: an object
 * text with exactly the event's keys in its order, nothing around it, and values validation
 * leaves unchanged (so nothing was over a limit, every type is right). Only then may the text
 * be stored as sent: storedEventJson appends to it by replacing its final brace.
 */
function isCanonicalEventText(json: string, raw: Record<string, unknown>, event: AuditEvent): boolean {
  return (
    json.startsWith('{"eventId":') &&
    json.endsWith('}') &&
    // Escapes JSON.stringify never writes (`\/`, `\u0061`…): the stored text must be exactly
    // the values' JSON, because record hashes are computed from it (docs/integrity.md).
    !json.includes('\\u') &&
    !json.includes('\\/') &&
    Object.keys(raw).join(',') === CANONICAL_KEYS &&
    event.eventId === raw['eventId'] &&
    event.userId === raw['userId'] &&
    event.source === raw['source'] &&
    event.action === raw['action'] &&
    event.resource === raw['resource'] &&
    event.decision === raw['decision'] &&
    event.query === raw['query'] &&
    event.details === raw['details'] &&
    event.timestamp === raw['timestamp'] &&
    Array.isArray(raw['tables']) &&
    raw['tables'].length === event.tables.length &&
    event.tables.every((table, i) => table === (raw['tables'] as unknown[])[i])
  );
}

/**
 * A forwarded (or outbox) event's JSON, ready to store. It is validated again (a forward
 * crosses the network); text that is exactly what the follower's encodeEvent wrote is stored
 * as sent, not serialised again, and anything else is stored as the validated event's JSON.
 * Text that is not a valid event fails the forward rather than storing garbage.
 */
export function parseForwardedEvent(json: string): EncodedEvent {
  const raw = JSON.parse(json) as unknown;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || typeof (raw as Record<string, unknown>)['eventId'] !== 'string') {
    throw new TypeError(`forwarded entry is not an audit event: ${json.slice(0, 200)}`);
  }
  const record = raw as Record<string, unknown>;
  if (record['timestamp'] === undefined) throw new TypeError(`forwarded entry has no timestamp: ${json.slice(0, 200)}`);
  // The event time travels as `timestamp` (the stored shape), where ingest input says `ts`.
  // Forwards come from auditlake nodes: an erasure a truncated log gave back may be among them.
  const event = validateEvent(record, 'forwarded event', { nowMs: 0, timeField: 'timestamp', allowReserved: true });
  if (isCanonicalEventText(json, record, event)) return { eventId: event.eventId, timestamp: event.timestamp, json };
  return encodeEvent(event);
}
