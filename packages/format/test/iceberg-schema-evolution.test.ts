// Goal: an Iceberg table made before the chain columns gets them by schema evolution (new field
// ids, a new current schema, the name mapping with them), and readers — ours and icebird —
// read its old files with those columns as null and its new files with them.
import { readFileSync } from 'node:fs';
import { isAuditError, type StoredEvent } from '@auditlake/model';
import { icebergRead } from 'icebird';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addedEntry,
  appendSnapshot,
  AUDIT_COLUMNS,
  bytesSource,
  currentSchema,
  dataFileFromParquet,
  encodeAuditParquet,
  encodeManifest,
  encodeManifestList,
  evolveToAuditSchema,
  icebergParquetKvMetadata,
  manifestFileFor,
  newTableMetadata,
  readAuditParquet,
  summarizeAddedFiles,
  type DataFile,
  type IcebergTableMetadata,
} from '../src/index.js';
import { startObjectServer, type ObjectServer } from './object-server.js';

const OLD_IDS = 12;

/** Metadata as the writer made it before the chain columns: 12 fields, last-column-id 12 (or `ids` fields). */
function oldTableMetadata(location: string, ids = OLD_IDS): IcebergTableMetadata {
  const metadata = newTableMetadata({ location, tableUuid: '9c6f2b1e-4f0a-4c57-9a1e-2b7d3f1a8c40', nowMs: 1_767_225_600_000 });
  const schema = metadata.schemas[0]!;
  const fields = schema.fields.filter((field) => field.id <= ids);
  return {
    ...metadata,
    'last-column-id': ids,
    schemas: [{ ...schema, fields }],
    properties: { ...metadata.properties, 'schema.name-mapping.default': JSON.stringify(fields.map((f) => ({ 'field-id': f.id, names: [f.name] }))) },
  };
}

describe('evolveToAuditSchema', () => {
  it('adds the salt column (id 21) to a table of the chain layout (ids 1..20), as it added the chain columns', () => {
    const chained = oldTableMetadata('s3://b/wh/ns/t', 20);
    const evolved = evolveToAuditSchema(chained);
    expect(evolved['current-schema-id']).toBe(1);
    expect(evolved['last-column-id']).toBe(21);
    expect(currentSchema(evolved).fields.slice(20)).toEqual([{ id: 21, name: 'salt', required: false, type: 'string', doc: expect.any(String) as unknown }]);
    expect(currentSchema(evolved).fields.slice(0, 20)).toEqual(chained.schemas[0]?.fields);
  });

  it('adds the missing columns as optional fields with their ids in a new current schema', () => {
    const old = oldTableMetadata('s3://b/wh/ns/t');
    const evolved = evolveToAuditSchema(old);
    expect(evolved.schemas).toHaveLength(2);
    expect(evolved['current-schema-id']).toBe(1);
    expect(evolved['last-column-id']).toBe(21);
    expect(evolved.schemas[0]).toEqual(old.schemas[0]);
    const schema = currentSchema(evolved);
    expect(schema.fields.map((f) => [f.id, f.name])).toEqual(AUDIT_COLUMNS.map((c) => [c.fieldId, c.name]));
    expect(schema.fields.filter((f) => f.id > OLD_IDS).every((f) => !f.required)).toBe(true);
    expect(JSON.parse(evolved.properties['schema.name-mapping.default'] ?? '')).toHaveLength(21);
    // Nothing to add: the same metadata back.
    expect(evolveToAuditSchema(evolved)).toBe(evolved);
    expect(evolveToAuditSchema(newTableMetadata({ location: 's3://b/x', tableUuid: '9c6f2b1e-4f0a-4c57-9a1e-2b7d3f1a8c41', nowMs: 1 }))['current-schema-id']).toBe(0);
  });

  it('refuses a table whose ids or names another engine gave other meanings (AUDIT_TABLE_INVALID)', () => {
    const old = oldTableMetadata('s3://b/wh/ns/t');
    const foreign = { ...old, 'last-column-id': 13, schemas: [{ ...old.schemas[0]!, fields: [...old.schemas[0]!.fields, { id: 13, name: 'region', required: false, type: 'string' }] }] };
    expect(() => evolveToAuditSchema(foreign)).toThrow(/field id 13 is named region/);
    const dropped = { ...old, 'last-column-id': 14 };
    expect(() => evolveToAuditSchema(dropped)).toThrow(/already assigned field id 13/);
    const renamed = { ...old, 'last-column-id': 30, schemas: [{ ...old.schemas[0]!, fields: [...old.schemas[0]!.fields, { id: 30, name: 'seq', required: false, type: 'long' }] }] };
    try {
      evolveToAuditSchema(renamed);
      expect.unreachable();
    } catch (err) {
      expect(isAuditError(err, 'AUDIT_TABLE_INVALID')).toBe(true);
    }
  });
});

describe('a table evolved between two appends', () => {
  let server: ObjectServer;
  let location: string;
  const oldFile = new Uint8Array(readFileSync(new URL('./fixtures/three-events-snappy.parquet', import.meta.url)));
  const oldEvents = (JSON.parse(readFileSync(new URL('./fixtures/three-events-snappy.json', import.meta.url), 'utf8')) as { events: StoredEvent[] }).events;
  const newEvents: StoredEvent[] = oldEvents.map((event, i) => ({
    ...event,
    eventId: `${event.eventId}-new`,
    seq: 10 + i,
    term: 4,
    recordHash: String(i).repeat(64),
    chainHash: String(i + 1).repeat(64),
    fieldCheck: String(i + 2).repeat(56),
  }));

  beforeAll(async () => {
    server = await startObjectServer();
    location = `${server.base}/warehouse/ns/events`;
    const put = (path: string, bytes: Uint8Array | string) => server.objects.set(path, typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes);
    const commit = (metadata: IcebergTableMetadata, version: number, files: DataFile[], carried: ReturnType<typeof manifestFileFor>[], snapshotId: number) => {
      const entries = files.map((file) => addedEntry(file, snapshotId));
      const manifest = encodeManifest(entries, { schema: currentSchema(metadata) });
      put(`${location}/metadata/m${version}.avro`, manifest);
      const manifestFile = manifestFileFor({ manifestPath: `${location}/metadata/m${version}.avro`, manifestLengthBytes: manifest.byteLength, entries, snapshotId, sequenceNumber: metadata['last-sequence-number'] + 1 });
      const list = encodeManifestList([manifestFile, ...carried], { snapshotId, parentSnapshotId: metadata['current-snapshot-id'] === -1 ? null : metadata['current-snapshot-id'], sequenceNumber: metadata['last-sequence-number'] + 1 });
      put(`${location}/metadata/snap-${snapshotId}.avro`, list);
      const next = appendSnapshot(metadata, {
        snapshotId,
        manifestListPath: `${location}/metadata/snap-${snapshotId}.avro`,
        nowMs: 1_767_225_600_000 + version,
        addedFiles: summarizeAddedFiles(files),
        previousMetadataPath: `${location}/metadata/v${version}.metadata.json`,
      });
      put(`${location}/metadata/v${version + 1}.metadata.json`, JSON.stringify(next));
      return { next, manifestFile };
    };
    const v1 = oldTableMetadata(location);
    put(`${location}/metadata/v1.metadata.json`, JSON.stringify(v1));
    // The old writer's file: 12 columns, metrics for ids 1..12 only.
    const oldPath = `${location}/data/old.parquet`;
    put(oldPath, oldFile);
    const described = dataFileFromParquet({ events: oldEvents, filePath: oldPath, fileSizeBytes: oldFile.byteLength, parquetBytes: oldFile });
    const onlyOld = <T extends { key: number }>(list: T[] | null) => list?.filter((entry) => entry.key <= OLD_IDS) ?? null;
    const oldDataFile = { ...described, value_counts: onlyOld(described.value_counts), null_value_counts: onlyOld(described.null_value_counts), lower_bounds: onlyOld(described.lower_bounds), upper_bounds: onlyOld(described.upper_bounds) };
    const first = commit(v1, 1, [oldDataFile], [], 11);
    // Evolved, then the new writer's file with all 21 columns.
    const evolved = evolveToAuditSchema(first.next);
    const newPath = `${location}/data/new.parquet`;
    const newBytes = encodeAuditParquet(newEvents, { kvMetadata: icebergParquetKvMetadata(currentSchema(evolved)) });
    put(newPath, newBytes);
    commit(evolved, 2, [dataFileFromParquet({ events: newEvents, filePath: newPath, fileSizeBytes: newBytes.byteLength, parquetBytes: newBytes })], [first.manifestFile], 12);
    put(`${location}/metadata/version-hint.text`, '3');
  });

  afterAll(async () => {
    await server.close();
  });

  it('icebird reads every row: the old file with null chain columns, the new one with them', async () => {
    const rows = await icebergRead({ tableUrl: location });
    expect(rows).toHaveLength(oldEvents.length + newEvents.length);
    const old = rows.filter((row) => !(row['event_id'] as string).endsWith('-new'));
    const fresh = rows.filter((row) => (row['event_id'] as string).endsWith('-new'));
    expect(old).toHaveLength(oldEvents.length);
    for (const row of old) for (const column of ['seq', 'term', 'record_hash', 'chain_hash', 'field_check', 'erased', 'salt', 'source_id', 'source_seq']) expect(row[column] ?? null).toBeNull();
    expect(fresh.map((row): [number, unknown] => [Number(row['seq']), row['record_hash'] as unknown]).sort()).toEqual(newEvents.map((e) => [e.seq, e.recordHash]).sort());
  });

  it('our reader reads the old file with the chain fields absent', async () => {
    const events = await readAuditParquet(bytesSource(oldFile));
    expect(events.map((e) => e.seq)).toEqual([undefined, undefined, undefined]);
  });
});
