import { encodeUint } from './event-keys.js';

/**
 * Where the completeness ledger stores each source's ranges: one key per range, so an event
 * writes one small value (or a few, when it joins ranges), whatever the number of ranges the
 * source holds.
 *
 *   h!<sourceId>!<from:16 hex> → <to>        one received range, both ends included (decimal)
 *   h!<sourceId>!j             → <joined>    sourceSeqs joined into the ranges that never arrived
 *   h!<sourceId>!t             → <day>       the ledger's number of the day of the source's newest
 *                                            event (source-ledger.ts, LEDGER_SOURCE_IDLE_DAYS)
 *
 * A sourceId may hold any character, `!` included: a key is read from its end (a range key ends
 * in `!` and 16 hex digits, the joined count's in `!j`, the day's in `!t`, which no range key does).
 */
export const SOURCE_RANGE_PREFIX = 'h!';

/**
 * Where versions before stored a source's ranges, all in one value (rewritten with every event):
 * `g!<sourceId>` → `[[from, to], …]`, or `{"ranges": [[from, to], …], "received": N}` once holes
 * were joined in. Read once, when such a store is opened, and moved to SOURCE_RANGE_PREFIX.
 */
export const LEGACY_SOURCE_LEDGER_PREFIX = 'g!';

const JOINED_SUFFIX = '!j';
const LAST_DAY_SUFFIX = '!t';
/** `!` and the 16 hex digits of a range start. */
const RANGE_SUFFIX_LENGTH = 17;
const RANGE_SUFFIX = /![0-9a-f]{16}$/;

export function sourceRangeKey(sourceId: string, from: number): string {
  return `${SOURCE_RANGE_PREFIX}${sourceId}!${encodeUint(from)}`;
}

export function sourceJoinedKey(sourceId: string): string {
  return SOURCE_RANGE_PREFIX + sourceId + JOINED_SUFFIX;
}

export function sourceLastDayKey(sourceId: string): string {
  return SOURCE_RANGE_PREFIX + sourceId + LAST_DAY_SUFFIX;
}

/** What a key under SOURCE_RANGE_PREFIX holds; undefined for a key of no known form. */
export function parseSourceRangeKey(key: string): { sourceId: string; from: number } | { sourceId: string; joined: true } | { sourceId: string; lastDay: true } | undefined {
  if (!key.startsWith(SOURCE_RANGE_PREFIX)) return undefined;
  if (RANGE_SUFFIX.test(key)) {
    return { sourceId: key.slice(SOURCE_RANGE_PREFIX.length, -RANGE_SUFFIX_LENGTH), from: parseInt(key.slice(-16), 16) };
  }
  if (key.endsWith(JOINED_SUFFIX)) return { sourceId: key.slice(SOURCE_RANGE_PREFIX.length, -JOINED_SUFFIX.length), joined: true };
  if (key.endsWith(LAST_DAY_SUFFIX)) return { sourceId: key.slice(SOURCE_RANGE_PREFIX.length, -LAST_DAY_SUFFIX.length), lastDay: true };
  return undefined;
}
