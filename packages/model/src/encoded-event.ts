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

const SEQ_MEMBER = ',"seq":';
const TERM_MEMBER = ',"term":';
const INGEST_TS_MEMBER = ',"ingestTs":';
/** The record chain's members after term, each a lower-case hex string, in this order. */
const CHAIN_MEMBERS = [',"recordHash":"', '","chainHash":"', '","fieldCheck":"'] as const;
/** A member the store may keep among the event's fields that the API does not return. */
const ERASED_MEMBER = ',"erased":{';

/** The index after the decimal digits at `from` (at least one), or -1. */
function skipDigits(text: string, from: number): number {
  let i = from;
  for (let c = text.charCodeAt(i); c >= 0x30 && c <= 0x39; c = text.charCodeAt(++i));
  return i > from ? i : -1;
}

/** The index after the lower-case hex digits at `from` (possibly none). */
function skipHex(text: string, from: number): number {
  let i = from;
  for (let c = text.charCodeAt(i); (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66); c = text.charCodeAt(++i));
  return i;
}

/**
 * Whether the text from `at` to its end is what the store keeps after ingestTs:
 * `,"seq":<n>,"term":<n>`, then, on a store that keeps the record chain, its three hex members,
 * and the closing brace. (Scanned by hand: as a regular expression over a slice it was about a
 * fifth of composing a search answer.)
 */
function isStoredTail(text: string, at: number): boolean {
  if (!text.startsWith(SEQ_MEMBER, at)) return false;
  let i = skipDigits(text, at + SEQ_MEMBER.length);
  if (i < 0 || !text.startsWith(TERM_MEMBER, i)) return false;
  i = skipDigits(text, i + TERM_MEMBER.length);
  if (i < 0) return false;
  if (text.startsWith(CHAIN_MEMBERS[0], i)) {
    for (const member of CHAIN_MEMBERS) {
      if (!text.startsWith(member, i)) return false;
      i = skipHex(text, i + member.length);
    }
    if (text.charCodeAt(i++) !== 0x22) return false;
  }
  return i === text.length - 1 && text.charCodeAt(i) === 0x7d;
}

/** Whether `head` ends with `,"ingestTs":<n>`, the output's last member. */
function endsWithIngestTs(head: string): boolean {
  const at = head.lastIndexOf(INGEST_TS_MEMBER);
  return at >= 0 && skipDigits(head, at + INGEST_TS_MEMBER.length) === head.length;
}

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
  const at = stored.lastIndexOf(SEQ_MEMBER);
  if (at < 0 || !stored.startsWith('{"eventId":') || !isStoredTail(stored, at)) return undefined;
  const head = stored.slice(0, at);
  if (!endsWithIngestTs(head) || head.includes(ERASED_MEMBER)) return undefined;
  return head + '}';
}
