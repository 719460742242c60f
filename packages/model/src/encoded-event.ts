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
  /**
   * The receiving node set `timestamp` (the sender sent no `ts`): a retry of the event gets
   * another time, so telling a retry from an eventId conflict compares all but the time.
   * Absent: the sender chose the time (or nobody knows any more, e.g. after a forward).
   */
  timeAssigned?: boolean | undefined;
}

/** See EncodedEvent.chainContent: opaque here, defined by the record chain (docs/integrity.md). */
export interface ChainContent {
  /** 64 hex digits. */
  hash: string;
  /** 48 hex digits. */
  check: string;
  /**
   * The record's key K (22 base64url characters) its erasable fields were hashed with (content
   * format v3): stored with the record after its chain fields. Absent: hashed unsalted (v2).
   */
  salt?: string | undefined;
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

const TIMESTAMP_MEMBER = ',"timestamp":';
const INGEST_TS_MEMBER = ',"ingestTs":';
const SEQ_MEMBER = ',"seq":';
const TERM_MEMBER = ',"term":';
/** The record's salt, after the chain members when the record has one (docs/integrity.md). */
const SALT_MEMBER = ',"salt":"';
/** The record chain's members after term, each a lower-case hex string, last first. */
const CHAIN_MEMBERS_LAST_FIRST = ['","fieldCheck":"', '","chainHash":"', ',"recordHash":"'] as const;
/** A member the store may keep among the event's fields that the API does not return. */
const ERASED_MEMBER = ',"erased":{';
const QUOTE = 0x22;
const CLOSING_BRACE = 0x7d;

/** The start of the run of decimal digits that ends just before `end` (end itself when none). */
function digitsStart(text: string, end: number): number {
  let i = end;
  for (let c = text.charCodeAt(i - 1); c >= 0x30 && c <= 0x39; c = text.charCodeAt(--i - 1));
  return i;
}

/** The start of the run of lower-case hex digits that ends just before `end` (possibly empty). */
function hexStart(text: string, end: number): number {
  let i = end;
  for (let c = text.charCodeAt(i - 1); (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66); c = text.charCodeAt(--i - 1));
  return i;
}

/** Where `member` starts when the text has it just before `end`, or -1. */
function memberBefore(text: string, end: number, member: string): number {
  const at = end - member.length;
  if (at < 0) return -1;
  for (let k = 0; k < member.length; k++) if (text.charCodeAt(at + k) !== member.charCodeAt(k)) return -1;
  return at;
}

/** Where `member` and at least one decimal digit after it start, ending just before `end`, or -1. */
function numberMemberBefore(text: string, end: number, member: string): number {
  const digits = digitsStart(text, end);
  return digits === end ? -1 : memberBefore(text, digits, member);
}

/** Where the members the store appends to an event's JSON begin, read from the text's end. */
export interface StoredTail {
  /** Index of `,"timestamp":` when it is the member before ingestTs, else -1. */
  timestampAt: number;
  /** Index of `,"ingestTs":`. */
  ingestTsAt: number;
  /** Index of `,"seq":`: the API's JSON for the event is the text before it and a closing brace. */
  seqAt: number;
  /** Index of `,"term":`. */
  termAt: number;
}

/**
 * Reads a stored event's text backwards from its closing brace: the optional salt and record
 * chain members (at the stored lengths found by their names alone, see storedChainMembersAt;
 * at any other lengths lower-case hex), then term, seq and ingestTs, each with decimal digits, and the
 * timestamp before them if it is there. Undefined when the text does not end exactly that way.
 * From the end rather than by searching for the members: a `lastIndexOf` per member and a check
 * of the tail after it cost about 2 µs per event, a third of composing a one-day page's answer.
 */
export function storedTail(text: string): StoredTail | undefined {
  let end = text.length - 1;
  if (text.charCodeAt(end) !== CLOSING_BRACE) return undefined;
  if (text.charCodeAt(end - 1) === QUOTE) {
    const salt = saltMemberStart(text, end);
    end = chainMembersStart(text, salt < 0 ? end : salt);
    if (end < 0) return undefined;
  }
  const termAt = numberMemberBefore(text, end, TERM_MEMBER);
  const seqAt = termAt < 0 ? -1 : numberMemberBefore(text, termAt, SEQ_MEMBER);
  const ingestTsAt = seqAt < 0 ? -1 : numberMemberBefore(text, seqAt, INGEST_TS_MEMBER);
  if (ingestTsAt < 0) return undefined;
  return { timestampAt: numberMemberBefore(text, ingestTsAt, TIMESTAMP_MEMBER), ingestTsAt, seqAt, termAt };
}

/**
 * Where `,"salt":"…"` starts when it ends just before `end`, or -1. The value's opening quote is
 * found natively (a salt holds base64url and `.`, never a quote) rather than by walking back
 * over its characters.
 */
function saltMemberStart(text: string, end: number): number {
  const close = end - 1;
  const open = text.lastIndexOf('"', close - 1);
  return open < 0 || open === close - 1 ? -1 : memberBefore(text, open + 1, SALT_MEMBER);
}

/**
 * The record chain members as the store writes them: two SHA-256 digests (64 hex digits each)
 * and a 56-digit field check, each member name at a fixed place.
 */
const RECORD_HASH_MEMBER = ',"recordHash":"';
const CHAIN_HASH_MEMBER = '","chainHash":"';
const FIELD_CHECK_MEMBER = '","fieldCheck":"';
const CHAIN_HASH_AT = RECORD_HASH_MEMBER.length + 64;
const FIELD_CHECK_AT = CHAIN_HASH_AT + CHAIN_HASH_MEMBER.length + 64;
const STORED_CHAIN_MEMBERS_LENGTH = FIELD_CHECK_AT + FIELD_CHECK_MEMBER.length + 56 + 1;

/**
 * Whether the record chain members as the store writes them are in `text` at `at`: their names
 * and closing quote at their fixed places, compared natively. Their digits are not read: they
 * are never part of the API's JSON, which is all this locates, and what they hold is the
 * verifier's to check. Reading every digit (a table lookup each, no branches) cost ~1 µs per
 * event on this VM, the largest cost of cutting a page's events from their stored text (this:
 * ~0.3 µs, most of it the first touch of the text's end).
 */
function storedChainMembersAt(text: string, at: number): boolean {
  return (
    text.startsWith(RECORD_HASH_MEMBER, at) &&
    text.startsWith(CHAIN_HASH_MEMBER, at + CHAIN_HASH_AT) &&
    text.startsWith(FIELD_CHECK_MEMBER, at + FIELD_CHECK_AT) &&
    text.charCodeAt(at + STORED_CHAIN_MEMBERS_LENGTH - 1) === QUOTE
  );
}

/**
 * Where the record chain members that end just before `end` (the closing brace, or the salt
 * member) start, or -1. The members as the store writes them are checked in one pass at their
 * fixed place (storedChainMembersAt); any other lengths are read digit by digit.
 */
function chainMembersStart(text: string, end_: number): number {
  const at = end_ - STORED_CHAIN_MEMBERS_LENGTH;
  if (at >= 0 && storedChainMembersAt(text, at)) return at;
  let end = end_ - 1;
  for (const member of CHAIN_MEMBERS_LAST_FIRST) {
    end = memberBefore(text, hexStart(text, end), member);
    if (end < 0) return -1;
  }
  return end;
}

/**
 * The API's JSON for a stored event (toEventOutput's fields, in its order) cut from the stored
 * text: the store keeps the API's JSON with seq and term (and the record chain's members)
 * appended, so dropping them gives exactly what JSON.stringify(toEventOutput(JSON.parse(stored)))
 * gives, without parsing or serialising. Undefined when the text does not begin and end that
 * way, or holds a member the API leaves out (the caller then serialises the parsed event).
 * `tail`: the text's storedTail when the caller has it already.
 */
export function storedToOutputJson(stored: string, tail: StoredTail | undefined = storedTail(stored)): string | undefined {
  if (tail === undefined || !stored.startsWith('{"eventId":')) return undefined;
  const head = stored.slice(0, tail.seqAt);
  // A quote inside a JSON string is always escaped, so `,"erased":{` (with its unescaped
  // quotes) can only be the member, never text in a value.
  return head.includes(ERASED_MEMBER) ? undefined : head + '}';
}
