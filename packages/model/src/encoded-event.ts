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
/** 1 at the code of each character a stored salt holds (base64url and `.`). */
const IS_SALT_CHAR = new Uint8Array(0x10000);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.') IS_SALT_CHAR[c.charCodeAt(0)] = 1;
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
 * Reads a stored event's text backwards from its closing brace: the optional record chain
 * members (lower-case hex), then term, seq and ingestTs, each with decimal digits, and the
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

/** Where `,"salt":"…"` starts when it ends just before `end`, or -1. */
function saltMemberStart(text: string, end: number): number {
  const close = end - 1;
  let i = close;
  while (i > 0 && IS_SALT_CHAR[text.charCodeAt(i - 1)] === 1) i--;
  return i === close ? -1 : memberBefore(text, i, SALT_MEMBER);
}

/** The record chain members as the store writes them, `#` for each lower-case hex digit: two SHA-256 digests and a 56-digit field check. */
const STORED_CHAIN_TEMPLATE = `,"recordHash":"${'#'.repeat(64)}","chainHash":"${'#'.repeat(64)}","fieldCheck":"${'#'.repeat(56)}"`;
const STORED_CHAIN_MEMBERS_LENGTH = STORED_CHAIN_TEMPLATE.length;
/** Per place in the members: the character code the store writes there, or 0 where it writes a hex digit. */
const STORED_CHAIN_EXPECTED = Uint16Array.from(STORED_CHAIN_TEMPLATE, (c) => (c === '#' ? 0 : c.charCodeAt(0)));
/** 1 at the code of each lower-case hex digit, for every UTF-16 code unit (a lookup instead of a branch). */
const IS_HEX_DIGIT = new Uint8Array(0x10000);
for (const c of '0123456789abcdef') IS_HEX_DIGIT[c.charCodeAt(0)] = 1;

/**
 * Whether the record chain members as the store writes them are in `text` at `at`.
 * One pass without branches on the digits: a sticky `[0-9a-f]{64}` expression (which this
 * replaced) cost ~1.5-5 µs an event on fresh digits (Node 20, this VM: a branch per digit, and
 * digits are random), the same classes written out ~0.65-1.1 µs, this ~0.4-0.55 µs. It was the
 * largest single cost of a one-day page on the node's main thread (~11% of its CPU samples).
 */
function storedChainMembersAt(text: string, at: number): boolean {
  let mismatch = 0;
  for (let i = 0; i < STORED_CHAIN_MEMBERS_LENGTH; i++) {
    const c = text.charCodeAt(at + i);
    const expected = STORED_CHAIN_EXPECTED[i] as number;
    mismatch |= expected === 0 ? (IS_HEX_DIGIT[c] as number) ^ 1 : c ^ expected;
  }
  return mismatch === 0;
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
