import type { StoredEvent } from '@auditlake/model';

/**
 * A log entry received from the leader: the bytes it stored, stored here as they are, and the
 * fields the keys and the log position are built from.
 */
export interface ReplicatedEntry {
  eventId: string;
  timestamp: number;
  seq: number;
  ingestTs: number;
  term: number;
  bytes: Uint8Array;
}

/**
 * Reads the key fields of a replicated entry. A stored event's JSON always starts with its
 * eventId and ends with its timestamp, ingestTs, seq and term, in that order (storedEventJson
 * writes it so), so those are read from the two ends of the bytes without parsing the rest:
 * a standby applies every event of the cluster, and parsing each whole entry was most of
 * its cost per event. Anything else (an eventId holding escapes, another layout) is parsed
 * in full. The fields the keys need are checked either way, because a malformed entry would
 * otherwise become a corrupt key or a wrong position.
 */
export function readReplicatedEntry(bytes: Uint8Array): ReplicatedEntry {
  return readFromEnds(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)) ?? readParsed(bytes);
}

const HEAD = Buffer.from('{"eventId":"');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const CLOSE_BRACE = 0x7d;
const COMMA = 0x2c;
const ZERO = 0x30;
const TAIL_NAMES = ['term', 'seq', 'ingestTs', 'timestamp'] as const;
const TAIL_KEYS = TAIL_NAMES.map((name) => Buffer.from(`,"${name}":`));

// Byte loops rather than Buffer.compare and Number(toString()): each of those is a call into
// C++ per field, and a standby makes four per replicated event (it showed in profiles).
function readFromEnds(buf: Buffer): ReplicatedEntry | undefined {
  if (buf.length < HEAD.length + 2 || !bytesAt(buf, 0, HEAD)) return undefined;
  const idEnd = buf.indexOf(QUOTE, HEAD.length);
  if (idEnd <= HEAD.length) return undefined;
  // Searched backwards from the id's end, so only the id's bytes are looked at, not the entry's.
  if (buf.lastIndexOf(BACKSLASH, idEnd) >= HEAD.length) return undefined;
  if (buf[buf.length - 1] !== CLOSE_BRACE) return undefined;
  // Backwards from the closing brace, past the record's salt and the fixed-size chain fields when
  // there are any (docs/integrity.md): `,"term":R`, `,"seq":S`, `,"ingestTs":I`, `,"timestamp":T`.
  const values: number[] = [];
  const salt = saltMemberStart(buf);
  const chainEnd = salt < 0 ? buf.length - 1 : salt;
  let end = hasChainFields(buf, chainEnd) ? chainEnd + 1 - CHAIN_FIELDS_BYTES : buf.length - 1;
  for (const key of TAIL_KEYS) {
    let start = end;
    while (start > 0 && isDigit(buf[start - 1] as number)) start--;
    // One to sixteen digits, no leading zero unless the number is 0: what JSON.stringify writes for a safe integer.
    if (start === end || end - start > 16 || (buf[start] === ZERO && end - start > 1)) return undefined;
    const keyStart = start - key.length;
    if (keyStart < idEnd || !bytesAt(buf, keyStart, key)) return undefined;
    // Exact while below 2^53; a larger number comes out at 2^53 or more and is refused.
    let value = 0;
    for (let i = start; i < end; i++) value = value * 10 + ((buf[i] as number) - ZERO);
    if (value > Number.MAX_SAFE_INTEGER) return undefined;
    values.push(value);
    end = keyStart;
  }
  const [term, seq, ingestTs, timestamp] = values as [number, number, number, number];
  // The entry must close the eventId string and go on to the next member before the tail.
  if (buf[idEnd + 1] !== COMMA) return undefined;
  return { eventId: buf.toString('utf8', HEAD.length, idEnd), timestamp, seq, ingestTs, term, bytes: buf };
}

/** `,"recordHash":"<64>","chainHash":"<64>","fieldCheck":"<56>"}`: the chain fields end every chained entry (before its salt, when it has one). */
const CHAIN_FIELD_KEYS = [Buffer.from(',"recordHash":"'), Buffer.from('","chainHash":"'), Buffer.from('","fieldCheck":"')] as const;
const CHAIN_FIELD_LENGTHS = [64, 64, 56] as const;
const CHAIN_FIELDS_BYTES = CHAIN_FIELD_KEYS.reduce((n, key, i) => n + key.length + (CHAIN_FIELD_LENGTHS[i] as number), 0) + 2;

/** Whether the chain fields end just before `chainEnd` (the closing brace, or the salt member). */
function hasChainFields(buf: Buffer, chainEnd: number): boolean {
  let at = chainEnd + 1 - CHAIN_FIELDS_BYTES;
  if (at < HEAD.length) return false;
  for (let i = 0; i < CHAIN_FIELD_KEYS.length; i++) {
    const key = CHAIN_FIELD_KEYS[i] as Buffer;
    if (!bytesAt(buf, at, key)) return false;
    at += key.length + (CHAIN_FIELD_LENGTHS[i] as number);
  }
  return buf[at] === QUOTE && at + 1 === chainEnd;
}

const SALT_KEY = Buffer.from(',"salt":"');
/** 1 at each byte a stored salt holds (base64url and `.`). */
const IS_SALT_BYTE = new Uint8Array(256);
for (const c of Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.')) IS_SALT_BYTE[c] = 1;

/** Where `,"salt":"…"` starts when it ends just before the closing brace, or -1. */
function saltMemberStart(buf: Buffer): number {
  const close = buf.length - 2;
  if (buf[close] !== QUOTE) return -1;
  let i = close;
  while (i > 0 && IS_SALT_BYTE[buf[i - 1] as number] === 1) i--;
  const at = i - SALT_KEY.length;
  return i === close || at < 0 || !bytesAt(buf, at, SALT_KEY) ? -1 : at;
}

function bytesAt(buf: Buffer, at: number, expected: Uint8Array): boolean {
  for (let i = 0; i < expected.length; i++) if (buf[at + i] !== expected[i]) return false;
  return true;
}

function isDigit(byte: number): boolean {
  return byte >= 0x30 && byte <= 0x39;
}

function readParsed(bytes: Uint8Array): ReplicatedEntry {
  const json = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  let event: StoredEvent;
  try {
    event = JSON.parse(json) as StoredEvent;
  } catch {
    throw new TypeError(`replicated entry is not JSON: ${json.slice(0, 200)}`);
  }
  if (
    typeof event !== 'object' ||
    event === null ||
    typeof event.eventId !== 'string' ||
    !isCount(event.seq) ||
    !isCount(event.timestamp) ||
    !isCount(event.ingestTs) ||
    !isCount(event.term)
  ) {
    throw new TypeError(`replicated entry is not a stored event (eventId, seq, timestamp, ingestTs, term): ${json.slice(0, 200)}`);
  }
  return { eventId: event.eventId, timestamp: event.timestamp, seq: event.seq, ingestTs: event.ingestTs, term: event.term, bytes };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
