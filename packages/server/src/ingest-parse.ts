import {
  AuditErrorCode,
  encodeEvent,
  FIELD_LIMIT_BYTES,
  invalidUtf8Offset,
  isAuditError,
  newEventId,
  Redactor,
  subjectToReadSampling,
  toAuditEvent,
  truncateToBytes,
  validateIngestBody,
  type AuditEvent,
  type ChainContent,
  type EncodedEvent,
  isReservedAction,
} from '@auditlake/model';
import { newSaltKey, RecordHasher } from '@auditlake/integrity';
import { joinLines, splitLines } from './byte-lines.js';
import { JSON_DEPTH_MAX, nestsDeeperThan, parseJsonBody } from './json-body.js';

/** One event as ingest parsing leaves it: serialised, plus what the event loop still decides. */
export interface ParsedEvent extends EncodedEvent {
  /** The node assigned its id just now, so it cannot be stored already (no idempotency lookup). */
  freshId: boolean;
  /** An allowed `data:Select`: read sampling decides whether it is kept. */
  subjectToSampling: boolean;
}

/**
 * The sender and the sourceIds bound to it, when sourceIds are bound (`auditlake.ingest.sources.*`):
 * an event with another sourceId refuses the whole body (AUDIT_SOURCE_NOT_BOUND).
 */
export interface SenderSources {
  principal: string;
  sourceIds: readonly string[];
}

/** A parsed body, or why it was refused (then nothing of it may be stored). */
export type ParseOutcome = { ok: true; events: ParsedEvent[] } | { ok: false; code: AuditErrorCode; message: string; refused: number };

// The Redactor for the key list in force: rebuilt only when `audit.redact.keys` changes.
let redactorCache: { keys: string; redactor: Redactor } | undefined;

/** A Redactor for `keys`, reused while the list stays the same (it compiles a pattern). */
export function redactorFor(keys: readonly string[]): Redactor {
  const joined = keys.join(',');
  if (redactorCache?.keys !== joined) redactorCache = { keys: joined, redactor: new Redactor(keys) };
  return redactorCache.redactor;
}

/**
 * Masks the values of `audit.redact.keys` in `query` and `details` before anything is stored,
 * and records how many were masked. A masked text can be a little longer than the original
 * (`k=ab` becomes `k=***`), so it is cut to the field's limit again.
 */
function redactEvent(event: AuditEvent, redactor: Redactor): AuditEvent {
  const query = redactor.redact(event.query);
  const details = redactor.redact(event.details);
  const count = query.count + details.count;
  if (count === 0) return event;
  return toAuditEvent({
    ...event,
    query: truncateToBytes(query.text, FIELD_LIMIT_BYTES.query),
    details: truncateToBytes(details.text, FIELD_LIMIT_BYTES.details),
    redacted: count,
  });
}

// One per thread (the event loop's, and each parse worker's): field hashes of repeating values are cached.
const recordHasher = new RecordHasher();

/**
 * Decodes, parses and validates an ingest body, masks configured keys' values, and serialises
 * each event once: the work of an ingest request that does not need the store, so it can run
 * in a worker thread. `redactKeys` is `audit.redact.keys` as in force when the request arrived.
 * With `chain` (the store keeps the record chain), each event's content part of its record
 * hash is computed here too, from the values at hand (docs/integrity.md): the leader then only
 * hashes in its place in the log. With `sourceBinding`, every sourceId must be bound to the sender.
 */
export function parseIngestBody(bytes: Uint8Array, nowMs: number, redactKeys: readonly string[] = [], chain = false, sourceBinding?: SenderSources, latestMs = nowMs): ParseOutcome {
  // A byte order mark is no part of the JSON (RFC 8259 lets a parser ignore it); tools on
  // Windows write one, and JSON.parse refused it with a message quoting the invisible mark.
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
  // Decoding would replace such bytes by U+FFFD and store something other than what was sent.
  const invalidAt = invalidUtf8Offset(bytes);
  if (invalidAt !== -1) return { ok: false, code: AuditErrorCode.BAD_REQUEST, message: `request body is not valid UTF-8: an invalid byte sequence at byte offset ${invalidAt}`, refused: 1 };
  if (nestsDeeperThan(bytes, JSON_DEPTH_MAX)) {
    return { ok: false, code: AuditErrorCode.BAD_REQUEST, message: `request body nests arrays and objects deeper than ${JSON_DEPTH_MAX} levels: an audit event is an object of strings and numbers with one array (tables)`, refused: 1 };
  }
  let body: unknown;
  try {
    body = parseJsonBody(bytes);
  } catch (err) {
    return { ok: false, code: AuditErrorCode.BAD_REQUEST, message: `request body is not valid JSON: ${err instanceof Error ? err.message : String(err)}`, refused: 1 };
  }
  const fresh = new Set<string>();
  const newId = (now: number) => {
    const id = newEventId(now);
    fresh.add(id);
    return id;
  };
  const redactor = redactorFor(redactKeys);
  try {
    return {
      ok: true,
      // Built field by field: object spreads on this path were measured slow per event (the
      // writer used to spread its stored events; building them field by field was 14x faster).
      events: validateIngestBody(body, sourceBinding === undefined ? { nowMs, latestMs, newId } : { nowMs, latestMs, newId, sourceBinding: { principal: sourceBinding.principal, sourceIds: new Set(sourceBinding.sourceIds) } }).map((event, i): ParsedEvent => {
        const redacted = redactEvent(event, redactor);
        const encoded = encodeEvent(redacted);
        return {
          eventId: encoded.eventId,
          timestamp: encoded.timestamp,
          json: encoded.json,
          // Integrity actions are refused from clients; were one here, the leader must see it whole.
          chainContent: chain && !isReservedAction(redacted.source, redacted.action) ? saltedContent(redacted) : undefined,
          // Only an event at exactly the parse time can have been given it: one compare for the rest.
          timeAssigned: event.timestamp === nowMs && timeAssigned(body, i),
          freshId: fresh.has(event.eventId),
          subjectToSampling: subjectToReadSampling(event),
        };
      }),
    };
  } catch (err) {
    if (!isAuditError(err)) throw err;
    return { ok: false, code: err.code, message: err.message, refused: Array.isArray(body) ? body.length : 1 };
  }
}

/**
 * The content part of a new record under a key K of its own (docs/integrity.md, "Salted field
 * hashes"): K travels with the content to the leader, which stores it after the chain fields.
 */
function saltedContent(event: AuditEvent): ChainContent {
  const salt = newSaltKey();
  const content = recordHasher.contentOfValues(event, salt);
  return { hash: content.hash, check: content.check, salt };
}

/** Whether event `i` of a valid ingest body was sent without `ts` (its time is the node's). */
function timeAssigned(body: unknown, i: number): boolean {
  const raw = (Array.isArray(body) ? body[i] : body) as Record<string, unknown>;
  return raw['ts'] === undefined || raw['ts'] === null;
}

/*
 * A parsed body crosses from the worker as one transferred buffer rather than as cloned
 * objects (structured clone of 500 events measured several µs per event on the receiving
 * loop): line 0 is a JSON header with the ids, event times and flags, then one line per event
 * holding its JSON (which never contains a raw newline).
 */
interface WireHeader {
  ids: string[];
  ts: number[];
  /** Per event: bit 1 freshId, bit 2 subjectToSampling, bit 4 timeAssigned, as a digit. */
  flags: string;
  /** Per event, when the chain's content parts were computed: each one's hash, check and salt, joined. */
  content?: string[];
}

export function encodeParsedEvents(events: readonly ParsedEvent[]): Uint8Array {
  const header: WireHeader = {
    ids: events.map((e) => e.eventId),
    ts: events.map((e) => e.timestamp),
    flags: events.map((e) => String((e.freshId ? 1 : 0) | (e.subjectToSampling ? 2 : 0) | (e.timeAssigned === true ? 4 : 0))).join(''),
  };
  if (events.length > 0 && events.every((e) => e.chainContent !== undefined)) header.content = events.map((e) => `${e.chainContent?.hash}${e.chainContent?.check}${e.chainContent?.salt ?? ''}`);
  return joinLines([Buffer.from(JSON.stringify(header), 'utf8'), ...events.map((event) => Buffer.from(event.json, 'utf8'))]);
}

/** Hex digits of a content part's check (RecordContent.check: the field check less ingestTs and term). */
const CHECK_LENGTH = 48;

export function decodeParsedEvents(bytes: Uint8Array): ParsedEvent[] {
  const lines = splitLines(bytes).map((line) => line.toString('utf8'));
  const header = JSON.parse(lines[0] ?? '') as WireHeader;
  if (header.ids.length !== lines.length - 1) throw new TypeError(`parsed ingest batch holds ${lines.length - 1} events but names ${header.ids.length}`);
  return header.ids.map((eventId, i) => {
    const flags = Number(header.flags[i]);
    const content = header.content?.[i];
    return {
      eventId,
      timestamp: header.ts[i] as number,
      json: lines[i + 1] as string,
      chainContent: content === undefined ? undefined : { hash: content.slice(0, 64), check: content.slice(64, 64 + CHECK_LENGTH), salt: content.length > 64 + CHECK_LENGTH ? content.slice(64 + CHECK_LENGTH) : undefined },
      timeAssigned: (flags & 4) !== 0,
      freshId: (flags & 1) !== 0,
      subjectToSampling: (flags & 2) !== 0,
    };
  });
}

/**
 * An ArrayBuffer holding exactly `bytes`, to transfer: the bytes' own buffer when they fill it,
 * else a copy (a small Buffer lives in a slab shared with other Buffers, which must not be
 * detached; note Buffer#slice would not copy).
 */
export function transferable(bytes: Uint8Array): ArrayBuffer {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) return bytes.buffer;
  return new Uint8Array(bytes).buffer;
}
