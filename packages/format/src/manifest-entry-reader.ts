import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { DataFile, IcebergMapEntry, ManifestEntry, ManifestEntryRef } from './iceberg-manifest.js';

/**
 * Reads `manifest_entry` records whose bytes are laid out exactly as MANIFEST_ENTRY_AVRO_SCHEMA
 * (the writer schema is ours in Parsing Canonical Form), straight into {@link ManifestEntry}
 * objects. avsc's generic path walked the schema through a resolver, built one record object
 * per Avro record, copied every `bytes` value twice (its own pool, then a plain copy) and then
 * rebuilt every entry again: about 80 µs and 10 KB of heap per entry, two thirds of it in the
 * garbage collector, so a 20,000-entry manifest held the event loop for 1.6 s. This reads each
 * field once, in schema order, and gives `bytes` values as views of one copy of their block.
 *
 * What it decodes is exactly what the generic path decodes (a test holds it to that): longs
 * beyond ±(2^53 − 2) are refused as avsc refuses them, ints are read as avsc reads them, strings
 * are UTF-8 as avsc decodes them. A count above the bytes left is refused at once, as the
 * bounded avsc types refuse it (every item of this schema takes a byte, so bytes bound counts).
 */

/** avsc's bound on a long it decodes (`isSafeLong`): beyond it, "potential precision loss". */
const LONG_MAGNITUDE_MAX = 9007199254740990;

/** Our files' `file_format`: kept as one string instead of one per entry. */
const PARQUET = 'PARQUET';

/** A cursor over one block's bytes; `owned` is a copy of the block that `bytes` values view. */
class BlockCursor {
  pos = 0;
  readonly end: number;

  constructor(
    readonly buf: Buffer,
    readonly owned: Uint8Array,
  ) {
    this.end = buf.byteLength;
  }

  /** A zig-zag varint, as avsc's `Tap.readLong` computes it (integers to 28 bits, floats beyond). */
  varint(): number {
    const buf = this.buf;
    let n = 0;
    let k = 0;
    let b: number;
    let more: number;
    do {
      if (this.pos >= this.end) throw new Error('truncated value');
      b = buf[this.pos++]!;
      more = b & 0x80;
      n |= (b & 0x7f) << k;
      k += 7;
    } while (more && k < 28);
    if (!more) return (n >> 1) ^ -(n & 1);
    let f = n;
    let fk = 268435456;
    do {
      if (this.pos >= this.end) throw new Error('truncated value');
      b = buf[this.pos++]!;
      f += (b & 0x7f) * fk;
      fk *= 128;
    } while (b & 0x80);
    // Past ~150 continuation bytes the float overflows to NaN: no count, length or number is
    // one (avsc refuses such a long; a count or length it took as NaN read as nothing).
    if (Number.isNaN(f)) throw new Error('potential precision loss');
    return (f % 2 ? -(f + 1) : f) / 2;
  }

  long(): number {
    const n = this.varint();
    // Written so NaN (a varint of ~150 continuation bytes) is refused too, as avsc refuses it.
    if (!(n >= -LONG_MAGNITUDE_MAX && n <= LONG_MAGNITUDE_MAX)) throw new Error('potential precision loss');
    return n;
  }

  /** Branch 1 of a `["null", T]` union: true, branch 0: false. */
  present(): boolean {
    const index = this.varint();
    if (index === 0) return false;
    if (index === 1) return true;
    throw new Error(`invalid union index: ${index}`);
  }

  /**
   * The length of a length-prefixed value, checked against the bytes left; the value starts at
   * `pos` (the caller moves past it). No object is made per value: this runs ~60 times an entry.
   */
  length(): number {
    const length = this.varint();
    if (length < 0) throw new Error(`negative length ${length}`);
    if (this.pos + length > this.end) throw new Error('truncated value');
    return length;
  }

  string(): string {
    const length = this.length();
    const start = this.pos;
    this.pos += length;
    return this.buf.toString('utf8', start, start + length);
  }

  /** A string that is most often `common` (ASCII): compared in place, so equal ones share one string. */
  commonString(common: string): string {
    const length = this.length();
    const start = this.pos;
    this.pos += length;
    if (length === common.length && sameAscii(this.buf, start, common)) return common;
    return this.buf.toString('utf8', start, start + length);
  }

  /** Moves past a length-prefixed value (string or bytes), checked as reading it would be. */
  skip(): void {
    // Not `this.pos += this.length()`: that adds to `pos` as it was before the length was read.
    const length = this.length();
    this.pos += length;
  }

  /** A `bytes` value as a view of the block's copy: no allocation beyond the view. */
  bytes(): Uint8Array {
    const length = this.length();
    const start = this.pos;
    this.pos += length;
    return new Uint8Array(this.owned.buffer, this.owned.byteOffset + start, length);
  }

  /**
   * The item count of the next array block (0: the array ends), its byte size skipped where the
   * writer gave one; a count above the bytes left is refused (every item takes a byte).
   */
  blockCount(): number {
    let n = this.varint();
    if (n === 0) return 0;
    if (n < 0) {
      n = -n;
      this.varint();
    }
    const left = this.end - this.pos;
    // `!(n <= left)`: a NaN count is refused too.
    if (!(n <= left)) throw new Error(`a block declares ${n} array items with ${Math.max(0, left)} bytes left`);
    return n;
  }
}

/** True when the bytes at `start` are the ASCII string `text` (whose length the caller checked). */
function sameAscii(buf: Buffer, start: number, text: string): boolean {
  for (let i = 0; i < text.length; i++) if (buf[start + i] !== text.charCodeAt(i)) return false;
  return true;
}

function optionalLong(cursor: BlockCursor): number | null {
  return cursor.present() ? cursor.long() : null;
}

function optionalInt(cursor: BlockCursor): number | null {
  return cursor.present() ? cursor.varint() : null;
}

/**
 * The items of an array as `item` reads them. The first block's count sizes the array exactly
 * (ours have one block): grown by `push` from empty, a 21-item array kept 41 slots.
 */
function readArray<T>(cursor: BlockCursor, item: (cursor: BlockCursor) => T): T[] {
  let n = cursor.blockCount();
  if (n === 0) return [];
  const values = new Array<T>(n);
  for (let i = 0; i < n; i++) values[i] = item(cursor);
  while ((n = cursor.blockCount()) > 0) {
    for (let i = 0; i < n; i++) values.push(item(cursor));
  }
  return values;
}

const longEntry = (cursor: BlockCursor): IcebergMapEntry<number> => {
  const key = cursor.varint();
  return { key, value: cursor.long() };
};

const bytesEntry = (cursor: BlockCursor): IcebergMapEntry<Uint8Array> => {
  const key = cursor.varint();
  return { key, value: cursor.bytes() };
};

/** `["null", array<T>]`. */
function optionalArray<T>(cursor: BlockCursor, item: (cursor: BlockCursor) => T): T[] | null {
  return cursor.present() ? readArray(cursor, item) : null;
}

const readLong = (cursor: BlockCursor): number => cursor.long();
const readInt = (cursor: BlockCursor): number => cursor.varint();

/** The `r2` record, its fields in schema order (the object's keys in the same order as the generic path's). */
function readDataFile(cursor: BlockCursor): DataFile {
  const content = cursor.varint();
  const file_path = cursor.string();
  const file_format = cursor.commonString(PARQUET);
  const event_time_day = optionalInt(cursor);
  const record_count = cursor.long();
  const file_size_in_bytes = cursor.long();
  const column_sizes = optionalArray(cursor, longEntry);
  const value_counts = optionalArray(cursor, longEntry);
  const null_value_counts = optionalArray(cursor, longEntry);
  const nan_value_counts = optionalArray(cursor, longEntry);
  const lower_bounds = optionalArray(cursor, bytesEntry);
  const upper_bounds = optionalArray(cursor, bytesEntry);
  const key_metadata = cursor.present() ? cursor.bytes() : null;
  const split_offsets = optionalArray(cursor, readLong);
  const equality_ids = optionalArray(cursor, readInt);
  const sort_order_id = optionalInt(cursor);
  const referenced_data_file = cursor.present() ? cursor.string() : null;
  return {
    content,
    file_path,
    file_format,
    partition: { event_time_day },
    record_count,
    file_size_in_bytes,
    column_sizes,
    value_counts,
    null_value_counts,
    nan_value_counts,
    lower_bounds,
    upper_bounds,
    key_metadata,
    split_offsets,
    equality_ids,
    sort_order_id,
    referenced_data_file,
  };
}

/**
 * The `r2` record read and checked as {@link readDataFile} reads it, keeping only `file_path`
 * (the fields in the same order: a change to one goes with a change to the other; the tests
 * hold the two to the same bytes).
 */
function readFilePathOnly(cursor: BlockCursor): Pick<DataFile, 'file_path'> {
  cursor.varint();
  const file_path = cursor.string();
  cursor.skip();
  optionalInt(cursor);
  cursor.long();
  cursor.long();
  for (let map = 0; map < 4; map++) skipOptionalArray(cursor, skipLongEntry);
  for (let map = 0; map < 2; map++) skipOptionalArray(cursor, skipBytesEntry);
  if (cursor.present()) cursor.skip();
  skipOptionalArray(cursor, readLong);
  skipOptionalArray(cursor, readInt);
  optionalInt(cursor);
  if (cursor.present()) cursor.skip();
  return { file_path };
}

/** `["null", array<T>]` read item by item (so checked as reading it is), nothing kept. */
function skipOptionalArray(cursor: BlockCursor, item: (cursor: BlockCursor) => unknown): void {
  if (!cursor.present()) return;
  for (let n = cursor.blockCount(); n > 0; n = cursor.blockCount()) {
    for (let i = 0; i < n; i++) item(cursor);
  }
}

const skipLongEntry = (cursor: BlockCursor): void => {
  cursor.varint();
  cursor.long();
};

const skipBytesEntry = (cursor: BlockCursor): void => {
  cursor.varint();
  cursor.skip();
};

/** The fields of `manifest_entry` before `data_file`, the status checked. */
function readEntryHead(cursor: BlockCursor): Omit<ManifestEntry, 'data_file'> {
  const status = cursor.varint();
  if (status !== 0 && status !== 1 && status !== 2) throw new AuditError(AuditErrorCode.TABLE_INVALID, `Iceberg manifest entry has status ${status}`);
  const snapshot_id = optionalLong(cursor);
  const sequence_number = optionalLong(cursor);
  const file_sequence_number = optionalLong(cursor);
  return { status, snapshot_id, sequence_number, file_sequence_number };
}

function readEntry(cursor: BlockCursor): ManifestEntry {
  const { status, snapshot_id, sequence_number, file_sequence_number } = readEntryHead(cursor);
  return { status, snapshot_id, sequence_number, file_sequence_number, data_file: readDataFile(cursor) };
}

function readEntryRef(cursor: BlockCursor): ManifestEntryRef {
  const { status, snapshot_id, sequence_number, file_sequence_number } = readEntryHead(cursor);
  return { status, snapshot_id, sequence_number, file_sequence_number, data_file: readFilePathOnly(cursor) };
}

/**
 * The `count` entries of one block, appended to `into`. The block is copied once so that the
 * entries' `bytes` values view that copy: a kept entry holds its block (~64 KiB as we write
 * them), never the whole manifest. Throws Error (the caller codes it) for bytes that do
 * not hold exactly `count` entries, AuditError AUDIT_TABLE_INVALID for an entry of an unknown
 * status (as the generic path does).
 */
export function readManifestEntryBlock(data: Buffer, count: number, into: ManifestEntry[]): void {
  const owned = new Uint8Array(data.byteLength);
  owned.set(data);
  readBlock(new BlockCursor(data, owned), count, readEntry, into);
}

/**
 * As {@link readManifestEntryBlock}, each entry read and checked whole but kept only as a
 * {@link ManifestEntryRef}: no metrics, no bounds, no copy of the block.
 */
export function readManifestRefBlock(data: Buffer, count: number, into: ManifestEntryRef[]): void {
  readBlock(new BlockCursor(data, data), count, readEntryRef, into);
}

function readBlock<T>(cursor: BlockCursor, count: number, read: (cursor: BlockCursor) => T, into: T[]): void {
  for (let i = 0; i < count; i++) into.push(read(cursor));
  if (cursor.pos !== cursor.end) throw new Error('block longer than its records');
}
