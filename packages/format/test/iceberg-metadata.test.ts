// Goal: table metadata JSON has every v2-required field with the values docs/iceberg-layout.md §1 gives, and over 3 appends the sequence numbers, parents, summaries, snapshot-log and metadata-log grow exactly as the spec requires; the watermark round-trips through the summary.
import { describe, expect, it } from 'vitest';
import {
  appendSnapshot,
  checkTableMetadata,
  newTableMetadata,
  parseTableMetadata,
  readWatermarkFromMetadata,
  watermarkSummary,
  type AppendSnapshotOptions,
  type IcebergTableMetadata,
} from '../src/index.js';

const LOCATION = 's3://audit-bucket/warehouse/audit/events';
const UUID = '9c6f2b1e-4f0a-4c57-9a1e-2b7d3f1a8c40';
const T0 = 1_714_564_800_000;
const metadataPath = (version: number): string => `${LOCATION}/metadata/v${version}.metadata.json`;

/** The tiered schema, written out here independently of src. */
const NOTES_FIELDS = [
  [1, 'event_id', true, 'string'],
  [2, 'source', true, 'string'],
  [3, 'user_id', true, 'string'],
  [4, 'action', true, 'string'],
  [5, 'resource', false, 'string'],
  [6, 'tables', false, 'string'],
  [7, 'query', false, 'string'],
  [8, 'details', false, 'string'],
  [9, 'ts', true, 'long'],
  [10, 'event_time', true, 'timestamptz'],
  [11, 'decision', false, 'string'],
  [12, 'ingest_ts', true, 'long'],
  [13, 'seq', false, 'long'],
  [14, 'term', false, 'long'],
  [15, 'source_id', false, 'string'],
  [16, 'source_seq', false, 'long'],
  [17, 'record_hash', false, 'string'],
  [18, 'chain_hash', false, 'string'],
  [19, 'field_check', false, 'string'],
  [20, 'erased', false, 'string'],
  [21, 'salt', false, 'string'],
] as const;

function append(metadata: IcebergTableMetadata, version: number, overrides: Partial<AppendSnapshotOptions> = {}): IcebergTableMetadata {
  const snapshotId = 1000 + version;
  return appendSnapshot(metadata, {
    snapshotId,
    manifestListPath: `${LOCATION}/metadata/snap-${snapshotId}-1-x.avro`,
    nowMs: T0 + version * 60_000,
    addedFiles: { records: 100 * version, files: version, sizeBytes: 5000 * version, partitions: 1 },
    previousMetadataPath: metadataPath(version),
    summaryExtra: watermarkSummary({ seq: BigInt(100 * version), writerId: 'c1/events', leaderTerm: 7, ingestTs: T0 + version }),
    ...overrides,
  });
}

function threeAppends(): IcebergTableMetadata[] {
  const versions = [newTableMetadata({ location: LOCATION, tableUuid: UUID, nowMs: T0 })];
  for (let v = 1; v <= 3; v++) versions.push(append(versions[v - 1] as IcebergTableMetadata, v));
  return versions;
}

describe('newTableMetadata', () => {
  it('has every v2-required field with the values docs/iceberg-layout.md §1 asks for, and nothing v1- or v3-only', () => {
    const metadata = newTableMetadata({ location: LOCATION, tableUuid: UUID, nowMs: T0, properties: { 'commit.retry.num-retries': '4' } });
    expect(metadata).toMatchObject({
      'format-version': 2,
      'table-uuid': UUID,
      location: LOCATION,
      'last-sequence-number': 0,
      'last-updated-ms': T0,
      'last-column-id': 21,
      'current-schema-id': 0,
      'default-spec-id': 0,
      'partition-specs': [{ 'spec-id': 0, fields: [{ name: 'event_time_day', transform: 'day', 'source-id': 10, 'field-id': 1000 }] }],
      'last-partition-id': 1000,
      'default-sort-order-id': 0,
      'sort-orders': [{ 'order-id': 0, fields: [] }],
      'current-snapshot-id': -1,
      refs: {},
      snapshots: [],
      'snapshot-log': [],
      'metadata-log': [],
    });
    expect(metadata.schemas).toHaveLength(1);
    expect(metadata.schemas[0]?.type).toBe('struct');
    expect(metadata.schemas[0]?.['schema-id']).toBe(0);
    expect(metadata.schemas[0]?.fields.map((f) => [f.id, f.name, f.required, f.type])).toEqual(NOTES_FIELDS);
    for (const key of ['schema', 'partition-spec', 'next-row-id', 'encryption-keys']) expect(metadata).not.toHaveProperty(key);
    // Properties: strings only (Java rejects others); name mapping is a JSON string of id → names.
    for (const value of Object.values(metadata.properties)) expect(typeof value).toBe('string');
    expect(metadata.properties).toMatchObject({ 'write.format.default': 'parquet', 'write.parquet.compression-codec': 'gzip', 'commit.retry.num-retries': '4' });
    expect(JSON.parse(metadata.properties['schema.name-mapping.default'] ?? '')).toEqual(NOTES_FIELDS.map(([id, name]) => ({ 'field-id': id, names: [name] })));
    expect(checkTableMetadata(JSON.parse(JSON.stringify(metadata)))).toEqual([]);
  });

  it('refuses a relative or slash-terminated location, a bad UUID and non-string properties with TypeError', () => {
    expect(() => newTableMetadata({ location: 'warehouse/audit/events', tableUuid: UUID, nowMs: T0 })).toThrow(TypeError);
    expect(() => newTableMetadata({ location: `${LOCATION}/`, tableUuid: UUID, nowMs: T0 })).toThrow(TypeError);
    expect(() => newTableMetadata({ location: LOCATION, tableUuid: 'nope', nowMs: T0 })).toThrow(TypeError);
    expect(() => newTableMetadata({ location: LOCATION, tableUuid: UUID, nowMs: T0, properties: { n: 4 as unknown as string } })).toThrow(TypeError);
  });
});

describe('appendSnapshot over 3 appends', () => {
  const versions = threeAppends();
  const last = versions[3] as IcebergTableMetadata;

  it('numbers snapshots 1, 2, 3 and chains parents; the first has no parent-snapshot-id at all', () => {
    expect(versions.map((m) => m['last-sequence-number'])).toEqual([0, 1, 2, 3]);
    expect(last.snapshots.map((s) => s['sequence-number'])).toEqual([1, 2, 3]);
    expect(last.snapshots.map((s) => s['snapshot-id'])).toEqual([1001, 1002, 1003]);
    expect(last.snapshots[0]).not.toHaveProperty('parent-snapshot-id');
    expect(last.snapshots.map((s) => s['parent-snapshot-id'])).toEqual([undefined, 1001, 1002]);
    expect(last.snapshots.map((s) => s['schema-id'])).toEqual([0, 0, 0]);
    expect(last.snapshots[2]?.['manifest-list']).toBe(`${LOCATION}/metadata/snap-1003-1-x.avro`);
    expect(last['current-snapshot-id']).toBe(1003);
    expect(last.refs).toEqual({ main: { 'snapshot-id': 1003, type: 'branch' } });
  });

  it('writes summaries of strings with operation append and cumulative totals', () => {
    expect(last.snapshots.map((s) => s.summary)).toEqual([1, 2, 3].map((v) => ({
      operation: 'append',
      'added-data-files': String(v),
      'added-records': String(100 * v),
      'added-files-size': String(5000 * v),
      'changed-partition-count': '1',
      'total-records': String((100 * v * (v + 1)) / 2),
      'total-files-size': String((5000 * v * (v + 1)) / 2),
      'total-data-files': String((v * (v + 1)) / 2),
      'total-delete-files': '0',
      'total-position-deletes': '0',
      'total-equality-deletes': '0',
      'auditlake.tiering.watermark': String(100 * v),
      'auditlake.tiering.writer-id': 'c1/events',
      'auditlake.tiering.leader-term': '7',
      'auditlake.tiering.watermark-ingest-ts': String(T0 + v),
    })));
  });

  it('grows snapshot-log by the new current snapshot and metadata-log by the previous file, never the one being written', () => {
    expect(last['snapshot-log']).toEqual(last.snapshots.map((s) => ({ 'timestamp-ms': s['timestamp-ms'], 'snapshot-id': s['snapshot-id'] })));
    for (let v = 1; v <= 3; v++) {
      const metadata = versions[v] as IcebergTableMetadata;
      expect(metadata['snapshot-log']).toHaveLength(v);
      expect(metadata['metadata-log']).toEqual(
        Array.from({ length: v }, (_, i) => ({ 'timestamp-ms': versions[i]?.['last-updated-ms'], 'metadata-file': metadataPath(i + 1) })),
      );
      expect(metadata['metadata-log'].map((e) => e['metadata-file'])).not.toContain(metadataPath(v + 1));
      expect(metadata['last-updated-ms']).toBe(T0 + v * 60_000);
      expect(metadata.snapshots.at(-1)?.['timestamp-ms']).toBe(metadata['last-updated-ms']);
    }
    // Earlier versions are not modified.
    expect(versions[1]?.snapshots).toHaveLength(1);
    expect(JSON.parse(JSON.stringify(last))).toEqual(last);
    expect(checkTableMetadata(JSON.parse(JSON.stringify(last)))).toEqual([]);
  });

  it('keeps time monotonic when the clock goes backwards, and trims the metadata-log', () => {
    const behind = append(last, 4, { nowMs: T0 });
    expect(behind['last-updated-ms']).toBe(last['last-updated-ms'] + 1);
    expect(behind.snapshots.at(-1)?.['timestamp-ms']).toBe(last['last-updated-ms'] + 1);
    const trimmed = append(last, 4, { metadataLogEntriesMax: 2 });
    expect(trimmed['metadata-log'].map((e) => e['metadata-file'])).toEqual([metadataPath(3), metadataPath(4)]);
  });

  it('refuses a reused snapshot id, a standard key in summaryExtra, non-string extras and bad counts with TypeError', () => {
    expect(() => append(last, 4, { snapshotId: 1002 })).toThrow(TypeError);
    expect(() => append(last, 4, { snapshotId: 2 ** 53 })).toThrow(TypeError);
    expect(() => append(last, 4, { summaryExtra: { operation: 'overwrite' } })).toThrow(TypeError);
    expect(() => append(last, 4, { summaryExtra: { 'total-records': '1' } })).toThrow(TypeError);
    expect(() => append(last, 4, { summaryExtra: { n: 1 as unknown as string } })).toThrow(TypeError);
    expect(() => append(last, 4, { addedFiles: { records: -1, files: 1, sizeBytes: 1, partitions: 1 } })).toThrow(TypeError);
    expect(() => append(last, 4, { manifestListPath: 'snap.avro' })).toThrow(TypeError);
  });
});

describe('parseTableMetadata', () => {
  it('parses what we write', () => {
    const last = threeAppends()[3] as IcebergTableMetadata;
    expect(parseTableMetadata(JSON.stringify(last))).toEqual(last);
  });

  it('refuses snapshot ids beyond 2^53 (another engine’s), v1 metadata and broken refs with AUDIT_TIER_TARGET_UNUSABLE', () => {
    const last = threeAppends()[3] as IcebergTableMetadata;
    const text = JSON.stringify(last);
    const unusable = expect.objectContaining({ code: 'AUDIT_TIER_TARGET_UNUSABLE' });
    // Java's ids are random 63-bit longs; JSON.parse would round 4951213507629824583.
    expect(() => parseTableMetadata(text.replaceAll('1003', '4951213507629824583'))).toThrow(
      expect.objectContaining({ code: 'AUDIT_TIER_TARGET_UNUSABLE', message: expect.stringMatching(/2\^53/) }),
    );
    expect(() => parseTableMetadata(text.replace('"format-version":2', '"format-version":1'))).toThrow(unusable);
    expect(() => parseTableMetadata(JSON.stringify({ ...last, refs: { main: { 'snapshot-id': 1002, type: 'branch' } } }))).toThrow(unusable);
    expect(() => parseTableMetadata(JSON.stringify({ ...last, 'current-snapshot-id': 9 }))).toThrow(unusable);
    expect(() => parseTableMetadata('{')).toThrow(unusable);
    expect(() => parseTableMetadata('null')).toThrow(unusable);
    expect(() => parseTableMetadata(JSON.stringify({ ...last, snapshots: [null] }))).toThrow(unusable);
    expect(() => parseTableMetadata(JSON.stringify({ ...last, 'snapshot-log': [...last['snapshot-log']].reverse() }))).toThrow(unusable);
    expect(() => parseTableMetadata(JSON.stringify({ ...last, 'last-updated-ms': T0 }))).toThrow(unusable);
    const summaryWithNumber = structuredClone(last) as unknown as { snapshots: { summary: Record<string, unknown> }[] };
    (summaryWithNumber.snapshots[0] as { summary: Record<string, unknown> }).summary['added-records'] = 100;
    expect(() => parseTableMetadata(JSON.stringify(summaryWithNumber))).toThrow(unusable);
  });
});

describe('readWatermarkFromMetadata', () => {
  it('is undefined for a table without snapshots and round-trips through the current summary', () => {
    const versions = threeAppends();
    expect(readWatermarkFromMetadata(versions[0] as IcebergTableMetadata)).toBeUndefined();
    const parsed = parseTableMetadata(JSON.stringify(versions[3]));
    expect(readWatermarkFromMetadata(parsed)).toEqual({ snapshotId: 1003, seq: 300n, writerId: 'c1/events', leaderTerm: 7, ingestTs: T0 + 3 });
    expect(readWatermarkFromMetadata(versions[1] as IcebergTableMetadata)?.seq).toBe(100n);
  });

  it('keeps seqs beyond 2^53 exact (decimal string, bigint)', () => {
    const seq = 2n ** 63n + 5n;
    const metadata = append(newTableMetadata({ location: LOCATION, tableUuid: UUID, nowMs: T0 }), 1, { summaryExtra: watermarkSummary({ seq }) });
    expect(metadata.snapshots[0]?.summary['auditlake.tiering.watermark']).toBe('9223372036854775813');
    expect(readWatermarkFromMetadata(parseTableMetadata(JSON.stringify(metadata)))?.seq).toBe(seq);
  });

  it('walks back past snapshots without our keys (a foreign commit on top), optionally only for our writer id', () => {
    const last = threeAppends()[3] as IcebergTableMetadata;
    const foreign = append(last, 4, { summaryExtra: { 'spark.app.id': 'x' } });
    expect(readWatermarkFromMetadata(foreign)).toMatchObject({ snapshotId: 1003, seq: 300n });
    const other = append(foreign, 5, { summaryExtra: watermarkSummary({ seq: 999n, writerId: 'someone-else' }) });
    expect(readWatermarkFromMetadata(other)).toMatchObject({ snapshotId: 1005, seq: 999n });
    expect(readWatermarkFromMetadata(other, { writerId: 'c1/events' })).toMatchObject({ snapshotId: 1003, seq: 300n });
    // An expired ancestor ends the walk.
    const expired = { ...foreign, snapshots: foreign.snapshots.filter((s) => s['snapshot-id'] === 1004) };
    expect(readWatermarkFromMetadata(expired)).toBeUndefined();
  });

  it('refuses a malformed watermark with AUDIT_TIER_TARGET_UNUSABLE rather than guessing', () => {
    const metadata = append(newTableMetadata({ location: LOCATION, tableUuid: UUID, nowMs: T0 }), 1, {
      summaryExtra: { 'auditlake.tiering.watermark': '12abc' },
    });
    expect(() => readWatermarkFromMetadata(metadata)).toThrow(expect.objectContaining({ code: 'AUDIT_TIER_TARGET_UNUSABLE' }));
    expect(() => watermarkSummary({ seq: -1n })).toThrow(TypeError);
  });
});
