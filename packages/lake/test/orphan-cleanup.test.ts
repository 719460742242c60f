// Goal: orphan cleanup (Iceberg and Parquet) deletes only what it may: objects its own writers name as they do, that nothing
// retained refers to (statistics files included), old enough by their S3 LastModified against the injected clock, and only
// while the node may still commit. A tier location nested in another (either way round) loses nothing to the other's cleanup,
// and a deposed leader's cleanup stops before deleting what its successor is writing.
import { randomUUID } from 'node:crypto';
import { bytesSource, currentSnapshot, readAuditParquet } from '@auditlake/format';
import { AuditErrorCode, type StoredEvent } from '@auditlake/model';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  commitIcebergBatch,
  commitMetadataVersion,
  commitParquetBatch,
  currentManifests,
  ensureIcebergTable,
  joinKey,
  loadIcebergTable,
  metadataFileKey,
  ParquetTierSource,
  removeIcebergOrphans,
  resolveIcebergTable,
  runIcebergMaintenance,
  runParquetMaintenance,
  s3Key,
  type CommitFence,
  type IcebergTableRef,
  type MaintenanceContext,
  type ObjectStore,
  type S3Location,
} from '../src/index.js';
import { useEmbeddedS3 } from '../src/testing/index.js';

const BUCKET = 'orphans';
const T0 = Date.UTC(2026, 4, 1);
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const CREDENTIALS = { accessKeyId: 'ALORPHANCLEANUP00001', secretAccessKey: 'orphan-cleanup-secret-0123456789abcdef' };
/** The settings floor of orphan.min.age.ms; the tests move the clock past it instead of going below it. */
const MIN_AGE_MS = HOUR_MS;
/** A clock that far on: everything written so far is old enough to be an orphan. */
const later = (): number => Date.now() + MIN_AGE_MS + 10 * 60_000;
const ICEBERG_POLICY = { snapshotRetainLast: 24, removeOrphanFiles: true, orphanMinAgeMs: MIN_AGE_MS, targetFileSizeBytes: 16 * 1024 * 1024, metadataPreviousVersionsMax: 100 };
const PARQUET_POLICY = { removeOrphanFiles: true, orphanMinAgeMs: MIN_AGE_MS, targetFileSizeBytes: 1 };
const s3 = useEmbeddedS3('orphan-cleanup-', BUCKET, CREDENTIALS);
let objects: ObjectStore;

beforeAll(() => {
  objects = s3.connections.bucket('s3', BUCKET);
});

/** Events firstSeq.. over two days (alternating), ingest order = seq order. */
function events(firstSeq: number, count: number): StoredEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const seq = firstSeq + i;
    return { eventId: `e${seq}`, userId: `u${seq % 7}`, source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: `q${seq}`, details: '', timestamp: T0 + (seq % 2) * DAY_MS + seq, ingestTs: T0 + 10 * DAY_MS + seq, seq, term: 1 };
  });
}

const fence: CommitFence = { term: 1, mayCommit: () => true };

function tableRef(name: string, warehouse = `s3://${BUCKET}/wh`): IcebergTableRef {
  return resolveIcebergTable(`cat.ops.${name}`, new Map([['cat', { name: 'cat', warehouse, connectionId: 's3' }]]));
}

/** An Iceberg table with `commits` sweep commits of `perCommit` events each. */
async function tableWith(table: IcebergTableRef, commits: number, perCommit: number): Promise<void> {
  let loaded = await ensureIcebergTable(objects, table, T0);
  for (let c = 0; c < commits; c++) {
    await commitIcebergBatch(objects, table, loaded, events(1 + c * perCommit, perCommit), { ...fence, nowMs: Date.now(), writerId: 'test', afterSeq: c * perCommit });
    loaded = (await loadIcebergTable(objects, table))!;
  }
}

function context(table: IcebergTableRef, over: Partial<MaintenanceContext> = {}): MaintenanceContext {
  return { objects, table, fence, now: later, metadataLogEntriesMax: 100, ...over };
}

/** seq → how often, over the current snapshot's live files (every file read). */
async function icebergSeqCounts(table: IcebergTableRef): Promise<Map<number, number>> {
  const loaded = (await loadIcebergTable(objects, table))!;
  const counts = new Map<number, number>();
  for (const manifest of await currentManifests(objects, table, loaded.metadata)) {
    for (const entry of manifest.entries) {
      if (entry.status === 2) continue;
      const rows = await readAuditParquet(bytesSource(await objects.get(s3Key(table, entry.data_file.file_path))), { columns: ['seq'] });
      for (const row of rows) counts.set(Number(row.seq), (counts.get(Number(row.seq)) ?? 0) + 1);
    }
  }
  return counts;
}

/** seq → how often, over the files the Parquet reader lists (every file read). */
async function parquetSeqCounts(location: S3Location): Promise<Map<number, number>> {
  const source = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${location.bucket}/${location.prefix}`, connectionId: 's3' });
  const counts = new Map<number, number>();
  try {
    for (const file of await source.listFiles()) {
      const rows = await readAuditParquet(bytesSource(await objects.get(file.key)), { columns: ['seq'] });
      for (const row of rows) counts.set(Number(row.seq), (counts.get(Number(row.seq)) ?? 0) + 1);
    }
  } finally {
    await source.close();
  }
  return counts;
}

function expectEachOnce(counts: Map<number, number>, seqMax: number): void {
  expect(counts.size).toBe(seqMax);
  for (let seq = 1; seq <= seqMax; seq++) expect(counts.get(seq), `seq ${seq}`).toBe(1);
}

/** What an abandoned sweep attempt of ours leaves under the table: a data file, a manifest and a manifest list nothing names. */
async function abandonedIcebergAttempt(table: IcebergTableRef): Promise<string[]> {
  const attempt = randomUUID();
  const keys = [
    joinKey(table.s3.prefix, `data/event_time_day=2026-05-01/0000000000000999-t1-${attempt.slice(0, 8)}.parquet`),
    metadataFileKey(table, `${attempt}-m0.avro`),
    metadataFileKey(table, `snap-123456789-1-${attempt}.avro`),
  ];
  for (const key of keys) await objects.put(key, new Uint8Array([1, 2, 3]));
  return keys;
}

describe('orphan cleanup deletes only its own writers’ unreferenced files', () => {
  it('a Parquet location nested in an Iceberg table’s data folder loses nothing to the table’s maintenance, and an abandoned attempt of the table’s own goes', async () => {
    const table = tableRef('outer_events');
    await tableWith(table, 2, 20);
    const pq: S3Location = { bucket: BUCKET, prefix: `${table.s3.prefix}/data/pq` };
    for (let c = 0; c < 3; c++) await commitParquetBatch(objects, pq, events(1 + c * 30, 30), { term: 1, nowMs: Date.now(), afterSeq: c * 30, mayCommit: () => true });
    const pqKeys = await objects.list(`${pq.prefix}/`);
    expectEachOnce(await parquetSeqCounts(pq), 90);
    // Not named as the table's writers name objects: another engine's, never ours to delete.
    const foreign = [joinKey(table.s3.prefix, 'data/event_time_day=2026-05-01/00000-0-spark-00001.parquet'), metadataFileKey(table, 'notes.txt')];
    for (const key of foreign) await objects.put(key, new Uint8Array([1]));
    const abandoned = await abandonedIcebergAttempt(table);

    const run = await runIcebergMaintenance(context(table), ICEBERG_POLICY);

    expect((await objects.list(`${pq.prefix}/`)).sort()).toEqual(pqKeys.sort());
    expectEachOnce(await parquetSeqCounts(pq), 90);
    for (const key of foreign) expect(await objects.exists(key), key).toBe(true);
    expect(run.orphansDeleted).toBeGreaterThanOrEqual(abandoned.length);
    for (const key of abandoned) expect(await objects.exists(key), key).toBe(false);
    expectEachOnce(await icebergSeqCounts(table), 40);
  }, 60_000);

  it('an Iceberg table nested in a Parquet location loses nothing to the location’s maintenance', async () => {
    const location: S3Location = { bucket: BUCKET, prefix: 'pqouter' };
    for (let c = 0; c < 2; c++) await commitParquetBatch(objects, location, events(1 + c * 10, 10), { term: 1, nowMs: Date.now(), afterSeq: c * 10, mayCommit: () => true });
    const table = tableRef('inner_events', `s3://${BUCKET}/pqouter/wh`);
    await tableWith(table, 3, 10);
    const tableKeys = await objects.list(`${table.s3.prefix}/`);
    const stray = `${location.prefix}/event_date=2026-05-01/part-0000000000000999-t1-stray.parquet`;
    await objects.put(stray, new Uint8Array([1, 2, 3]));

    const run = await runParquetMaintenance({ objects, location, fence, now: later }, PARQUET_POLICY);

    expect(run.orphansDeleted).toBe(1);
    expect(await objects.exists(stray)).toBe(false);
    expect((await objects.list(`${table.s3.prefix}/`)).sort()).toEqual(tableKeys.sort());
    expectEachOnce(await icebergSeqCounts(table), 30);
    expectEachOnce(await parquetSeqCounts(location), 20);
  }, 60_000);

  it('statistics and partition statistics files the metadata names are kept, whatever their names', async () => {
    const table = tableRef('with_statistics');
    await tableWith(table, 2, 10);
    let loaded = (await loadIcebergTable(objects, table))!;
    const snapshotId = currentSnapshot(loaded.metadata)!['snapshot-id'];
    // A Puffin file as Trino names it, and files whose names our own writers could have given
    // (an engine may name its files anything): the metadata names them all, so none is an orphan.
    const statistics = [metadataFileKey(table, `${snapshotId}-${randomUUID()}.stats`), metadataFileKey(table, `${randomUUID()}-m0.avro`)];
    const partitionStatistics = [metadataFileKey(table, `partition-stats-${snapshotId}-${randomUUID()}.parquet`), metadataFileKey(table, `snap-${snapshotId}-1-${randomUUID()}.avro`)];
    for (const key of [...statistics, ...partitionStatistics]) await objects.put(key, new Uint8Array([0x50, 0x46, 0x41, 0x31]));
    const next = {
      ...loaded.metadata,
      'last-updated-ms': loaded.metadata['last-updated-ms'] + 1,
      statistics: statistics.map((key) => ({ 'snapshot-id': snapshotId, 'statistics-path': objects.url(key), 'file-size-in-bytes': 4, 'file-footer-size-in-bytes': 4, 'blob-metadata': [] })),
      'partition-statistics': partitionStatistics.map((key) => ({ 'snapshot-id': snapshotId, 'statistics-path': objects.url(key), 'file-size-in-bytes': 4 })),
      'metadata-log': [...loaded.metadata['metadata-log'], { 'metadata-file': loaded.metadataPath, 'timestamp-ms': loaded.metadata['last-updated-ms'] }],
    };
    loaded = await commitMetadataVersion(objects, table, loaded, next, fence);
    const abandoned = await abandonedIcebergAttempt(table);

    const deleted = await removeIcebergOrphans(context(table), loaded, MIN_AGE_MS);

    expect(deleted).toBe(abandoned.length);
    for (const key of [...statistics, ...partitionStatistics]) expect(await objects.exists(key), key).toBe(true);
    expectEachOnce(await icebergSeqCounts(table), 20);
  }, 60_000);
});

describe('orphan cleanup by a deposed leader', () => {
  it('Iceberg: deletes nothing once the fence refuses, so the successor’s commit in flight lands and the table reads every event once', async () => {
    const table = tableRef('zombie_cleanup');
    await tableWith(table, 2, 20);
    const loaded = (await loadIcebergTable(objects, table))!;
    // The successor has written its data files, manifest and manifest list and waits to create the metadata file.
    let release!: () => void;
    let arrived!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const atCommit = new Promise<void>((resolve) => (arrived = resolve));
    const held = new Proxy(objects, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property, target);
        if (property === 'putIfAbsent') {
          return async (key: string, body: Uint8Array | string, contentType: string) => {
            if (key.endsWith('.metadata.json')) {
              arrived();
              await gate;
            }
            return target.putIfAbsent(key, body, contentType);
          };
        }
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const successor = commitIcebergBatch(held, table, loaded, events(41, 20), { term: 2, mayCommit: () => true, nowMs: Date.now(), writerId: 'test', afterSeq: 40 });
    await atCommit;
    const inFlight = (await objects.list(`${table.s3.prefix}/`)).length;

    // The deposed leader's clock (or a small minimum age) makes the successor's files look old enough.
    const deposed = removeIcebergOrphans(context(table, { fence: { term: 1, mayCommit: () => false } }), loaded, MIN_AGE_MS);
    await expect(deposed).rejects.toMatchObject({ code: AuditErrorCode.NOT_LEADER });
    expect((await objects.list(`${table.s3.prefix}/`)).length).toBe(inFlight);

    release();
    await successor;
    expectEachOnce(await icebergSeqCounts(table), 60);
  }, 60_000);

  it('Iceberg: the fence is asked before each delete, so a leader deposed mid-cleanup stops there', async () => {
    const table = tableRef('deposed_mid_cleanup');
    await tableWith(table, 1, 10);
    const loaded = (await loadIcebergTable(objects, table))!;
    const abandoned = await abandonedIcebergAttempt(table);
    let allowed = 1;
    const flipping: CommitFence = { term: 1, mayCommit: () => allowed-- > 0 };
    await expect(removeIcebergOrphans(context(table, { fence: flipping }), loaded, MIN_AGE_MS)).rejects.toMatchObject({ code: AuditErrorCode.NOT_LEADER, message: expect.stringContaining('after deleting 1 of 3') });
    const left = await Promise.all(abandoned.map((key) => objects.exists(key)));
    expect(left.filter(Boolean)).toHaveLength(2);
    expectEachOnce(await icebergSeqCounts(table), 10);
  }, 60_000);

  it('Parquet: deletes nothing once the fence refuses; a file the successor has not committed yet stays', async () => {
    const location: S3Location = { bucket: BUCKET, prefix: 'pqzombie' };
    await commitParquetBatch(objects, location, events(1, 10), { term: 1, nowMs: Date.now(), afterSeq: 0, mayCommit: () => true });
    // The successor's batch file, written, its marker not yet.
    const inFlight = `${location.prefix}/event_date=2026-05-01/part-0000000000000011-t2-inflight.parquet`;
    await objects.put(inFlight, new Uint8Array([1, 2, 3]));
    const deposed = runParquetMaintenance({ objects, location, fence: { term: 1, mayCommit: () => false }, now: later }, PARQUET_POLICY);
    await expect(deposed).rejects.toMatchObject({ code: AuditErrorCode.NOT_LEADER });
    expect(await objects.exists(inFlight)).toBe(true);
    expectEachOnce(await parquetSeqCounts(location), 10);
  }, 60_000);
});
