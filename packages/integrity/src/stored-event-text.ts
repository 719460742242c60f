import { HASHED_FIELDS, isHashedField, type CanonicalRecord, type HashedField } from './record-fields.js';

/**
 * A stored event's JSON read for hashing without parsing it: every field's canonical text is a
 * slice of the JSON itself (a string without escapes is the text between its quotes; only one
 * holding a backslash is parsed), so a standby hashes what it stores at the cost of a few
 * `indexOf`s.
 *
 * The layout read is the one the store writes (docs/integrity.md, "Stored layout"):
 * `{"eventId":…,"userId":…,"source":…,"action":…,"resource":…,"decision":…,"tables":[…],
 * "query":…,"details":…[,"erased":{…}][,"redacted":N][,"sourceId":…][,"sourceSeq":N],"timestamp":N
 * [,"ingestTs":N,"seq":N,"term":N[,"recordHash":"…","chainHash":"…","fieldCheck":"…"[,"salt":"…"]]]}`.
 */
export interface EventText {
  eventIdText: string;
  sourceIdText: string;
  sourceSeqText: string;
  timestamp: number;
  texts: Record<HashedField, string>;
  erased: Partial<Record<HashedField, string>> | undefined;
  /** Present in a stored event (absent in one not yet ordered). */
  ingestTs?: number;
  seq?: number;
  term?: number;
  /** Present once the event was stored with its chain fields. */
  recordHash?: string;
  chainHash?: string;
  fieldCheck?: string;
  /** The record's salt (record-salt.ts), present on a record of content format v3. */
  salt?: string;
}

const QUOTE = 34;
const SALT_MEMBER = ',"salt":"';
const SALT_TEXT = /^[A-Za-z0-9_.-]+$/;
const BACKSLASH = 92;
const HEX64 = /^[0-9a-f]{64}$/;
const HEX56 = /^[0-9a-f]{56}$/;

/**
 * Reads `json` as the layout above, or returns undefined when it is not exactly that layout
 * (the caller then falls back to parsing it, see {@link eventTextFromValues}).
 */
export function readEventText(json: string): EventText | undefined {
  if (!json.startsWith('{"eventId":')) return undefined;
  let at = 11;
  const idEnd = stringEnd(json, at);
  if (idEnd < 0) return undefined;
  const eventIdText = json.slice(at, idEnd);
  at = idEnd;
  const texts = {} as Record<HashedField, string>;
  for (const name of HASHED_FIELDS) {
    const key = KEYS[name];
    if (!json.startsWith(key, at)) return undefined;
    at += key.length;
    if (name === 'tables') {
      const end = arrayEnd(json, at);
      if (end < 0) return undefined;
      const text = tablesTextOf(json.slice(at, end));
      if (text === undefined) return undefined;
      texts.tables = text;
      at = end;
    } else {
      const end = stringEnd(json, at);
      if (end < 0) return undefined;
      texts[name] = stringValueOf(json, at, end);
      at = end;
    }
  }
  let erased: EventText['erased'];
  if (json.startsWith(',"erased":', at)) {
    at += 10;
    const end = json.indexOf('}', at);
    if (end < 0) return undefined;
    erased = parseErased(json.slice(at, end + 1));
    if (erased === undefined) return undefined;
    at = end + 1;
  }
  // The count of values ingest masked: not hashed (the masked text is), so it is skipped.
  if (json.startsWith(',"redacted":', at)) {
    const end = numberEnd(json, at + 12);
    if (end < 0) return undefined;
    at = end;
  }
  let sourceIdText = '';
  if (json.startsWith(',"sourceId":', at)) {
    at += 12;
    const end = stringEnd(json, at);
    if (end < 0) return undefined;
    sourceIdText = json.slice(at, end);
    at = end;
  }
  let sourceSeqText = '';
  if (json.startsWith(',"sourceSeq":', at)) {
    at += 13;
    const end = numberEnd(json, at);
    if (end < 0) return undefined;
    sourceSeqText = json.slice(at, end);
    at = end;
  }
  if (!json.startsWith(',"timestamp":', at)) return undefined;
  at += 13;
  const tsEnd = numberEnd(json, at);
  if (tsEnd < 0) return undefined;
  const result: EventText = { eventIdText, sourceIdText, sourceSeqText, timestamp: Number(json.slice(at, tsEnd)), texts, erased };
  at = tsEnd;
  if (json.startsWith(',"ingestTs":', at)) {
    const position = readNumbers(json, at, POSITION_KEYS);
    if (position === undefined) return undefined;
    [result.ingestTs, result.seq, result.term] = position.values as [number, number, number];
    at = position.at;
    if (json.startsWith(',"recordHash":"', at)) {
      const recordHash = json.slice(at + 15, at + 79);
      const chainAt = at + 80;
      if (!json.startsWith(',"chainHash":"', chainAt)) return undefined;
      const chainHash = json.slice(chainAt + 14, chainAt + 78);
      const checkAt = chainAt + 79;
      if (!json.startsWith(',"fieldCheck":"', checkAt)) return undefined;
      const fieldCheck = json.slice(checkAt + 15, checkAt + 71);
      if (json.charCodeAt(at + 79) !== QUOTE || json.charCodeAt(chainAt + 78) !== QUOTE || json.charCodeAt(checkAt + 71) !== QUOTE) return undefined;
      if (!HEX64.test(recordHash) || !HEX64.test(chainHash) || !HEX56.test(fieldCheck)) return undefined;
      result.recordHash = recordHash;
      result.chainHash = chainHash;
      result.fieldCheck = fieldCheck;
      at = checkAt + 72;
      if (json.startsWith(SALT_MEMBER, at)) {
        const start = at + SALT_MEMBER.length;
        const end = json.indexOf('"', start);
        if (end < 0) return undefined;
        const salt = json.slice(start, end);
        // A salt's characters need no escape (base64url and dots): anything else is another layout.
        if (!SALT_TEXT.test(salt)) return undefined;
        result.salt = salt;
        at = end + 1;
      }
    }
  }
  if (at !== json.length - 1 || json.charCodeAt(at) !== 125) return undefined;
  return result;
}

/** The canonical record of a stored event text (seq, term and ingestTs must be present). */
export function canonicalOfText(text: EventText): CanonicalRecord | undefined {
  if (text.seq === undefined || text.term === undefined || text.ingestTs === undefined) return undefined;
  return {
    seq: text.seq,
    term: text.term,
    ingestTs: text.ingestTs,
    timestamp: text.timestamp,
    eventIdText: text.eventIdText,
    sourceIdText: text.sourceIdText,
    sourceSeqText: text.sourceSeqText,
    texts: text.texts,
    erased: text.erased,
    salt: text.salt,
  };
}

const KEYS = Object.fromEntries(HASHED_FIELDS.map((name) => [name, `,"${name}":`])) as Record<HashedField, string>;
const POSITION_KEYS = [',"ingestTs":', ',"seq":', ',"term":'] as const;

/** The index just after the JSON string starting at `start`, or -1. */
function stringEnd(json: string, start: number): number {
  if (json.charCodeAt(start) !== QUOTE) return -1;
  let quote = start;
  for (;;) {
    quote = json.indexOf('"', quote + 1);
    if (quote < 0) return -1;
    let backslashes = 0;
    while (json.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if ((backslashes & 1) === 0) return quote + 1;
  }
}

/** The index just after the JSON array of strings starting at `start`, or -1. */
function arrayEnd(json: string, start: number): number {
  if (json.charCodeAt(start) !== 91) return -1;
  let at = start + 1;
  if (json.charCodeAt(at) === 93) return at + 1;
  for (;;) {
    at = stringEnd(json, at);
    if (at < 0) return -1;
    const next = json.charCodeAt(at);
    if (next === 93) return at + 1;
    if (next !== 44) return -1;
    at++;
  }
}

/**
 * The string a JSON string text (`json[start..end)`, quotes included) stands for. Without a
 * backslash it holds no escape, so the value is the text between the quotes.
 */
function stringValueOf(json: string, start: number, end: number): string {
  const value = json.slice(start + 1, end - 1);
  return value.includes('\\') ? (JSON.parse(json.slice(start, end)) as string) : value;
}

/**
 * The canonical tables text (names joined with commas) of a JSON array of strings. Without a
 * backslash no element holds an escape, so `","` only separates elements and the joined list is
 * a plain splice of the text.
 */
function tablesTextOf(array: string): string | undefined {
  if (array === '[]') return '';
  if (!array.includes('\\')) return array.slice(2, -2).replaceAll('","', ',');
  try {
    const tables = JSON.parse(array) as unknown;
    if (!Array.isArray(tables) || !tables.every((t) => typeof t === 'string')) return undefined;
    return tables.join(',');
  } catch {
    return undefined;
  }
}

/** The index after a non-negative integer as JSON.stringify writes it, or -1. */
function numberEnd(json: string, start: number): number {
  let at = start;
  while (at < json.length) {
    const c = json.charCodeAt(at);
    if (c < 48 || c > 57) break;
    at++;
  }
  const digits = at - start;
  if (digits === 0 || digits > 16 || (digits > 1 && json.charCodeAt(start) === 48)) return -1;
  return at;
}

function readNumbers(json: string, start: number, keys: readonly string[]): { values: number[]; at: number } | undefined {
  const values: number[] = [];
  let at = start;
  for (const key of keys) {
    if (!json.startsWith(key, at)) return undefined;
    at += key.length;
    const end = numberEnd(json, at);
    if (end < 0) return undefined;
    values.push(Number(json.slice(at, end)));
    at = end;
  }
  return { values, at };
}

/** An `erased` member: field name → its kept field hash (64 hex). */
export function parseErased(text: string): Partial<Record<HashedField, string>> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const erased: Partial<Record<HashedField, string>> = {};
  for (const [name, digest] of Object.entries(value)) {
    if (!isHashedField(name) || typeof digest !== 'string' || !HEX64.test(digest)) return undefined;
    erased[name] = digest;
  }
  return erased;
}

/** A stored event's values with its chain fields, as {@link composeStoredEvent} writes them. */
export interface StoredEventParts {
  eventId: string;
  userId: string;
  source: string;
  action: string;
  resource: string;
  decision: string;
  tables: readonly string[];
  query: string;
  details: string;
  erased?: Partial<Record<HashedField, string>> | undefined;
  redacted?: number | undefined;
  sourceId?: string | undefined;
  sourceSeq?: number | undefined;
  timestamp: number;
  ingestTs: number;
  seq: number;
  term: number;
  recordHash?: string | undefined;
  chainHash?: string | undefined;
  fieldCheck?: string | undefined;
  salt?: string | undefined;
}

/**
 * The stored layout of an event (the one {@link readEventText} reads), written whole: used
 * where a stored event is rewritten (erasure), and by tests.
 */
export function composeStoredEvent(parts: StoredEventParts): string {
  const object: Record<string, unknown> = {
    eventId: parts.eventId,
    userId: parts.userId,
    source: parts.source,
    action: parts.action,
    resource: parts.resource,
    decision: parts.decision,
    tables: parts.tables,
    query: parts.query,
    details: parts.details,
  };
  if (parts.erased !== undefined && Object.keys(parts.erased).length > 0) object['erased'] = parts.erased;
  if (parts.redacted !== undefined && parts.redacted > 0) object['redacted'] = parts.redacted;
  if (parts.sourceId !== undefined) object['sourceId'] = parts.sourceId;
  if (parts.sourceSeq !== undefined) object['sourceSeq'] = parts.sourceSeq;
  object['timestamp'] = parts.timestamp;
  object['ingestTs'] = parts.ingestTs;
  object['seq'] = parts.seq;
  object['term'] = parts.term;
  if (parts.recordHash !== undefined) {
    object['recordHash'] = parts.recordHash;
    object['chainHash'] = parts.chainHash;
    object['fieldCheck'] = parts.fieldCheck;
    if (parts.salt !== undefined) object['salt'] = parts.salt;
  }
  return JSON.stringify(object);
}
