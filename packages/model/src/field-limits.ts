/**
 * Per-field size limits, in UTF-8 bytes. A field over its limit is stored truncated with a
 * visible marker rather than refused: losing an audit event is worse than shortening it.
 * `eventId` is the exception (see event-validation.ts): cutting an id would break idempotency.
 */
export const FIELD_LIMIT_BYTES = {
  userId: 1024,
  source: 256,
  action: 256,
  resource: 4096,
  query: 64 * 1024,
  details: 16 * 1024,
  table: 4096,
} as const;

/** At most this many entries of `tables` are kept; the rest are summarised in a marker entry. */
export const TABLES_COUNT_MAX = 1000;

/**
 * At most this many UTF-8 bytes of `tables` in all are kept (the entries that fit, in order; the
 * rest summarised in the marker entry). Without it, 1,000 names of 4 KiB made one event 4 MB,
 * and a page of 200 such events (planted with an ingest token) was an 816 MB answer: four at
 * once ran the node out of heap. A query names far fewer: this is as much as `query` holds.
 */
export const TABLES_BYTES_MAX = 64 * 1024;

/** Longest accepted client-supplied eventId, in characters. */
export const EVENT_ID_LENGTH_MAX = 128;

/** Longest accepted sourceId, in characters (refused beyond, like eventId: cut ids would merge sources). */
export const SOURCE_ID_LENGTH_MAX = 256;

/**
 * Highest accepted sourceSeq (10^11 − 1; refused beyond). A source's count starts near 0 and
 * goes up by one an event: 10^11 is three years at a million events a second. One wild value
 * (2^53 − 1) would read as ~9·10^15 missing sourceSeqs for that source for ever, and with this
 * bound the ledger's totals over its 10,000 tracked sources stay below 2^53, exact.
 */
export const SOURCE_SEQ_MAX = 99_999_999_999;

/** The latest event time accepted: 9999-12-31T23:59:59.999Z, the last instant with a four-digit year. */
export const EVENT_TIME_MAX_MS = 253_402_300_799_999;

/**
 * How far ahead of the receiving node's clock an ingested event's time may be. Retention deletes
 * by event time, so an event dated years ahead would stay for as long as that — and, mixed with
 * current events, hold retention's record of deleted seqs at its bound (every one a hole) — while
 * no event can have happened later than now: a day covers any sender's clock skew.
 */
export const EVENT_TIME_AHEAD_MAX_MS = 86_400_000;

/** Most events one ingest request may carry. */
export const EVENTS_PER_REQUEST_MAX = 10_000;

/** The visible marker appended to a truncated field. */
export function truncationMarker(originalBytes: number): string {
  return `…[truncated by auditlake: ${originalBytes} bytes]`;
}

/**
 * Returns `value` unchanged when it fits in `limitBytes`, else a prefix cut on a character
 * boundary followed by the marker, the whole still within `limitBytes`.
 */
export function truncateToBytes(value: string, limitBytes: number): string {
  // Fast path: a string of n UTF-16 units is at most 3n UTF-8 bytes.
  if (value.length * 3 <= limitBytes) return value;
  const originalBytes = Buffer.byteLength(value, 'utf8');
  if (originalBytes <= limitBytes) return value;
  const bytes = Buffer.from(value, 'utf8');
  const markerText = truncationMarker(originalBytes);
  // A limit too small for the marker gets a bare cut: the limit is the promise that matters.
  const marker = Buffer.byteLength(markerText, 'utf8') <= limitBytes ? markerText : '';
  let end = limitBytes - Buffer.byteLength(marker, 'utf8');
  // Step back over UTF-8 continuation bytes so no character is split.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8') + marker;
}

/** The entry that stands for the tables past the bounds (TABLES_COUNT_MAX, TABLES_BYTES_MAX). */
function moreTablesMarker(count: number): string {
  return `…[truncated by auditlake: ${count} more tables]`;
}

/** The marker as boundedTables writes it: a count of at most 15 digits (a safe integer). */
const MORE_TABLES_MARKER = /^…\[truncated by auditlake: (\d{1,15}) more tables\]$/;

/**
 * `tables` as an event keeps them: each entry cut to FIELD_LIMIT_BYTES.table, the entries that
 * fit TABLES_COUNT_MAX and TABLES_BYTES_MAX in order, and one marker entry counting the rest.
 * A list already so bounded (its marker last) is kept as it is, so a sender that bounds its
 * events first (`auditlake import`, whose requests must stay under the node's body limit) and
 * the node that bounds them again store the same list.
 */
export function boundedTables(tables: readonly string[]): string[] {
  const last = tables.at(-1);
  // Only a marker boundedTables could have written: a count no longer than that, in an entry that
  // fits a table name. Any other last entry is a name like the rest, cut and counted (review: a
  // marker-shaped entry of 7 million digits was kept whole, past every bound, and the store
  // refused to index it, failing the whole request every time).
  const markedCount = last === undefined ? undefined : MORE_TABLES_MARKER.exec(last)?.[1];
  const marked = markedCount !== undefined;
  const entries = marked ? tables.slice(0, -1) : tables;
  const kept: string[] = [];
  let bytes = 0;
  for (let i = 0; i < entries.length; i++) {
    // The first that does not fit ends what is kept.
    if (kept.length < i || i >= TABLES_COUNT_MAX) break;
    const table = truncateToBytes(entries[i] as string, FIELD_LIMIT_BYTES.table);
    const size = Buffer.byteLength(table, 'utf8');
    if (bytes + size > TABLES_BYTES_MAX) break;
    bytes += size;
    kept.push(table);
  }
  if (kept.length < entries.length) kept.push(moreTablesMarker(entries.length - kept.length + (marked ? Number(markedCount) : 0)));
  else if (marked) kept.push(last as string);
  return kept;
}
