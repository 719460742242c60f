import { READ_ACTION } from '@auditlake/model';
import { encodeUint } from './event-keys.js';

/**
 * Key layout of the secondary indexes: one key-only entry per (indexed field value, event),
 * ending in the event's time key suffix, so the keys of one value are ordered by event time
 * then seq, exactly as the time keys are. A filter on that value plus a time window is one
 * range scan, read in reverse for newest first.
 *
 *   x!<field><len:4><value><ts:16><seq:16>  → KEY_ONLY_VALUE   one per indexed value of the event
 *   x!T<table>                              → KEY_ONLY_VALUE   every table name ever indexed (a dictionary)
 *
 * `len` is the value's length in UTF-16 units, four hex digits, so a value can never be read
 * as a prefix of a longer one (`ann` + a timestamp against `anna`…): the prefix of one value
 * holds that value's keys and nothing else, whatever characters values contain.
 */
export const INDEX_PREFIX = 'x!';

/** The indexed fields and the one-letter tag each has in a key. */
export const INDEX_FIELD = {
  user: 'u',
  /** The source (engine), lower-cased as the engine filter compares it. */
  engine: 'e',
  /** Each table an event names (exact name). */
  table: 't',
  /** DENY, or '' for none (not ALLOW: see UNINDEXED_DECISION). */
  decision: 'd',
  /** Action kind 'w': every action but a read (data:Select), which is not indexed. */
  kind: 'k',
} as const;

export type IndexField = keyof typeof INDEX_FIELD;

/** Prefix of the table-name dictionary. */
export const TABLE_NAME_PREFIX = INDEX_PREFIX + 'T';

/** Longest indexed value: four hex digits of length. Fields are capped far below this at ingest. */
const VALUE_LENGTH_MAX = 0xffff;

/** Hex digits of a time key suffix (`<ts:16><seq:16>`). */
export const SUFFIX_LENGTH = 32;

/** The fields of an event the indexes are built from. */
export interface IndexTerms {
  userId: string;
  source: string;
  action: string;
  decision: string;
  tables: readonly string[];
}

/** The prefix of every key of one (field, value). */
export function indexValuePrefix(field: IndexField, value: string): string {
  if (value.length > VALUE_LENGTH_MAX) throw new TypeError(`an indexed ${field} value is at most ${VALUE_LENGTH_MAX} characters, got ${value.length}`);
  return INDEX_PREFIX + INDEX_FIELD[field] + value.length.toString(16).padStart(4, '0') + value;
}

/** The action-kind value of an action, as the `action=read|write` filter splits them. */
export function actionKind(action: string): 'r' | 'w' {
  return action === READ_ACTION ? 'r' : 'w';
}

/**
 * The decision and the action kind most events have are not indexed: in an audit log nearly
 * every access is an allowed read, so `decision=ALLOW` or `action=read` keeps most of any time
 * window, where the time scan is as fast as an index could be, and their keys would be two of
 * an event's six or seven index keys, each paid at ingest. Denials, events without a decision
 * and writes are the ones an investigator filters for, and they are indexed.
 */
export const UNINDEXED_DECISION = 'ALLOW';

/**
 * The value prefixes an event is indexed under (each once: an event naming one table twice is
 * indexed under it once). Every key of the event is one of these plus its time key suffix.
 */
export function indexPrefixes(terms: IndexTerms): string[] {
  const prefixes = [
    indexValuePrefix('user', terms.userId),
    indexValuePrefix('engine', terms.source.toLowerCase()),
  ];
  if (terms.decision !== UNINDEXED_DECISION) prefixes.push(indexValuePrefix('decision', terms.decision));
  if (actionKind(terms.action) === 'w') prefixes.push(indexValuePrefix('kind', 'w'));
  const tables = new Set(terms.tables);
  for (const table of tables) prefixes.push(indexValuePrefix('table', table));
  return prefixes;
}

export function tableNameKey(table: string): string {
  return TABLE_NAME_PREFIX + table;
}

/** The key range of `prefix`'s keys whose event time lies in [fromMs, toMs] (either open). */
export function indexRange(prefix: string, fromMs: number | undefined, toMs: number | undefined): { gte: string; lt: string } {
  return {
    gte: fromMs === undefined ? prefix : prefix + encodeUint(fromMs),
    // After the prefix come only hex digits, all below 'g'. (The largest event time has no
    // successor to encode.)
    lt: toMs === undefined || toMs >= Number.MAX_SAFE_INTEGER ? prefix + 'g' : prefix + encodeUint(toMs + 1),
  };
}

/** The `<ts><seq>` suffix an index key ends with (the time key without its prefix). */
export function suffixOf(indexKey: string): string {
  return indexKey.slice(indexKey.length - SUFFIX_LENGTH);
}

/** The event time encoded in a time key suffix. */
export function suffixTimeMs(suffix: string): number {
  return parseInt(suffix.slice(0, SUFFIX_LENGTH / 2), 16);
}
