import type { Level } from 'level';
import { KEY_ONLY_VALUE, encodeUint, prefixEnd } from './event-keys.js';
import { TABLE_NAME_PREFIX, indexPrefixes, tableNameKey, type IndexTerms } from './index-keys.js';

/** Anything that takes puts and deletes: a chained LevelDB batch, or an adapter over an ops array. */
export interface IndexSink {
  put(key: string, value: string): unknown;
  del(key: string): unknown;
}

/**
 * Table names kept in memory, at most, by count and by their UTF-8 bytes (a name may be 4 KiB:
 * the count alone would let ~800 MB of names in). Past either, every event naming a table not
 * held writes its dictionary key again (harmless, a little slower), and a `table` search reads
 * the dictionary from LevelDB (index-reader.ts), rather than memory growing without end.
 */
export const KNOWN_TABLES_MAX = 200_000;
export const KNOWN_TABLES_BYTES_MAX = 16 * 1024 * 1024;

/** The stored JSON's member after the indexed ones (toAuditEvent's order: … tables, query, …). */
const QUERY_MEMBER = ',"query":';
const QUERY_MEMBER_BYTES = Buffer.from(QUERY_MEMBER);

/**
 * The indexed fields of a stored event's JSON. Every stored event begins with the same members
 * in the same order (toAuditEvent's), the indexed ones before `query`, so they are read by a
 * small scanner over the text before `"query"`: the query and details, most of an event's
 * bytes, are never decoded, and nothing is parsed (a parse of the head measured ~5 µs per
 * event, as much as the rest of an append). Any other layout is parsed whole.
 */
export function termsFromJson(json: string | Uint8Array): IndexTerms {
  let head: string | undefined;
  if (typeof json === 'string') {
    const at = json.indexOf(QUERY_MEMBER);
    if (at > 0) head = json.slice(0, at);
  } else {
    const buf = Buffer.isBuffer(json) ? json : Buffer.from(json.buffer, json.byteOffset, json.byteLength);
    const at = buf.indexOf(QUERY_MEMBER_BYTES);
    if (at > 0) head = buf.toString('utf8', 0, at);
  }
  return (head === undefined ? undefined : scanHead(head)) ?? parseWhole(json);
}

const STRING_MEMBERS = ['eventId', 'userId', 'source', 'action', 'resource', 'decision'] as const;

/** Reads `{"eventId":"…","userId":"…",…,"tables":[…]` exactly; undefined for anything else. */
function scanHead(head: string): IndexTerms | undefined {
  const values: string[] = [];
  let at = 0;
  for (const name of STRING_MEMBERS) {
    const member = (at === 0 ? '{"' : ',"') + name + '":';
    if (!head.startsWith(member, at)) return undefined;
    const read = readString(head, at + member.length);
    if (read === undefined) return undefined;
    values.push(read.value);
    at = read.end;
  }
  if (!head.startsWith(',"tables":[', at)) return undefined;
  at += ',"tables":['.length;
  const tables: string[] = [];
  if (head[at] !== ']') {
    for (;;) {
      const read = readString(head, at);
      if (read === undefined) return undefined;
      tables.push(read.value);
      at = read.end;
      if (head[at] === ',') at++;
      else break;
    }
  }
  if (head[at] !== ']' || at + 1 !== head.length) return undefined;
  const [, userId, source, action, , decision] = values as [string, string, string, string, string, string];
  return { userId, source, action, decision, tables };
}

/** The JSON string literal starting at `at` (a quote), and the index after it. */
function readString(text: string, at: number): { value: string; end: number } | undefined {
  if (text[at] !== '"') return undefined;
  let i = at + 1;
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote < 0) return undefined;
    // A quote after an odd run of backslashes is part of the string.
    let slashes = 0;
    while (text[quote - 1 - slashes] === '\\') slashes++;
    if (slashes % 2 === 0) {
      const literal = text.slice(at, quote + 1);
      // Only a string holding an escape needs decoding (rare: JSON.stringify escapes little).
      const value = literal.includes('\\') ? (JSON.parse(literal) as string) : literal.slice(1, -1);
      return { value, end: quote + 1 };
    }
    i = quote + 1;
  }
}

function parseWhole(json: string | Uint8Array): IndexTerms {
  const text = typeof json === 'string' ? json : Buffer.from(json.buffer, json.byteOffset, json.byteLength).toString('utf8');
  const parsed = JSON.parse(text) as Partial<IndexTerms>;
  const terms = { userId: parsed.userId, source: parsed.source, action: parsed.action, decision: parsed.decision, tables: parsed.tables };
  if (
    typeof terms.userId !== 'string' ||
    typeof terms.source !== 'string' ||
    typeof terms.action !== 'string' ||
    typeof terms.decision !== 'string' ||
    !Array.isArray(terms.tables) ||
    !terms.tables.every((t) => typeof t === 'string')
  ) {
    throw new TypeError(`stored event lacks an indexed field (userId, source, action, decision, tables): ${text.slice(0, 300)}`);
  }
  return terms as IndexTerms;
}

/**
 * Writes and deletes the secondary index keys of events, always into the same batch as the
 * event keys themselves (append, replicated apply, prune, truncation), so that the indexes and
 * the events can never disagree, even across a crash. Keeps the table-name dictionary's names
 * in memory so a name is written to it once, not with every event.
 */
export class IndexWriter {
  /** Names whose dictionary key is durably written. */
  readonly #knownTables = new Set<string>();
  /** UTF-8 bytes of the names in #knownTables. */
  #knownTablesBytes = 0;
  #knownTablesComplete = true;

  private constructor() {}

  /** Reads the table-name dictionary, as much of it as the bounds allow. */
  static async load(db: Level<string, string>): Promise<IndexWriter> {
    const writer = new IndexWriter();
    for await (const key of db.keys({ gte: TABLE_NAME_PREFIX, lt: prefixEnd(TABLE_NAME_PREFIX) })) {
      if (!writer.#remember(key.slice(TABLE_NAME_PREFIX.length))) break;
    }
    return writer;
  }

  /** Holds a name in memory if the bounds allow; else the names held are no longer all of them. */
  #remember(table: string): boolean {
    const bytes = Buffer.byteLength(table, 'utf8');
    if (this.#knownTables.size >= KNOWN_TABLES_MAX || this.#knownTablesBytes + bytes > KNOWN_TABLES_BYTES_MAX) {
      this.#knownTablesComplete = false;
      return false;
    }
    this.#knownTables.add(table);
    this.#knownTablesBytes += bytes;
    return true;
  }

  /**
   * Adds the index puts of one event. A name new to the dictionary is counted as known at
   * once, so a search never sees an event whose table it does not know; `newTables` collects
   * those names, to be given to `forget` if the batch is not written.
   */
  put(sink: IndexSink, terms: IndexTerms, timestampMs: number, seq: number, newTables: Set<string>): void {
    const suffix = encodeUint(timestampMs) + encodeUint(seq);
    for (const prefix of indexPrefixes(terms)) sink.put(prefix + suffix, KEY_ONLY_VALUE);
    for (const table of terms.tables) {
      if (this.#knownTables.has(table)) continue;
      sink.put(tableNameKey(table), KEY_ONLY_VALUE);
      newTables.add(table);
      this.#remember(table);
    }
  }

  /**
   * Adds the index deletes of one event. Its dictionary names stay here (a name without events
   * is an empty range): AuditStore drops those of erased and pruned events once no event names
   * them.
   */
  del(sink: IndexSink, terms: IndexTerms, timestampMs: number, seq: number): void {
    const suffix = encodeUint(timestampMs) + encodeUint(seq);
    for (const prefix of indexPrefixes(terms)) sink.del(prefix + suffix);
  }

  /**
   * These names' dictionary keys were deleted (written): no event names them any more. Called
   * only with every write held (an exclusive step of the writer), so no batch in flight can
   * hold an event naming one while it leaves memory.
   */
  dropped(tables: readonly string[]): void {
    this.forget(new Set(tables));
  }

  /** The batch that would have written these dictionary names failed: they are not known after all. */
  forget(newTables: ReadonlySet<string>): void {
    for (const table of newTables) if (this.#knownTables.delete(table)) this.#knownTablesBytes -= Buffer.byteLength(table, 'utf8');
  }

  /** Every table name indexed, when all of them are held in memory; else undefined (read the dictionary). */
  get knownTables(): ReadonlySet<string> | undefined {
    return this.#knownTablesComplete ? this.#knownTables : undefined;
  }
}
