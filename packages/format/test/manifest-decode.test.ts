// Goal: a manifest written with our schema is read by the fast reader (manifest-entry-reader.ts) into exactly what avsc's generic path reads from the same record bytes, and its refs into the projection of that — for any entry, arrays in several blocks, and hostile bytes (refused alike, at once); decoding (whole, or entry by entry) and encoding in slices give the event loop turns between Avro blocks; decoded `bytes` values view a copy of their block, never the caller's bytes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AVRO_BLOCK_BYTES_TARGET, avroRecordSchema, openAvroContainer } from '../src/avro-container.js';
import { avroFile, long, text } from './avro-bytes.js';
import { decodeManifest, decodeManifestInSlices, decodeManifestRefsInSlices, encodeManifest, encodeManifestInSlices, visitManifestInSlices, MANIFEST_ENTRY_AVRO_SCHEMA, type DataFile, type ManifestEntry, type ManifestEntryRef } from '../src/index.js';

/** A manifest container with `schema` as its writer schema and one block of `records` (each its bytes). */
function container(schema: unknown, records: readonly number[][]): Uint8Array {
  return avroFile(schema, records.length, records.flat());
}

/**
 * Our schema with one more field at the end of `manifest_entry`: no longer ours in canonical
 * form, so the generic path (avsc, resolving and skipping the field) reads it. A record of it
 * is a record of ours followed by that field's null (one byte, 0).
 */
const FOREIGN_SCHEMA = { ...MANIFEST_ENTRY_AVRO_SCHEMA, fields: [...(MANIFEST_ENTRY_AVRO_SCHEMA['fields'] as unknown[]), { name: 'extra', type: ['null', 'long'], default: null }] };

/** What each path reads from the same record bytes: the fast reader (our schema) and avsc (the foreign one). */
function bothPaths(records: readonly number[][]): { fast: () => ManifestEntry[]; generic: () => ManifestEntry[] } {
  return {
    fast: () => decodeManifest(container(MANIFEST_ENTRY_AVRO_SCHEMA, records)).entries,
    generic: () => decodeManifest(container(FOREIGN_SCHEMA, records.map((record) => [...record, 0]))).entries,
  };
}

/** What refs keep of an entry. */
function refOf(entry: ManifestEntry): ManifestEntryRef {
  return { status: entry.status, snapshot_id: entry.snapshot_id, sequence_number: entry.sequence_number, file_sequence_number: entry.file_sequence_number, data_file: { file_path: entry.data_file.file_path } };
}

/** The refs each path reads from the same record bytes, as {@link bothPaths}. */
function bothRefPaths(records: readonly number[][]): { fast: () => Promise<ManifestEntryRef[]>; generic: () => Promise<ManifestEntryRef[]> } {
  return {
    fast: async () => (await decodeManifestRefsInSlices(container(MANIFEST_ENTRY_AVRO_SCHEMA, records))).entries,
    generic: async () => (await decodeManifestRefsInSlices(container(FOREIGN_SCHEMA, records.map((record) => [...record, 0])))).entries,
  };
}

/** The fields of a `manifest_entry` record in schema order, each its bytes; `over` replaces some. */
function recordBytes(over: Record<string, number[]> = {}): number[] {
  const fields: Array<[string, number[]]> = [
    ['status', long(1)],
    ['snapshot_id', [...long(1), ...long(77)]],
    ['sequence_number', [0]],
    ['file_sequence_number', [0]],
    ['content', long(0)],
    ['file_path', text('s3://lake/wh/t/data/event_time_day=2026-05-01/f.parquet')],
    ['file_format', text('PARQUET')],
    ['partition', [...long(1), ...long(20_574)]],
    ['record_count', long(5)],
    ['file_size_in_bytes', long(1234)],
    ['column_sizes', [0]],
    ['value_counts', [0]],
    ['null_value_counts', [0]],
    ['nan_value_counts', [0]],
    ['lower_bounds', [0]],
    ['upper_bounds', [0]],
    ['key_metadata', [0]],
    ['split_offsets', [0]],
    ['equality_ids', [0]],
    ['sort_order_id', [0]],
    ['referenced_data_file', [0]],
  ];
  return fields.flatMap(([name, bytes]) => over[name] ?? bytes);
}

const ENTRY_TYPE = avroRecordSchema(MANIFEST_ENTRY_AVRO_SCHEMA).type;

/** A record's bytes as avsc encodes the entry (bytes values as Buffers, as avsc wants them). */
function encodedRecord(entry: ManifestEntry): number[] {
  const file = entry.data_file;
  const buffers = (map: DataFile['lower_bounds']) => map?.map(({ key, value }) => ({ key, value: Buffer.from(value) })) ?? null;
  const record = { ...entry, data_file: { ...file, lower_bounds: buffers(file.lower_bounds), upper_bounds: buffers(file.upper_bounds), key_metadata: file.key_metadata === null ? null : Buffer.from(file.key_metadata) } };
  return [...ENTRY_TYPE.toBuffer(record)];
}

// Longs as avsc writes them exactly (it refuses beyond 2^53 − 2, and below −2^52 its encoder
// rounds: it computes 2·|n| − 1 in floating point); ints as 32-bit.
const anyLong = fc.oneof(fc.integer(), fc.constantFrom(0, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 - 2, -(2 ** 52)), fc.integer({ min: -(2 ** 52), max: 2 ** 53 - 2 }));
const anyInt = fc.integer();
const anyBytes = fc.uint8Array({ maxLength: 24 });
const longMap = fc.option(fc.array(fc.record({ key: anyInt, value: anyLong }), { maxLength: 25 }));
const bytesMap = fc.option(fc.array(fc.record({ key: anyInt, value: anyBytes }), { maxLength: 25 }));
const anyDataFile: fc.Arbitrary<DataFile> = fc.record({
  content: anyInt,
  file_path: fc.string({ unit: 'binary', maxLength: 120 }),
  file_format: fc.constantFrom('PARQUET', 'parquet', 'PARQUEX', 'AVRO', ''),
  partition: fc.record({ event_time_day: fc.option(anyInt) }),
  record_count: anyLong,
  file_size_in_bytes: anyLong,
  column_sizes: longMap,
  value_counts: longMap,
  null_value_counts: longMap,
  nan_value_counts: longMap,
  lower_bounds: bytesMap,
  upper_bounds: bytesMap,
  key_metadata: fc.option(anyBytes),
  split_offsets: fc.option(fc.array(anyLong, { maxLength: 10 })),
  equality_ids: fc.option(fc.array(anyInt, { maxLength: 5 })),
  sort_order_id: fc.option(anyInt),
  referenced_data_file: fc.option(fc.string({ maxLength: 40 })),
});
const anyEntry: fc.Arbitrary<ManifestEntry> = fc.record({
  status: fc.constantFrom(0 as const, 1 as const, 2 as const),
  snapshot_id: fc.option(anyLong),
  sequence_number: fc.option(anyLong),
  file_sequence_number: fc.option(anyLong),
  data_file: anyDataFile,
});

describe('the fast manifest reader', () => {
  it('is chosen for our writer schema only, and reads any entry exactly as avsc does', () => {
    const reader = avroRecordSchema(MANIFEST_ENTRY_AVRO_SCHEMA).type;
    expect(openAvroContainer(container(MANIFEST_ENTRY_AVRO_SCHEMA, []), reader, 'x').writerIsReader).toBe(true);
    expect(openAvroContainer(container(FOREIGN_SCHEMA, []), reader, 'x').writerIsReader).toBe(false);
    fc.assert(
      fc.property(fc.array(anyEntry, { minLength: 1, maxLength: 4 }), (entries) => {
        const { fast, generic } = bothPaths(entries.map(encodedRecord));
        const read = fast();
        expect(read).toEqual(generic());
        // And what was written, strings aside (a lone surrogate is written as U+FFFD).
        expect(read.map((entry) => ({ ...entry, data_file: { ...entry.data_file, file_path: '', referenced_data_file: null } }))).toEqual(
          entries.map((entry) => ({ ...entry, data_file: { ...entry.data_file, file_path: '', referenced_data_file: null } })),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('reads refs of any entry as the projection of what it reads whole, on both paths', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(anyEntry, { minLength: 1, maxLength: 4 }), async (entries) => {
        const records = entries.map(encodedRecord);
        const whole = bothPaths(records).fast().map(refOf);
        const { fast, generic } = bothRefPaths(records);
        expect(await fast()).toEqual(whole);
        expect(await generic()).toEqual(whole);
      }),
      { numRuns: 150 },
    );
  });

  it('reads arrays in several blocks, one given with its byte size (as Java may write them), as avsc does', () => {
    const item = (key: number, value: number) => [...long(key), ...long(value)];
    const sizes = [...long(1), ...long(2), ...item(1, 10), ...item(2, 20), ...long(-1), ...long(item(3, 30).length), ...item(3, 30), 0];
    const offsets = [...long(1), ...long(1), ...long(4), ...long(-2), ...long(4), ...long(300), ...long(900), 0];
    const { fast, generic } = bothPaths([recordBytes({ column_sizes: sizes, split_offsets: offsets })]);
    expect(fast()).toEqual(generic());
    expect(fast()[0]?.data_file).toMatchObject({ column_sizes: [{ key: 1, value: 10 }, { key: 2, value: 20 }, { key: 3, value: 30 }], split_offsets: [4, 300, 900] });
  });

  it('refuses what the generic path refuses, at once: counts beyond the bytes left, longs beyond 2^53 (NaN too), bad union indexes, unknown statuses, truncated or overlong records', async () => {
    const hostile: Array<[string, number[][], RegExp]> = [
      ['a count of 2^40 map entries', [recordBytes({ column_sizes: [...long(1), ...long(2n ** 40n), ...long(1), ...long(2), 0] })], /a block declares 1099511627776 array items/],
      ['a record count beyond 2^53', [recordBytes({ record_count: long(2n ** 53n) })], /potential precision loss/],
      ['a union index of 2', [recordBytes({ snapshot_id: long(2) })], /union/],
      ['status 3', [recordBytes({ status: long(3) })], /Iceberg manifest entry has status 3/],
      ['a string running past the block', [recordBytes({ referenced_data_file: [...long(1), ...long(1000), 65] })], /not readable/],
      ['a count of 2^40 bounds', [recordBytes({ upper_bounds: [...long(1), ...long(2n ** 40n), ...long(1), ...text('x'), 0] })], /a block declares 1099511627776 array items/],
      ['a split offset beyond 2^53', [recordBytes({ split_offsets: [...long(1), ...long(1), ...long(2n ** 53n), 0] })], /potential precision loss/],
      // A varint long enough that the float reading it overflows to NaN.
      ['a sequence number of 160 continuation bytes', [recordBytes({ file_sequence_number: [...long(1), ...new Array<number>(160).fill(0x80), 0] })], /potential precision loss/],
    ];
    for (const [what, records, message] of hostile) {
      const refused = expect.objectContaining({ code: 'AUDIT_TABLE_INVALID', message: expect.stringMatching(message) as unknown });
      const { fast, generic } = bothPaths(records);
      expect(fast, what).toThrow(refused);
      expect(generic, what).toThrow(refused);
      // Refs keep less but check as much: the same refusals.
      const refs = bothRefPaths(records);
      await expect(refs.fast(), what).rejects.toThrow(refused);
      await expect(refs.generic(), what).rejects.toThrow(refused);
    }
    // A block holding more bytes than its records.
    const overlong = container(MANIFEST_ENTRY_AVRO_SCHEMA, [[...recordBytes(), 0]]);
    expect(() => decodeManifest(overlong)).toThrow(expect.objectContaining({ code: 'AUDIT_TABLE_INVALID', message: expect.stringMatching(/block longer than its records/) as unknown }));
  });
});

/** An entry of some 700 bytes, like a data file of ours with 21 columns of metrics. */
function bulkyEntry(index: number): ManifestEntry {
  const columns = Array.from({ length: 21 }, (_, i) => i + 1);
  const bound = (i: number) => Uint8Array.from({ length: 8 + (i % 9) }, (_, b) => (index + i + b) & 0xff);
  return {
    status: 0,
    snapshot_id: 1_000_000 + index,
    sequence_number: 1 + index,
    file_sequence_number: 1 + index,
    data_file: {
      content: 0,
      file_path: `s3://lake/wh/ops/events/data/event_time_day=2026-05-01/${String(index).padStart(16, '0')}-t3-0badcafe.parquet`,
      file_format: 'PARQUET',
      partition: { event_time_day: 20_574 + (index % 3) },
      record_count: 200 + index,
      file_size_in_bytes: 90_000 + index,
      column_sizes: columns.map((key) => ({ key, value: 100 + key * index })),
      value_counts: columns.map((key) => ({ key, value: 200 + index })),
      null_value_counts: columns.map((key) => ({ key, value: key % 4 })),
      nan_value_counts: null,
      lower_bounds: columns.slice(0, 13).map((key) => ({ key, value: bound(key) })),
      upper_bounds: columns.slice(0, 13).map((key) => ({ key, value: bound(key + 1) })),
      key_metadata: null,
      split_offsets: [4, 3605, 7184],
      equality_ids: null,
      sort_order_id: 0,
      referenced_data_file: null,
    },
  };
}

/** Counts event-loop turns (setImmediate callbacks) while `work` runs. */
async function turnsDuring<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let running = true;
  const tick = (): void => {
    if (!running) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { result: await work(), turns };
  } finally {
    running = false;
  }
}

describe('decoding and encoding in slices', () => {
  const entries = Array.from({ length: 1_500 }, (_, i) => bulkyEntry(i));
  const bytes = encodeManifest(entries);
  const blocks = Math.ceil(bytes.byteLength / AVRO_BLOCK_BYTES_TARGET);

  it('give the event loop a turn between Avro blocks, and decode and encode what the one-stretch calls do', async () => {
    expect(blocks).toBeGreaterThanOrEqual(8);
    // A slice of 0 ms: a turn after every block. One stretch would let no turn in.
    const decoded = await turnsDuring(() => decodeManifestInSlices(bytes, 0));
    expect(decoded.turns).toBeGreaterThanOrEqual(blocks - 1);
    expect(decoded.result).toEqual(decodeManifest(bytes));
    expect(decoded.result.entries).toEqual(entries);
    const visited: ManifestEntry[] = [];
    const visiting = await turnsDuring(() => visitManifestInSlices(bytes, (entry) => visited.push(entry), 0));
    expect(visiting.turns).toBeGreaterThanOrEqual(blocks - 1);
    expect(visiting.result).toEqual(decoded.result.metadata);
    expect(visited).toEqual(entries);
    const syncMarker = new Uint8Array(16).fill(7);
    const encoded = await turnsDuring(() => encodeManifestInSlices(entries, { syncMarker }, 0));
    expect(encoded.turns).toBeGreaterThanOrEqual(blocks - 1);
    expect(encoded.result).toEqual(encodeManifest(entries, { syncMarker }));
  });

  it('decoded bytes values view a copy of their block: the caller may reuse its bytes, and a kept entry holds one block, not the file', () => {
    const copy = bytes.slice();
    const decoded = decodeManifest(copy).entries;
    copy.fill(0);
    expect(decoded).toEqual(entries);
    const bound = decoded[0]?.data_file.lower_bounds?.[0]?.value as Uint8Array;
    expect(bound).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(bound)).toBe(false);
    expect(bound.buffer.byteLength).toBeLessThanOrEqual(2 * AVRO_BLOCK_BYTES_TARGET);
    expect(bound.buffer.byteLength).toBeLessThan(bytes.byteLength / 4);
  });
});
