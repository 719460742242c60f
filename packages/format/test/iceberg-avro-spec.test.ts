// Goal: our manifests and manifest lists are standard Avro container files that avsc's own decoder reads with reader schemas written here from the Iceberg spec (v2 required fields non-null, resolved by Avro rules), with the spec's field ids, header keys and values; and our decoders read foreign (deflate, other-shaped) files.
import type { StoredEvent } from '@auditlake/model';
import { Readable } from 'node:stream';
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import {
  auditIcebergSchema,
  auditPartitionSpec,
  decodeIntBound,
  decodeManifest,
  decodeManifestList,
  encodeManifest,
  encodeManifestList,
  manifestFileFor,
  type ManifestEntry,
  type ManifestFile,
} from '../src/index.js';
import { DAY_MS, ORIGIN_MS, testSeed } from './events.js';
import { buildEvents } from './events.js';
import { buildMemoryTable } from './iceberg-table.js';

const seed = testSeed();
console.log(`iceberg-avro-spec seed=${seed} (replay with FORMAT_TEST_SEED=${seed})`);

// ---- Reader schemas, written from spec.md "Manifest Lists" / "Manifests" (v2 column) and
// Appendix A (Avro type mapping). Record names follow Java's TypeToSchema (the spec names none).
const opt = (type: unknown): { type: unknown; default: null } => ({ type: ['null', type], default: null });
const intMap = (name: string, value: string): { type: unknown; default: null } =>
  opt({ type: 'array', logicalType: 'map', items: { type: 'record', name, fields: [{ name: 'key', type: 'int' }, { name: 'value', type: value }] } });

const SPEC_MANIFEST_FILE = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    { name: 'manifest_path', type: 'string' },
    { name: 'manifest_length', type: 'long' },
    { name: 'partition_spec_id', type: 'int' },
    { name: 'content', type: 'int' },
    { name: 'sequence_number', type: 'long' },
    { name: 'min_sequence_number', type: 'long' },
    { name: 'added_snapshot_id', type: 'long' },
    { name: 'added_files_count', type: 'int' },
    { name: 'existing_files_count', type: 'int' },
    { name: 'deleted_files_count', type: 'int' },
    { name: 'added_rows_count', type: 'long' },
    { name: 'existing_rows_count', type: 'long' },
    { name: 'deleted_rows_count', type: 'long' },
    {
      name: 'partitions',
      ...opt({
        type: 'array',
        items: {
          type: 'record',
          name: 'r508',
          fields: [
            { name: 'contains_null', type: 'boolean' },
            { name: 'contains_nan', ...opt('boolean') },
            { name: 'lower_bound', ...opt('bytes') },
            { name: 'upper_bound', ...opt('bytes') },
          ],
        },
      }),
    },
    { name: 'key_metadata', ...opt('bytes') },
  ],
};

const SPEC_MANIFEST_ENTRY = {
  type: 'record',
  name: 'manifest_entry',
  fields: [
    { name: 'status', type: 'int' },
    { name: 'snapshot_id', ...opt('long') },
    { name: 'sequence_number', ...opt('long') },
    { name: 'file_sequence_number', ...opt('long') },
    {
      name: 'data_file',
      type: {
        type: 'record',
        name: 'r2',
        fields: [
          { name: 'content', type: 'int' },
          { name: 'file_path', type: 'string' },
          { name: 'file_format', type: 'string' },
          // The partition tuple of day(event_time): result type date (spec "Partition Transforms").
          { name: 'partition', type: { type: 'record', name: 'r102', fields: [{ name: 'event_time_day', ...opt({ type: 'int', logicalType: 'date' }) }] } },
          { name: 'record_count', type: 'long' },
          { name: 'file_size_in_bytes', type: 'long' },
          { name: 'column_sizes', ...intMap('k117_v118', 'long') },
          { name: 'value_counts', ...intMap('k119_v120', 'long') },
          { name: 'null_value_counts', ...intMap('k121_v122', 'long') },
          { name: 'nan_value_counts', ...intMap('k138_v139', 'long') },
          { name: 'lower_bounds', ...intMap('k126_v127', 'bytes') },
          { name: 'upper_bounds', ...intMap('k129_v130', 'bytes') },
          { name: 'key_metadata', ...opt('bytes') },
          { name: 'split_offsets', ...opt({ type: 'array', items: 'long' }) },
          { name: 'equality_ids', ...opt({ type: 'array', items: 'int' }) },
          { name: 'sort_order_id', ...opt('int') },
          { name: 'referenced_data_file', ...opt('string') },
        ],
      },
    },
  ],
};

/** Field ids from the spec tables, by field name (record field ids) or `<name>[]` (element ids). */
const SPEC_FIELD_IDS: Record<string, number> = {
  manifest_path: 500, manifest_length: 501, partition_spec_id: 502, content: 517, sequence_number: 515,
  min_sequence_number: 516, added_snapshot_id: 503, added_files_count: 504, existing_files_count: 505,
  deleted_files_count: 506, added_rows_count: 512, existing_rows_count: 513, deleted_rows_count: 514,
  partitions: 507, 'partitions[]': 508, key_metadata: 519, contains_null: 509, contains_nan: 518,
  lower_bound: 510, upper_bound: 511,
};
const SPEC_ENTRY_FIELD_IDS: Record<string, number> = {
  status: 0, snapshot_id: 1, sequence_number: 3, file_sequence_number: 4, data_file: 2,
  'data_file.content': 134, file_path: 100, file_format: 101, partition: 102, event_time_day: 1000,
  record_count: 103, file_size_in_bytes: 104, column_sizes: 108, value_counts: 109, null_value_counts: 110,
  nan_value_counts: 137, lower_bounds: 125, upper_bounds: 128, 'data_file.key_metadata': 131,
  split_offsets: 132, 'split_offsets[]': 133, equality_ids: 135, 'equality_ids[]': 136, sort_order_id: 140,
  referenced_data_file: 143,
};
/** Map key/value ids (spec: map<117: int, 118: long> …). */
const SPEC_MAP_IDS: Record<string, [number, number]> = {
  column_sizes: [117, 118], value_counts: [119, 120], null_value_counts: [121, 122], nan_value_counts: [138, 139],
  lower_bounds: [126, 127], upper_bounds: [129, 130],
};

interface Decoded {
  header: Record<string, string>;
  writerSchema: Record<string, unknown>;
  records: Record<string, unknown>[];
}

/** Decodes with avsc's own container reader, resolving the file's schema to `readerSchema`. */
async function decodeWithReader(bytes: Uint8Array, readerSchema: unknown): Promise<Decoded> {
  const decoder = new avro.streams.BlockDecoder({ readerSchema: readerSchema as avro.Schema });
  let header: Record<string, string> = {};
  decoder.on('metadata', (_type: unknown, _codec: unknown, raw: { meta: Record<string, Buffer> }) => {
    header = Object.fromEntries(Object.entries(raw.meta).map(([key, value]) => [key, value.toString('utf8')]));
  });
  const records: Record<string, unknown>[] = [];
  await new Promise<void>((resolve, reject) => {
    decoder.on('data', (record: Record<string, unknown>) => records.push(record));
    decoder.on('end', resolve);
    decoder.on('error', reject);
    Readable.from([Buffer.from(bytes)]).pipe(decoder);
  });
  return { header, writerSchema: JSON.parse(header['avro.schema'] ?? 'null') as Record<string, unknown>, records };
}

type AvroField = { name: string; type: unknown; 'field-id'?: number; default?: unknown };

/** Every record field of a schema, with its path-qualified name. */
function fieldsOf(schema: unknown, prefix = ''): { path: string; field: AvroField }[] {
  const out: { path: string; field: AvroField }[] = [];
  const visitType = (type: unknown, path: string): void => {
    if (Array.isArray(type)) type.forEach((branch) => visitType(branch, path));
    else if (typeof type === 'object' && type !== null) {
      const t = type as { type: string; fields?: AvroField[]; items?: unknown };
      if (t.type === 'record') for (const field of t.fields ?? []) {
        out.push({ path: `${path}${field.name}`, field });
        visitType(field.type, `${path}${field.name}.`);
      }
      if (t.type === 'array') visitType(t.items, path);
    }
  };
  visitType(schema, prefix);
  return out;
}

/** The array schema inside a field type (`["null", {type: array}]`). */
function arrayOf(type: unknown): Record<string, unknown> | undefined {
  const branches = Array.isArray(type) ? type : [type];
  return branches.find((b): b is Record<string, unknown> => typeof b === 'object' && b !== null && (b as { type: string }).type === 'array');
}

const events0 = (): ReturnType<typeof buildEvents>[] => [
  buildEvents(seed, { count: 300, startMs: ORIGIN_MS, spanMs: 2 * DAY_MS }),
  buildEvents(seed + 1, { count: 200, startMs: ORIGIN_MS + 2 * DAY_MS, spanMs: DAY_MS }),
  buildEvents(seed + 2, { count: 100, startMs: ORIGIN_MS + 5 * DAY_MS, spanMs: 3 * DAY_MS }),
].map((batch, b) => batch.map((event, i) => ({ ...event, eventId: `${event.eventId}-${b}`, seq: b * 1000 + i + 1 })));

const table = buildMemoryTable('s3://audit-bucket/warehouse/audit/events', events0(), seed);

describe('manifest list', () => {
  it('decodes with the spec reader schema; header keys and every v2 value are right', async () => {
    const snapshots = table.versions.at(-1)?.snapshots ?? [];
    expect(snapshots).toHaveLength(3);
    for (const [index, snapshot] of snapshots.entries()) {
      const { header, records } = await decodeWithReader(table.manifestLists[index] as Uint8Array, SPEC_MANIFEST_FILE);
      expect(header['avro.codec']).toBe('null');
      expect(header['format-version']).toBe('2');
      expect(header['snapshot-id']).toBe(String(snapshot['snapshot-id']));
      expect(header['parent-snapshot-id']).toBe(index === 0 ? 'null' : String(snapshots[index - 1]?.['snapshot-id']));
      expect(header['sequence-number']).toBe(String(index + 1));
      // Every manifest of the snapshot, earlier ones carried verbatim.
      expect(records).toHaveLength(index + 1);
      for (const [m, record] of records.entries()) {
        const manifest = table.manifests[m] as Uint8Array;
        const { records: entries } = await decodeWithReader(manifest, SPEC_MANIFEST_ENTRY);
        const days = entries.map((e) => ((e['data_file'] as Record<string, unknown>)['partition'] as { event_time_day: number }).event_time_day);
        const rows = entries.reduce((sum, e) => sum + ((e['data_file'] as { record_count: number }).record_count), 0);
        const lower = Buffer.alloc(4);
        lower.writeInt32LE(Math.min(...days));
        const upper = Buffer.alloc(4);
        upper.writeInt32LE(Math.max(...days));
        expect({ ...record }).toEqual({
          manifest_path: expect.stringMatching(/^s3:\/\/audit-bucket\/warehouse\/audit\/events\/metadata\/.+-m0\.avro$/),
          manifest_length: manifest.byteLength,
          partition_spec_id: 0,
          content: 0,
          sequence_number: m + 1,
          min_sequence_number: m + 1,
          added_snapshot_id: snapshots[m]?.['snapshot-id'],
          added_files_count: entries.length,
          existing_files_count: 0,
          deleted_files_count: 0,
          added_rows_count: rows,
          existing_rows_count: 0,
          deleted_rows_count: 0,
          partitions: [expect.objectContaining({ contains_null: false, contains_nan: false, lower_bound: lower, upper_bound: upper })],
          key_metadata: null,
        });
      }
    }
  });

  it("writer schema carries the spec's field ids and element id, required fields non-null", async () => {
    const { writerSchema } = await decodeWithReader(table.manifestLists[0] as Uint8Array, SPEC_MANIFEST_FILE);
    const fields = fieldsOf(writerSchema);
    expect(fields.map((f) => f.field.name).sort()).toEqual(Object.keys(SPEC_FIELD_IDS).filter((k) => !k.endsWith('[]')).sort());
    for (const { field } of fields) expect(field['field-id'], field.name).toBe(SPEC_FIELD_IDS[field.name]);
    const partitions = fields.find((f) => f.field.name === 'partitions')?.field;
    expect(arrayOf(partitions?.type)?.['element-id']).toBe(SPEC_FIELD_IDS['partitions[]']);
    // Optional = null-first union with default null; required = a bare type.
    for (const { field } of fields) {
      const optional = ['partitions', 'key_metadata', 'contains_nan', 'lower_bound', 'upper_bound'].includes(field.name);
      if (optional) {
        expect((field.type as unknown[])[0], field.name).toBe('null');
        expect(field.default, field.name).toBeNull();
      } else expect(Array.isArray(field.type), field.name).toBe(false);
    }
  });
});

describe('manifest', () => {
  it('decodes with the spec reader schema; header keys and every v2 value are right', async () => {
    const { header, records } = await decodeWithReader(table.manifests[1] as Uint8Array, SPEC_MANIFEST_ENTRY);
    expect(header['avro.codec']).toBe('null');
    expect(JSON.parse(header['schema'] ?? '')).toEqual(table.versions[0]?.schemas[0]);
    expect(JSON.parse(header['schema'] ?? '')).toEqual(auditIcebergSchema());
    expect(header['schema-id']).toBe('0');
    expect(JSON.parse(header['partition-spec'] ?? '')).toEqual(auditPartitionSpec().fields);
    expect(header['partition-spec-id']).toBe('0');
    expect(header['format-version']).toBe('2');
    expect(header['content']).toBe('data');
    const snapshotId = table.versions.at(-1)?.snapshots[1]?.['snapshot-id'];
    const batch = table.appends[1] ?? [];
    expect(records.length).toBeGreaterThanOrEqual(1);
    let total = 0;
    for (const record of records) {
      expect(record['status']).toBe(1);
      expect(record['snapshot_id']).toBe(snapshotId);
      // Inherited from the manifest list (ADDED entries).
      expect(record['sequence_number']).toBeNull();
      expect(record['file_sequence_number']).toBeNull();
      const file = record['data_file'] as Record<string, unknown>;
      const day = (file['partition'] as { event_time_day: number }).event_time_day;
      const dayEvents = batch.filter((e) => Math.floor(e.timestamp / DAY_MS) === day);
      const parquet = table.objects.get(file['file_path'] as string) as Uint8Array;
      expect(file['content']).toBe(0);
      expect(file['file_path']).toMatch(new RegExp(`^s3://audit-bucket/warehouse/audit/events/data/event_time_day=${new Date(day * DAY_MS).toISOString().slice(0, 10)}/`));
      expect(file['file_format']).toBe('PARQUET');
      expect(file['record_count']).toBe(dayEvents.length);
      expect(file['file_size_in_bytes']).toBe(parquet.byteLength);
      const ids = Array.from({ length: 21 }, (_, i) => i + 1);
      expect(file['value_counts']).toEqual(ids.map((key) => ({ key, value: dayEvents.length })));
      expect(file['null_value_counts']).toEqual(ids.map((key) => ({ key, value: nullsOf(key, dayEvents) })));
      expect(file['nan_value_counts']).toBeNull();
      const columnSizes = file['column_sizes'] as { key: number; value: number }[];
      expect(columnSizes.map((c) => c.key)).toEqual(ids);
      expect(columnSizes.reduce((sum, c) => sum + c.value, 0)).toBeLessThan(parquet.byteLength);
      const splitOffsets = file['split_offsets'] as number[];
      expect(splitOffsets[0]).toBe(4);
      expect([...splitOffsets].sort((a, b) => a - b)).toEqual(splitOffsets);
      expect(file['equality_ids']).toBeNull();
      expect(file['sort_order_id']).toBe(0);
      expect(file['referenced_data_file']).toBeNull();
      // ts (id 9), event_time (10), ingest_ts (12): exact min/max as 8-byte little-endian longs.
      const bound = (list: unknown, key: number): Buffer | undefined => (list as { key: number; value: Buffer }[]).find((b) => b.key === key)?.value;
      const times = dayEvents.map((e) => e.timestamp);
      expect(bound(file['lower_bounds'], 9)?.readBigInt64LE()).toBe(BigInt(Math.min(...times)));
      expect(bound(file['upper_bounds'], 9)?.readBigInt64LE()).toBe(BigInt(Math.max(...times)));
      expect(bound(file['lower_bounds'], 10)?.readBigInt64LE()).toBe(BigInt(Math.min(...times)) * 1000n);
      expect(bound(file['upper_bounds'], 10)?.readBigInt64LE()).toBe(BigInt(Math.max(...times)) * 1000n);
      const ingest = dayEvents.map((e) => e.ingestTs);
      expect(bound(file['lower_bounds'], 12)?.readBigInt64LE()).toBe(BigInt(Math.min(...ingest)));
      expect(bound(file['upper_bounds'], 12)?.readBigInt64LE()).toBe(BigInt(Math.max(...ingest)));
      // source (id 2) values are short ASCII: the bounds are the exact min and max.
      const sources = dayEvents.map((e) => e.source).sort();
      expect(bound(file['lower_bounds'], 2)?.toString('utf8')).toBe(sources[0]);
      expect(bound(file['upper_bounds'], 2)?.toString('utf8')).toBe(sources.at(-1));
      total += dayEvents.length;
    }
    expect(total).toBe(batch.length);
  });

  it("writer schema carries the spec's field ids, map key/value ids and element ids; partition is int+date with id 1000", async () => {
    const { writerSchema } = await decodeWithReader(table.manifests[0] as Uint8Array, SPEC_MANIFEST_ENTRY);
    const fields = fieldsOf(writerSchema);
    for (const { path, field } of fields) {
      if (field.name === 'key' || field.name === 'value') {
        const map = path.split('.').at(-2) as string;
        expect(field['field-id'], path).toBe((SPEC_MAP_IDS[map] as [number, number])[field.name === 'key' ? 0 : 1]);
      } else {
        const id = SPEC_ENTRY_FIELD_IDS[path.startsWith('data_file.') && (field.name === 'content' || field.name === 'key_metadata') ? `data_file.${field.name}` : field.name];
        expect(field['field-id'], path).toBe(id);
      }
    }
    for (const name of ['split_offsets', 'equality_ids']) {
      expect(arrayOf(fields.find((f) => f.field.name === name)?.field.type)?.['element-id']).toBe(SPEC_ENTRY_FIELD_IDS[`${name}[]`]);
    }
    for (const name of Object.keys(SPEC_MAP_IDS)) {
      expect(arrayOf(fields.find((f) => f.field.name === name)?.field.type)?.['logicalType'], name).toBe('map');
    }
    const day = fields.find((f) => f.field.name === 'event_time_day')?.field;
    expect(day?.type).toEqual(['null', { type: 'int', logicalType: 'date' }]);
    // No v1-only or deprecated fields, and no Avro map/fixed/enum anywhere.
    const names = fields.map((f) => f.field.name);
    for (const gone of ['block_size_in_bytes', 'file_ordinal', 'sort_columns', 'distinct_counts']) expect(names).not.toContain(gone);
    expect(JSON.stringify(writerSchema)).not.toMatch(/"type":"(map|fixed|enum)"/);
  });
});

describe('our decoders', () => {
  it('round-trip our own manifests and manifest lists exactly', () => {
    for (const bytes of table.manifests) {
      const { entries } = decodeManifest(bytes);
      const again = decodeManifest(encodeManifest(entries));
      expect(again.entries).toEqual(entries);
    }
    const last = decodeManifestList(table.manifestLists.at(-1) as Uint8Array);
    expect(last.files).toHaveLength(3);
    expect(last.metadata['sequence-number']).toBe('3');
  });

  it('read a deflate-compressed manifest written by avsc with a Java-like but different schema (fields missing and extra)', async () => {
    const ours = decodeManifest(table.manifests[0] as Uint8Array).entries[0] as ManifestEntry;
    // Another engine's shape: no referenced_data_file / nan_value_counts, an extra v3 field.
    const foreign = structuredClone(SPEC_MANIFEST_ENTRY) as { fields: { name: string; type: { fields: { name: string }[] } }[] };
    const dataFile = foreign.fields[4]?.type as { fields: unknown[] };
    dataFile.fields = (dataFile.fields as { name: string }[]).filter((f) => f.name !== 'referenced_data_file' && f.name !== 'nan_value_counts');
    dataFile.fields.push({ name: 'first_row_id', type: ['null', 'long'], default: null, 'field-id': 142 });
    // avsc's typings omit `metadata`; a variable (not a literal) avoids the excess-property check.
    const options = { codec: 'deflate', metadata: { 'format-version': Buffer.from('2'), content: Buffer.from('data'), 'partition-spec-id': Buffer.from('0') } };
    const encoder = new avro.streams.BlockEncoder(foreign as unknown as avro.Schema, options);
    const chunks: Buffer[] = [];
    encoder.on('data', (chunk: Buffer) => chunks.push(chunk));
    const done = new Promise((resolve) => encoder.on('end', resolve));
    const toAvsc = (value: Uint8Array): Buffer => Buffer.from(value);
    const file = ours.data_file;
    const { referenced_data_file: _r, nan_value_counts: _n, ...rest } = file;
    encoder.end({
      ...ours,
      data_file: {
        ...rest,
        lower_bounds: file.lower_bounds?.map((b) => ({ key: b.key, value: toAvsc(b.value) })) ?? null,
        upper_bounds: file.upper_bounds?.map((b) => ({ key: b.key, value: toAvsc(b.value) })) ?? null,
        first_row_id: 77,
      },
    });
    await done;
    const { entries } = decodeManifest(new Uint8Array(Buffer.concat(chunks)));
    expect(entries).toEqual([ours]);
  });

  it('refuse bytes that are not a manifest with AUDIT_TABLE_INVALID', () => {
    const manifest = table.manifests[0] as Uint8Array;
    for (const bad of [new Uint8Array([1, 2, 3]), manifest.subarray(0, manifest.byteLength - 5), table.manifestLists[0] as Uint8Array]) {
      expect(() => decodeManifest(bad)).toThrow(expect.objectContaining({ code: 'AUDIT_TABLE_INVALID' }));
    }
  });
});

describe('encoders', () => {
  const ours = decodeManifest(table.manifests[0] as Uint8Array).entries;
  const entry = ours[0] as ManifestEntry;
  const list = decodeManifestList(table.manifestLists.at(-1) as Uint8Array).files;
  const context = { snapshotId: 77, parentSnapshotId: 76, sequenceNumber: 4 };

  it('summarize EXISTING and DELETED entries: counts per status, min sequence number over live entries only', () => {
    const entries: ManifestEntry[] = [
      { ...entry, status: 0, sequence_number: 2, file_sequence_number: 2, data_file: { ...entry.data_file, file_path: 'a', record_count: 5, partition: { event_time_day: 10 } } },
      { ...entry, status: 2, sequence_number: 1, file_sequence_number: 1, data_file: { ...entry.data_file, file_path: 'b', record_count: 7, partition: { event_time_day: -3 } } },
      { ...entry, status: 1, sequence_number: null, file_sequence_number: null, data_file: { ...entry.data_file, file_path: 'c', record_count: 11, partition: { event_time_day: 12 } } },
    ];
    const bytes = encodeManifest(entries);
    const file = manifestFileFor({ manifestPath: 's3://b/m.avro', manifestLengthBytes: bytes.byteLength, entries, snapshotId: 77, sequenceNumber: 4 });
    expect(file).toMatchObject({
      sequence_number: 4, min_sequence_number: 2, added_snapshot_id: 77,
      added_files_count: 1, existing_files_count: 1, deleted_files_count: 1,
      added_rows_count: 11, existing_rows_count: 5, deleted_rows_count: 7,
    });
    expect(decodeIntBound(file.partitions?.[0]?.lower_bound as Uint8Array)).toBe(-3);
    expect(decodeIntBound(file.partitions?.[0]?.upper_bound as Uint8Array)).toBe(12);
    expect(decodeManifestList(encodeManifestList([...list, file], context)).files.at(-1)).toEqual(file);
  });

  it('refuse input that breaks the spec with TypeError', () => {
    const withFile = (changes: Partial<ManifestEntry['data_file']>): ManifestEntry => ({ ...entry, data_file: { ...entry.data_file, ...changes } });
    expect(() => encodeManifest([entry, entry])).toThrow(TypeError);
    expect(() => encodeManifest([{ ...entry, status: 0 }])).toThrow(TypeError);
    expect(() => encodeManifest([withFile({ content: 1 })])).toThrow(TypeError);
    expect(() => encodeManifest([withFile({ partition: { event_time_day: null } })])).toThrow(TypeError);
    expect(() => encodeManifest([withFile({ record_count: 2 ** 53 })])).toThrow(TypeError);
    expect(() => encodeManifest([withFile({ file_format: 5 as unknown as string })])).toThrow(TypeError);
    expect(() => encodeManifest([entry], { syncMarker: new Uint8Array(3) })).toThrow(TypeError);
    const row = list[0] as ManifestFile;
    expect(() => encodeManifestList([row, row], context)).toThrow(TypeError);
    expect(() => encodeManifestList([{ ...row, added_snapshot_id: 77, sequence_number: 3 }], context)).toThrow(TypeError);
    expect(() => encodeManifestList([{ ...row, sequence_number: 5 }], context)).toThrow(TypeError);
    expect(() => encodeManifestList([{ ...row, min_sequence_number: row.sequence_number + 1 }], context)).toThrow(TypeError);
    expect(() => encodeManifestList([{ ...row, added_files_count: -1 }], context)).toThrow(TypeError);
    expect(() => encodeManifestList([row], { ...context, snapshotId: 0 })).toThrow(TypeError);
  });

  it('write identical bytes for identical input and sync marker (no hidden randomness)', () => {
    const syncMarker = new Uint8Array(16).fill(7);
    expect(encodeManifest(ours, { syncMarker })).toEqual(encodeManifest(ours, { syncMarker }));
    expect(encodeManifestList(list, { ...context, syncMarker })).toEqual(encodeManifestList(list, { ...context, syncMarker }));
  });
});

/** Nulls a column holds for these events: the optional chain and source columns only where an event has no value. */
function nullsOf(fieldId: number, events: readonly StoredEvent[]): number {
  const absent: Record<number, (e: StoredEvent) => boolean> = {
    15: (e) => e.sourceId === undefined,
    16: (e) => e.sourceSeq === undefined,
    17: (e) => e.recordHash === undefined,
    18: (e) => e.chainHash === undefined,
    19: (e) => e.fieldCheck === undefined,
    20: (e) => e.erased === undefined,
    21: (e) => e.salt === undefined,
  };
  const test = absent[fieldId];
  return test === undefined ? 0 : events.filter(test).length;
}
