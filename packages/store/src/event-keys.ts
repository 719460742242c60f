/**
 * LevelDB key layout. Every number is fixed-width lower-case hex so that byte order equals
 * numeric order, which is what makes range scans (newest-first search, ingest-order sweep,
 * time-ordered prune) plain iterator ranges.
 *
 *   t!<ts:16><seq:16>  → event JSON          primary copy, ordered by event time then seq
 *   s!<seq:16>         → <ts:16>              ingest order → the primary key
 *   i!<eventId>        → <ts:16><seq:16>      idempotency and lookup by id
 *   m!<name>           → JSON                 replicated metadata (settings, later watermark, term, tables)
 *   l!<name>           → JSON                 this node's own metadata (never replicated)
 *   o!<n:16>           → event JSON           outbox: received here, not yet stored by the leader
 *   x!…                → KEY_ONLY_VALUE       secondary indexes (index-keys.ts)
 *   r!<firstSeq:16>    → {term, received}      term runs: where each run of one term starts in this log
 *   c!<seq:16>         → signed checkpoint    the checkpoint records of the log, by their seq (integrity)
 *   k!<keyId>          → {seq, key}           the public keys registered in the log (integrity)
 *   e!<seq:16>         → KEY_ONLY_VALUE       the erasure records of the log, by their seq
 *   v!<eventId>        → {fields, records}     an eventId erasures named, with the fields they erased and each naming record as
 *                                    [seq, fields] (`["field",…]` where none is known, as earlier versions wrote it): a re-send holding other
 *                                    values there is never stored (erased-ids.ts); kept for good (retention and cuts leave it)
 *   p!<eventId>        → <ts, decimal ms>     an eventId whose tiered event retention deleted, with that event's time: a re-send
 *                                    is looked for in the tier at that time (pruned-ids.ts); kept for good
 *   h!<sourceId>!<from:16> → <to>             one range of sourceSeqs received from a source (source-ledger-keys.ts);
 *   h!<sourceId>!j     → <joined>             its sourceSeqs joined into its ranges that never arrived
 *   g!<sourceId>       → [[from, to], …]      a source's ranges as versions before stored them, moved to h! when opened
 *   y!<day>!<[sourceId, source]> → [received, pruned, tiered]   events per day and source (day-ledger.ts);
 *                                    `["*", null]` is the day's overflow row, past its source bound
 */

/**
 * The value of a key whose presence is all it says (index entries, the erasure index, table
 * names, stale-sketch marks). Never the empty string: classic-level 3.0.0 copies every value
 * it is given into a new buffer but frees the copy only when it is non-empty
 * (`DisposeSliceBuffer` in its binding.cc), so each empty value leaked one minimal malloc
 * chunk, 32 bytes with glibc. At four or five index keys per event that was about 130 MiB of
 * resident memory per million events, on every node, for good. Readers never look at it.
 */
export const KEY_ONLY_VALUE = '.';

/** Largest value a key field can hold: Number.MAX_SAFE_INTEGER fits in 14 hex digits. */
const WIDTH = 16;

const TWO_24 = 0x1000000;
const TWO_48 = TWO_24 * TWO_24;

export function encodeUint(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new TypeError(`key field must be a non-negative safe integer, got ${n}`);
  if (n < TWO_24) return n.toString(16).padStart(WIDTH, '0');
  // In 24-bit parts: V8 turns a small integer to hex directly, but a larger one (every epoch-ms
  // timestamp) through its floating-point path, which measured about 3x slower per key.
  const high = Math.floor(n / TWO_48);
  const rest = n - high * TWO_48;
  const middle = Math.floor(rest / TWO_24);
  const low = rest - middle * TWO_24;
  return high.toString(16).padStart(WIDTH - 12, '0') + middle.toString(16).padStart(6, '0') + low.toString(16).padStart(6, '0');
}

export function decodeUint(hex: string): number {
  return parseInt(hex, 16);
}

export const PREFIX = {
  time: 't!',
  seq: 's!',
  id: 'i!',
  meta: 'm!',
  local: 'l!',
  outbox: 'o!',
  termRun: 'r!',
  checkpoint: 'c!',
  key: 'k!',
  erasure: 'e!',
  erasedId: 'v!',
  prunedId: 'p!',
  copies: 'j!',
} as const;

/** The first key after every key with `prefix` ('!' + 1 = '"'). */
export function prefixEnd(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

export function timeKey(timestampMs: number, seq: number): string {
  return PREFIX.time + encodeUint(timestampMs) + encodeUint(seq);
}

/** The part of a time key after its prefix: `<ts><seq>`, also the value of an id key. */
export function timeKeySuffix(timestampMs: number, seq: number): string {
  return encodeUint(timestampMs) + encodeUint(seq);
}

/** The seq of a time key suffix (`<ts><seq>`, as an id key's value holds it). */
export function seqOfSuffix(suffix: string): number {
  return decodeUint(suffix.slice(WIDTH));
}

export function seqKey(seq: number): string {
  return PREFIX.seq + encodeUint(seq);
}

export function idKey(eventId: string): string {
  return PREFIX.id + eventId;
}

/**
 * The other copies of an eventId the log holds besides the one its id key points at, as a JSON
 * array of time key suffixes (`j!<eventId>`): only for an id held at two seqs or more, which
 * happens where a node applies a re-send its leader stored after deleting the first copy while
 * this node still holds the first.
 */
export function copiesKey(eventId: string): string {
  return PREFIX.copies + eventId;
}

export function metaKey(name: string): string {
  return PREFIX.meta + name;
}

export function localKey(name: string): string {
  return PREFIX.local + name;
}

/** Lower bound (inclusive) of time keys at or after `timestampMs`. */
export function timeLowerBound(timestampMs: number): string {
  return PREFIX.time + encodeUint(timestampMs);
}

/** Upper bound (exclusive) of time keys at or before `timestampMs`. */
export function timeUpperBoundInclusive(timestampMs: number): string {
  // The largest event time has no successor to encode; everything in the family is below it.
  if (timestampMs >= Number.MAX_SAFE_INTEGER) return prefixEnd(PREFIX.time);
  return PREFIX.time + encodeUint(timestampMs + 1);
}

export function checkpointKey(seq: number): string {
  return PREFIX.checkpoint + encodeUint(seq);
}

/** An erasure record's entry in the index of erasure records (KEY_ONLY_VALUE): the tier finds them by seq range. */
export function erasureKey(seq: number): string {
  return PREFIX.erasure + encodeUint(seq);
}

/** An eventId erasures named, with the fields they erased as the value (see the layout above). */
export function erasedIdKey(eventId: string): string {
  return PREFIX.erasedId + eventId;
}

/** An eventId whose tiered event retention deleted, with that event's time as the value (see the layout above). */
export function prunedIdKey(eventId: string): string {
  return PREFIX.prunedId + eventId;
}

export function keyKey(keyId: string): string {
  return PREFIX.key + keyId;
}

export function outboxKey(n: number): string {
  return PREFIX.outbox + encodeUint(n);
}

/** The number in an outbox key (its place in arrival order). */
export function parseOutboxNumber(key: string): number {
  return decodeUint(key.slice(PREFIX.outbox.length));
}

export function parseSeqFromSeqKey(key: string): number {
  return decodeUint(key.slice(PREFIX.seq.length));
}
