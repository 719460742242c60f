import { toAuditEvent, type AuditEvent } from './event.js';

/**
 * A validated event serialised once, where it was validated (possibly in an ingest worker):
 * the store composes the stored JSON from `json` without serialising the event again.
 */
export interface EncodedEvent {
  eventId: string;
  timestamp: number;
  /** The AuditEvent as a JSON object text, exactly its fields. */
  json: string;
  /**
   * The record chain's content part of this event (`RecordContent` of @auditlake/integrity),
   * computed where the event's values were at hand so the leader only adds its place in the
   * log. Absent: the leader computes it from `json`. Never set on an event of
   * INTEGRITY_ACTIONS (the leader must see those).
   */
  chainContent?: ChainContent | undefined;
}

/** See EncodedEvent.chainContent: opaque here, defined by the record chain (docs/integrity.md). */
export interface ChainContent {
  /** 64 hex digits. */
  hash: string;
  /** 48 hex digits. */
  check: string;
}

export function encodeEvent(event: AuditEvent): EncodedEvent {
  return { eventId: event.eventId, timestamp: event.timestamp, json: JSON.stringify(toAuditEvent(event)) };
}

/**
 * The stored event's JSON: the encoded event with its place in the order appended, the same
 * text JSON.stringify gives for the StoredEvent (its fields in the same order).
 */
export function storedEventJson(encoded: EncodedEvent, ingestTs: number, seq: number, term: number): string {
  return `${encoded.json.slice(0, -1)},"ingestTs":${ingestTs},"seq":${seq},"term":${term}}`;
}

/**
 * What the store keeps after ingestTs: `,"seq":<n>,"term":<n>`, then, on a store that keeps the
 * record chain, its three hex members, and the closing brace.
 */
const STORED_TAIL = /^,"seq":\d+,"term":\d+(?:,"recordHash":"[0-9a-f]*","chainHash":"[0-9a-f]*","fieldCheck":"[0-9a-f]*")?\}$/;
/** What must come right before that tail: `,"ingestTs":<n>`, the output's last member. */
const INGEST_TS_END = /,"ingestTs":\d+$/;
/** A member the store may keep among the event's fields that the API does not return. */
const ERASED_MEMBER = ',"erased":{';

/**
 * The API's JSON for a stored event (toEventOutput's fields, in its order) cut from the stored
 * text: the store keeps the API's JSON with seq and term (and the record chain's members)
 * appended, so dropping them gives exactly what JSON.stringify(toEventOutput(JSON.parse(stored)))
 * gives, without parsing or serialising. Undefined when the text does not begin and end that
 * way, or holds a member the API leaves out (the caller then serialises the parsed event).
 */
export function storedToOutputJson(stored: string): string | undefined {
  // A quote inside a JSON string is always escaped, so `,"seq":`, `,"ingestTs":` and
  // `,"erased":{` (with their unescaped quotes) can only be members, never text in a value.
  const at = stored.lastIndexOf(',"seq":');
  if (at < 0 || !stored.startsWith('{"eventId":') || !STORED_TAIL.test(stored.slice(at))) return undefined;
  const head = stored.slice(0, at);
  if (!INGEST_TS_END.test(head.slice(head.lastIndexOf(',"ingestTs":'))) || head.includes(ERASED_MEMBER)) return undefined;
  return head + '}';
}
