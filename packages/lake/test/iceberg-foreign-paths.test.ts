// Goal: paths a table's own files name (metadata, manifest lists, manifests, the purge list)
// reach only inside the table's location: a crafted manifest or property naming another object
// of the bucket never makes expiry or an erasure's purge delete it, and a reader refuses to
// read such a file, naming it.
import { currentSnapshot, decodeManifest, decodeManifestList, encodeManifest, encodeManifestList, ManifestEntryStatus, manifestFileFor, replaceSnapshot, type ManifestEntry } from '@auditlake/format';
import type { StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { useEmbeddedS3 } from '../src/testing/index.js';
import {
  commitIcebergBatch,
  commitMetadataVersion,
  commitProperties,
  ensureIcebergTable,
  expireIcebergSnapshots,
  IcebergTierSource,
  loadIcebergTable,
  PURGE_FILES_PROPERTY,
  purgeReplacedFiles,
  resolveIcebergTable,
  s3Key,
  tableKeyOf,
  type IcebergTableRef,
  type LoadedTable,
  type MaintenanceContext,
  type ObjectStore,
} from '../src/index.js';

const BUCKET = 'lake';
const T0 = Date.UTC(2026, 4, 1);
const CREDENTIALS = { accessKeyId: 'ALFOREIGNPATHSTEST01', secretAccessKey: 'foreign-paths-secret-0123456789abcdefg' };
const s3 = useEmbeddedS3('iceberg-foreign-paths-', BUCKET, CREDENTIALS);
const fence = { term: 1, mayCommit: () => true };
/** Another team's object in the same bucket. */
const VICTIM = 'finance/ledger-2026.parquet';

function events(firstSeq: number, count: number): StoredEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const seq = firstSeq + i;
    return { eventId: `e${seq}`, userId: 'u', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: `q${seq}`, details: '', timestamp: T0 + seq, ingestTs: T0 + seq, seq, term: 1 };
  });
}

async function table(name: string): Promise<{ ref: IcebergTableRef; objects: ObjectStore; loaded: LoadedTable }> {
  const ref = resolveIcebergTable(`cat.ops.${name}`, new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
  const objects = s3.connections.bucket('s3', BUCKET);
  const created = await ensureIcebergTable(objects, ref, T0);
  await commitIcebergBatch(objects, ref, created, events(1, 2), { ...fence, nowMs: Date.now(), writerId: 'test' });
  await objects.put(VICTIM, 'another team’s data');
  return { ref, objects, loaded: (await loadIcebergTable(objects, ref))! };
}

function context(ref: IcebergTableRef, objects: ObjectStore): MaintenanceContext {
  return { objects, table: ref, fence, now: Date.now, metadataLogEntriesMax: 100 };
}

/** Commits a snapshot whose manifest names `dataPath` as a data file (as a writer of the table's folder could). */
async function snapshotNaming(ref: IcebergTableRef, objects: ObjectStore, loaded: LoadedTable, dataPath: string, snapshotId: number): Promise<LoadedTable> {
  const current = currentSnapshot(loaded.metadata)!;
  const list = decodeManifestList(await objects.get(s3Key(ref, current['manifest-list'])));
  const manifest = decodeManifest(await objects.get(s3Key(ref, list.files[0]!.manifest_path)));
  const entry: ManifestEntry = { ...manifest.entries[0]!, status: ManifestEntryStatus.ADDED, snapshot_id: snapshotId, data_file: { ...manifest.entries[0]!.data_file, file_path: dataPath } };
  const manifestPath = `${ref.location}/metadata/crafted-${snapshotId}.avro`;
  const manifestBytes = encodeManifest([entry]);
  await objects.put(s3Key(ref, manifestPath), manifestBytes);
  const sequenceNumber = loaded.metadata['last-sequence-number'] + 1;
  const listPath = `${ref.location}/metadata/snap-${snapshotId}-crafted.avro`;
  await objects.put(s3Key(ref, listPath), encodeManifestList([...list.files, manifestFileFor({ manifestPath, manifestLengthBytes: manifestBytes.length, entries: [entry], snapshotId, sequenceNumber })], { snapshotId, parentSnapshotId: current['snapshot-id'], sequenceNumber }));
  const zero = { addedFiles: { records: 0, files: 0, sizeBytes: 0, partitions: 0 }, deletedFiles: { records: 0, files: 0, sizeBytes: 0 } };
  const next = replaceSnapshot(loaded.metadata, { snapshotId, manifestListPath: listPath, nowMs: Date.now(), previousMetadataPath: loaded.metadataPath, ...zero, summaryExtra: {} });
  return commitMetadataVersion(objects, ref, loaded, next, fence);
}

describe('paths outside the table', () => {
  it('tableKeyOf takes only keys under the table location, segment by segment, none . or ..', () => {
    const ref = resolveIcebergTable('cat.ops.audit', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
    expect(tableKeyOf(ref, `s3://${BUCKET}/wh/ops/audit/data/a.parquet`)).toBe('wh/ops/audit/data/a.parquet');
    // An empty segment, as some engines wrote under a location ending in '/', is still inside.
    expect(tableKeyOf(ref, `s3://${BUCKET}/wh/ops/audit//data/a.parquet`)).toBe('wh/ops/audit//data/a.parquet');
    for (const path of [
      `s3://${BUCKET}/finance/x.parquet`,
      `s3://other/wh/ops/audit/data/a.parquet`,
      `s3://${BUCKET}/wh/ops/audit2/data/a.parquet`,
      `s3://${BUCKET}/wh/ops/audit/../audit2/a.parquet`,
      `s3://${BUCKET}/wh/ops/audit/./data/a.parquet`,
      `s3://${BUCKET}/wh/ops/audit`,
      `s3://${BUCKET}/wh/ops/audit/`,
    ]) {
      expect(tableKeyOf(ref, path), path).toBeUndefined();
    }
    expect(() => s3Key(ref, `s3://${BUCKET}/finance/x.parquet`)).toThrow(`path outside the table's location s3://${BUCKET}/wh/ops/audit: s3://${BUCKET}/finance/x.parquet`);
  });

  it('snapshot expiry never deletes an object outside the table that an expired snapshot names', async () => {
    const { ref, objects, loaded } = await table('expiry');
    const before = currentSnapshot(loaded.metadata)!['manifest-list'];
    let next = await snapshotNaming(ref, objects, loaded, `s3://${BUCKET}/${VICTIM}`, 777);
    // Back to the manifest list before it (another snapshot), then auditlake's next commit:
    // 777 is expired, and it alone named the object.
    const zero = { addedFiles: { records: 0, files: 0, sizeBytes: 0, partitions: 0 }, deletedFiles: { records: 0, files: 0, sizeBytes: 0 } };
    next = await commitMetadataVersion(objects, ref, next, replaceSnapshot(next.metadata, { snapshotId: 779, manifestListPath: before, nowMs: Date.now(), previousMetadataPath: next.metadataPath, ...zero, summaryExtra: {} }), fence);
    await commitIcebergBatch(objects, ref, next, events(3, 1), { ...fence, nowMs: Date.now(), writerId: 'test' });
    next = (await loadIcebergTable(objects, ref))!;
    const result = await expireIcebergSnapshots(context(ref, objects), next, 1, 0);
    expect(result.snapshotsExpired).toBeGreaterThan(0);
    expect(await objects.exists(VICTIM)).toBe(true);
    // What it did delete was the table's own: the crafted manifest list and manifest.
    expect(await objects.exists(s3Key(ref, `${ref.location}/metadata/snap-777-crafted.avro`))).toBe(false);
  });

  it("an erasure's purge leaves a purge-list path outside the table alone, deletes the rest and clears the list", async () => {
    const { ref, objects, loaded } = await table('purge');
    const own = `${ref.location}/data/replaced-by-test.parquet`;
    await objects.put(s3Key(ref, own), 'a replaced file');
    const listed = await commitProperties(context(ref, objects), loaded, { [PURGE_FILES_PROPERTY]: JSON.stringify([`s3://${BUCKET}/${VICTIM}`, own]) }, []);
    const result = await purgeReplacedFiles(context(ref, objects), listed);
    expect(await objects.exists(VICTIM)).toBe(true);
    expect(await objects.exists(s3Key(ref, own))).toBe(false);
    expect(result.loaded.metadata.properties[PURGE_FILES_PROPERTY]).toBeUndefined();
  });

  it('a reader refuses a table whose manifest names a data file outside it, naming the path', async () => {
    const { ref, objects, loaded } = await table('reader');
    await snapshotNaming(ref, objects, loaded, `s3://${BUCKET}/${VICTIM}`, 778);
    const source = new IcebergTierSource(s3.connections, { identifier: ref.identifier, location: ref.location, connectionId: 's3' });
    try {
      await expect(source.listFiles()).rejects.toThrow(`path outside the table's location ${ref.location}: s3://${BUCKET}/${VICTIM}`);
    } finally {
      await source.close();
    }
  });
});
