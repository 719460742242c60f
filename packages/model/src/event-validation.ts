import { AuditError, AuditErrorCode } from './audit-error.js';
import { isReservedAction, isSelfSource, SELF_SOURCE, toAuditEvent, type AuditEvent, type Decision } from './event.js';
import { newEventId } from './event-id.js';
import {
  boundedTables,
  EVENT_TIME_AHEAD_MAX_MS,
  EVENT_TIME_MAX_MS,
  EVENTS_PER_REQUEST_MAX,
  EVENT_ID_LENGTH_MAX,
  FIELD_LIMIT_BYTES,
  SOURCE_ID_LENGTH_MAX,
  SOURCE_SEQ_MAX,
  truncateToBytes,
} from './field-limits.js';

export interface ValidateOptions {
  /** Server time used when an event has no `ts`, and for assigned ids. */
  nowMs: number;
  /**
   * The time a `ts` is judged "ahead" against (default `nowMs`): a node passes the later of its
   * clock and its log's ingest clock, which keeps the time the cluster's leaders stamped, so a
   * node whose own clock is slow does not refuse correctly timed events as from the future.
   */
  latestMs?: number;
  /** Assigns ids to events without one; injectable so tests can replay. */
  newId?: (nowMs: number) => string;
  /**
   * The field holding the event time: `ts` in ingest input (the default), `timestamp` in an
   * already stored or forwarded event.
   */
  timeField?: 'ts' | 'timestamp';
  /**
   * Accept the actions only auditlake records (INTEGRITY_ACTIONS): true for events auditlake
   * itself forwards between nodes, never for ingest.
   */
  allowReserved?: boolean;
  /**
   * The sourceIds the sending principal may send (`auditlake.ingest.sources.<principal>`):
   * an event with any other sourceId is refused with AUDIT_SOURCE_NOT_BOUND. Absent: sourceIds
   * are not bound (no binding is configured, or the event comes from a node that checked it).
   */
  sourceBinding?: SourceBinding;
}

/** Who sends a request and the sourceIds bound to them (empty: none). */
export interface SourceBinding {
  principal: string;
  sourceIds: ReadonlySet<string>;
}

function refuse(message: string): never {
  throw new AuditError(AuditErrorCode.BAD_REQUEST, message);
}

/**
 * Where an event sits in the request: its array index, or a name for a lone event. Kept as a
 * number until a message needs it, because building `events[i]` for every valid event was a
 * measurable share of ingest CPU.
 */
type At = number | string;

function label(at: At): string {
  return typeof at === 'number' ? `events[${at}]` : at;
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** The index of the first lone surrogate in `value` (one not part of a surrogate pair), or -1. */
function loneSurrogateIndex(value: string): number {
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit < 0xd800 || unit > 0xdfff) continue;
    const next = value.charCodeAt(i + 1);
    if (unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      i++;
      continue;
    }
    return i;
  }
  return -1;
}

/**
 * Refuses a string that is not well-formed Unicode. A lone surrogate has no UTF-8 form: stored
 * (LevelDB keys, Parquet, JSON output) it becomes U+FFFD, so `"a\ud800"`, `"a\udfff"` and
 * `"a\ufffd"` would be one eventId and the evidence would be altered.
 */
function wellFormed(value: string, at: At, field: string): string {
  if (value.isWellFormed()) return value;
  const index = loneSurrogateIndex(value);
  const unit = value.charCodeAt(index).toString(16).toUpperCase();
  refuse(`${label(at)}.${field} is not well-formed Unicode: a lone surrogate (U+${unit}) at character ${index}`);
}

function requiredString(raw: Record<string, unknown>, field: string, at: At, limitBytes: number): string {
  const value = raw[field];
  if (value === undefined || value === null) refuse(`${label(at)}.${field} is required`);
  if (typeof value !== 'string') refuse(`${label(at)}.${field} must be a string, got ${describeType(value)}`);
  if (value.trim() === '') refuse(`${label(at)}.${field} must not be empty`);
  return truncateToBytes(wellFormed(value, at, field), limitBytes);
}

/** Optional fields accept null as absent: older plugins send explicit nulls. */
function optionalString(raw: Record<string, unknown>, field: string, at: At, limitBytes: number): string {
  const value = raw[field];
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') refuse(`${label(at)}.${field} must be a string, got ${describeType(value)}`);
  return truncateToBytes(wellFormed(value, at, field), limitBytes);
}

function parseDecision(raw: Record<string, unknown>, at: At): Decision | '' {
  const value = raw['decision'];
  if (value === undefined || value === null || value === '') return '';
  if (typeof value !== 'string') refuse(`${label(at)}.decision must be ALLOW or DENY, got ${describeType(value)}`);
  const upper = value.toUpperCase();
  if (upper !== 'ALLOW' && upper !== 'DENY') refuse(`${label(at)}.decision must be ALLOW or DENY: ${value}`);
  return upper;
}

function parseTables(raw: Record<string, unknown>, at: At): string[] {
  const value = raw['tables'];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) refuse(`${label(at)}.tables must be an array of strings, got ${describeType(value)}`);
  // Every entry is checked, also those past what is kept.
  for (let i = 0; i < value.length; i++) {
    const table: unknown = value[i];
    if (typeof table !== 'string') refuse(`${label(at)}.tables[${i}] must be a string, got ${describeType(table)}`);
    wellFormed(table, at, `tables[${i}]`);
  }
  return boundedTables(value as string[]);
}

function parseTs(raw: Record<string, unknown>, at: At, nowMs: number, field: 'ts' | 'timestamp', latestMs = nowMs): number {
  const value = raw[field];
  if (value === undefined || value === null) return nowMs;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    refuse(`${label(at)}.${field} must be a non-negative integer (epoch millis): ${JSON.stringify(value)}`);
  }
  // Past year 9999 a date has no four-digit year: day partitions (event_date=YYYY-MM-DD), ISO
  // times and most readers' timestamp types end there.
  if (value > EVENT_TIME_MAX_MS) refuse(`${label(at)}.${field} must be at most ${EVENT_TIME_MAX_MS} (${new Date(EVENT_TIME_MAX_MS).toISOString()}): ${value}`);
  // Ingest input only: a stored or forwarded event was checked where it was received.
  if (field === 'ts' && value > latestMs + EVENT_TIME_AHEAD_MAX_MS) {
    // Named as the clock it was judged by: the log's ingest clock, where it is ahead of this node's (review).
    const clock = latestMs > nowMs ? `the log's ingest clock (${new Date(latestMs).toISOString()}; this node's reads ${new Date(nowMs).toISOString()})` : `this node's clock (${new Date(nowMs).toISOString()})`;
    refuse(`${label(at)}.${field} ${value} (${new Date(value).toISOString()}) is more than a day ahead of ${clock}: an event cannot have happened yet`);
  }
  return value;
}

function parseEventId(raw: Record<string, unknown>, at: At, nowMs: number, newId: (nowMs: number) => string): string {
  const value = raw['eventId'];
  if (value === undefined || value === null) return newId(nowMs);
  if (typeof value !== 'string') refuse(`${label(at)}.eventId must be a string, got ${describeType(value)}`);
  if (value === '') refuse(`${label(at)}.eventId must not be empty`);
  wellFormed(value, at, 'eventId');
  // Refused rather than truncated: two different long ids cut to one prefix would merge events.
  if (value.length > EVENT_ID_LENGTH_MAX) {
    refuse(`${label(at)}.eventId must be at most ${EVENT_ID_LENGTH_MAX} characters, got ${value.length}`);
  }
  return value;
}

/**
 * sourceId and sourceSeq, both optional; a sourceSeq needs the sourceId it counts for, and from
 * a client is at most SOURCE_SEQ_MAX (`fromNode`: a node forwarding what it accepted, perhaps a
 * version without the bound, is not refused after the fact).
 */
function parseSource(raw: Record<string, unknown>, at: At, fromNode: boolean): { sourceId?: string; sourceSeq?: number } {
  const id = raw['sourceId'];
  const seq = raw['sourceSeq'];
  const out: { sourceId?: string; sourceSeq?: number } = {};
  if (id !== undefined && id !== null) {
    if (typeof id !== 'string') refuse(`${label(at)}.sourceId must be a string, got ${describeType(id)}`);
    if (id === '') refuse(`${label(at)}.sourceId must not be empty`);
    if (id.length > SOURCE_ID_LENGTH_MAX) refuse(`${label(at)}.sourceId must be at most ${SOURCE_ID_LENGTH_MAX} characters, got ${id.length}`);
    out.sourceId = wellFormed(id, at, 'sourceId');
  }
  if (seq !== undefined && seq !== null) {
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) refuse(`${label(at)}.sourceSeq must be a non-negative integer: ${JSON.stringify(seq)}`);
    if (!fromNode && seq > SOURCE_SEQ_MAX) refuse(`${label(at)}.sourceSeq must be at most ${SOURCE_SEQ_MAX} (a source's own count of its events): ${seq}`);
    if (out.sourceId === undefined) refuse(`${label(at)}.sourceSeq needs a sourceId (the source it counts events of)`);
    out.sourceSeq = seq;
  }
  return out;
}

/**
 * Refuses an event whose sourceId the sender may not send: the completeness ledger counts a
 * source's sourceSeqs, so an event sent under another source's id could fill that source's
 * holes (hiding lost events) or make false ones.
 */
function refuseUnbound(sourceId: string, at: At, binding: SourceBinding): never {
  const { principal, sourceIds } = binding;
  const key = `auditlake.ingest.sources.${principal}`;
  const may = sourceIds.size === 0 ? `it is bound to no sourceId (${key} is not set)` : `it may send only ${[...sourceIds].map((id) => JSON.stringify(id)).join(', ')} (${key})`;
  throw new AuditError(
    AuditErrorCode.SOURCE_NOT_BOUND,
    `${label(at)}.sourceId ${JSON.stringify(sourceId)} is not bound to principal ${JSON.stringify(principal)}: ${may}; nothing of the request was stored — send events under your own sourceId, or bind this one to ${JSON.stringify(principal)} in the configuration of every node`,
  );
}

/** The masked-value count a stored or forwarded event carries (see AuditEvent.redacted). */
function parseRedacted(raw: Record<string, unknown>, at: At): number {
  const value = raw['redacted'];
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    refuse(`${label(at)}.redacted must be a non-negative integer: ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * Validates and normalises one event; `at` names it in messages: a name, or an array index shown as `events[3]`.
 * `redacted` is kept only from the stored shape (`timeField: 'timestamp'`): in ingest input
 * it is ignored, because only this node's masking sets it.
 */
export function validateEvent(raw: unknown, at: number | string, options: ValidateOptions): AuditEvent {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    refuse(`${label(at)} must be a JSON object, got ${describeType(raw)}`);
  }
  const record = raw as Record<string, unknown>;
  const event = validateFields(record, at, options);
  if (options.timeField !== 'timestamp') return event;
  const redacted = parseRedacted(record, at);
  return redacted === 0 ? event : toAuditEvent({ ...event, redacted });
}

function validateFields(record: Record<string, unknown>, at: At, options: ValidateOptions): AuditEvent {
  const newId = options.newId ?? newEventId;
  const event: AuditEvent = {
    eventId: parseEventId(record, at, options.nowMs, newId),
    userId: requiredString(record, 'userId', at, FIELD_LIMIT_BYTES.userId),
    source: requiredString(record, 'source', at, FIELD_LIMIT_BYTES.source),
    action: requiredString(record, 'action', at, FIELD_LIMIT_BYTES.action),
    resource: optionalString(record, 'resource', at, FIELD_LIMIT_BYTES.resource),
    decision: parseDecision(record, at),
    tables: parseTables(record, at),
    query: optionalString(record, 'query', at, FIELD_LIMIT_BYTES.query),
    details: optionalString(record, 'details', at, FIELD_LIMIT_BYTES.details),
    timestamp: parseTs(record, at, options.nowMs, options.timeField ?? 'ts', options.latestMs),
  };
  if (options.allowReserved !== true && isReservedAction(event.source, event.action)) {
    refuse(`${label(at)}.action ${event.action} of source ${event.source} is reserved: only auditlake itself records it`);
  }
  if (options.allowReserved !== true && isSelfSource(event.source)) {
    refuse(`${label(at)}.source ${JSON.stringify(event.source)} is reserved: only auditlake itself records events of source ${SELF_SOURCE}; send your events under your engine's name`);
  }
  // Only when sent: most events have neither, and their object keeps the common shape.
  if (record['sourceId'] !== undefined || record['sourceSeq'] !== undefined) {
    const source = parseSource(record, at, options.allowReserved === true);
    if (source.sourceId !== undefined && options.sourceBinding !== undefined && !options.sourceBinding.sourceIds.has(source.sourceId)) {
      refuseUnbound(source.sourceId, at, options.sourceBinding);
    }
    if (source.sourceId !== undefined || source.sourceSeq !== undefined) return toAuditEvent({ ...event, ...source });
  }
  return event;
}

/**
 * Validates an ingest body: one event object or an array of them. All or nothing: the first
 * invalid event refuses the whole request, so a caller never has to work out which part landed.
 */
export function validateIngestBody(body: unknown, options: ValidateOptions): AuditEvent[] {
  if (Array.isArray(body)) {
    if (body.length > EVENTS_PER_REQUEST_MAX) {
      refuse(`too many events in one request: ${body.length} (at most ${EVENTS_PER_REQUEST_MAX})`);
    }
    const events = new Array<AuditEvent>(body.length);
    for (let i = 0; i < body.length; i++) events[i] = validateEvent(body[i], i, options);
    return events;
  }
  if (typeof body === 'object' && body !== null) return [validateEvent(body, 'event', options)];
  refuse(`request body must be an audit event object or an array of them, got ${describeType(body)}`);
}
