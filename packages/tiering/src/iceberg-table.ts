import { randomInt, randomUUID } from 'node:crypto';
import {
  addedEntry,
  currentSnapshot,
  dataFileFromParquet,
  dayOrdinal,
  dayPartitionPath,
  decodeManifestList,
  encodeAuditParquet,
  encodeManifest,
  encodeManifestList,
  icebergParquetKvMetadata,
  manifestFileFor,
  newTableMetadata,
  parseTableMetadata,
  appendSnapshot,
  readWatermarkFromMetadata,
  summarizeAddedFiles,
  watermarkSummary,
  type DataFile,
  type IcebergTableMetadata,
} from '@auditlake/format';
import type { IcebergCatalogConfig, StoredEvent } from '@auditlake/model';
import { encodeKeyNumber } from './key-number.js';
import type { ObjectStore, S3Connections } from './object-store.js';
import { joinKey, parseS3Location, type S3Location } from './s3-location.js';
import type { Watermark } from './watermark.js';

/** Where a `catalog.schema.table` lives: `<warehouse>/<schema>/<table>/` (a file-system catalog layout). */
export interface IcebergTableRef {
  identifier: string;
  /** `s3://bucket/warehouse/schema/table`, no trailing slash. */
  location: string;
  s3: S3Location;
  connectionId: string;
  namespaceKey: string;
}

/** Resolves `catalog.schema.table` against the configured catalogs. */
export function resolveIcebergTable(identifier: string, catalogs: ReadonlyMap<string, IcebergCatalogConfig>): IcebergTableRef {
  const [catalogName = '', schema = '', table = ''] = identifier.split('.');
  const catalog = catalogs.get(catalogName);
  if (!catalog) throw new Error(`No catalog config for audit tier catalog '${catalogName}'`);
  const warehouse = parseS3Location(catalog.warehouse);
  if (!warehouse) throw new Error(`catalog '${catalogName}' warehouse must be s3://bucket/prefix: ${catalog.warehouse}`);
  const prefix = joinKey(warehouse.prefix, `${schema}/${table}`);
  return {
    identifier,
    location: `s3://${warehouse.bucket}/${prefix}`,
    s3: { bucket: warehouse.bucket, prefix },
    connectionId: catalog.connectionId,
    namespaceKey: joinKey(warehouse.prefix, `${schema}/`),
  };
}

/** The table's current version, as a file-system catalog reader finds it. */
export interface LoadedTable {
  version: number;
  metadata: IcebergTableMetadata;
  metadataPath: string;
}

const HINT = 'metadata/version-hint.text';

function metadataKey(table: IcebergTableRef, version: number): string {
  return joinKey(table.s3.prefix, `metadata/v${version}.metadata.json`);
}

function isMissing(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}

async function exists(objects: ObjectStore, key: string): Promise<boolean> {
  try {
    await objects.size(key);
    return true;
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  }
}

/**
 * Loads the current version: the hint, then probing forward for newer versions (a hint
 * can lag behind a commit), as Java's HadoopTableOperations does. Undefined: no table yet.
 */
export async function loadIcebergTable(objects: ObjectStore, table: IcebergTableRef): Promise<LoadedTable | undefined> {
  let version = 0;
  try {
    const hint = new TextDecoder().decode(await objects.get(joinKey(table.s3.prefix, HINT))).trim();
    if (/^\d+$/.test(hint)) version = Number(hint);
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  if (version === 0) {
    // No hint: find versions by listing (a table created by someone without a hint).
    const keys = await objects.list(joinKey(table.s3.prefix, 'metadata/v'));
    for (const key of keys) {
      const match = /\/v(\d+)\.metadata\.json$/.exec(key);
      if (match) version = Math.max(version, Number(match[1]));
    }
    if (version === 0) return undefined;
  }
  while (await exists(objects, metadataKey(table, version + 1))) version++;
  const metadataPath = `s3://${table.s3.bucket}/${metadataKey(table, version)}`;
  const metadata = parseTableMetadata(new TextDecoder().decode(await objects.get(metadataKey(table, version))));
  return { version, metadata, metadataPath };
}

async function putHint(objects: ObjectStore, table: IcebergTableRef, version: number): Promise<void> {
  // Digits only: pyiceberg rejects a hint with a trailing newline.
  await objects.put(joinKey(table.s3.prefix, HINT), String(version), 'text/plain');
}

/** Creates the namespace marker (the file-system catalog's directory) if missing. */
export async function ensureNamespace(connections: S3Connections, table: IcebergTableRef): Promise<void> {
  const objects = connections.bucket(table.connectionId, table.s3.bucket);
  if (!(await exists(objects, table.namespaceKey))) await objects.put(table.namespaceKey, new Uint8Array(0), 'application/x-directory');
}

/** Creates `v1.metadata.json` (empty table) and the hint, unless the table exists. */
export async function ensureIcebergTable(objects: ObjectStore, table: IcebergTableRef, nowMs: number): Promise<LoadedTable> {
  const loaded = await loadIcebergTable(objects, table);
  if (loaded) return loaded;
  const metadata = newTableMetadata({ location: table.location, tableUuid: randomUUID(), nowMs });
  await objects.putIfAbsent(metadataKey(table, 1), JSON.stringify(metadata), 'application/json');
  await putHint(objects, table, 1);
  return { version: 1, metadata, metadataPath: `s3://${table.s3.bucket}/${metadataKey(table, 1)}` };
}

/** The tiering watermark a table's current snapshot records (the table's own word). */
export function tableWatermark(loaded: LoadedTable | undefined): Watermark | undefined {
  if (!loaded) return undefined;
  const mark = readWatermarkFromMetadata(loaded.metadata);
  if (!mark) return undefined;
  return { seq: Number(mark.seq), ingestTs: mark.ingestTs ?? 0 };
}

export interface IcebergCommitResult {
  version: number;
  watermark: Watermark;
  bytes: number;
  files: number;
}

/**
 * One sweep = one commit: data files per day, one manifest, a manifest list carrying the
 * previous manifests, then `v(N+1).metadata.json` with the watermark in the snapshot summary
 * (created only if absent, then read back to check it is ours), then the hint. A crash
 * before the metadata file leaves only unreferenced files: readers never see them and the
 * successor re-reads the watermark from the table, so nothing is tiered twice.
 */
export async function commitIcebergBatch(
  objects: ObjectStore,
  table: IcebergTableRef,
  loaded: LoadedTable,
  batch: readonly StoredEvent[],
  context: { term: number; nowMs: number; writerId: string; mayCommit: () => boolean; beforeCommit?: () => void },
): Promise<IcebergCommitResult> {
  const first = batch[0];
  const last = batch[batch.length - 1];
  if (!first || !last) throw new TypeError('commitIcebergBatch needs at least one event');
  const snapshotId = randomInt(1, 2 ** 47);
  const attempt = randomUUID();
  const byDay = new Map<number, StoredEvent[]>();
  for (const event of batch) {
    const day = dayOrdinal(event.timestamp);
    const list = byDay.get(day);
    if (list) list.push(event);
    else byDay.set(day, [event]);
  }
  const dataFiles: DataFile[] = [];
  for (const [day, events] of [...byDay.entries()].sort(([a], [b]) => a - b)) {
    const bytes = encodeAuditParquet(events, { kvMetadata: icebergParquetKvMetadata() });
    const key = joinKey(table.s3.prefix, `data/${dayPartitionPath(day)}/${encodeKeyNumber(first.seq)}-${attempt.slice(0, 8)}.parquet`);
    await objects.put(key, bytes, 'application/vnd.apache.parquet');
    dataFiles.push(dataFileFromParquet({ events, filePath: `s3://${table.s3.bucket}/${key}`, fileSizeBytes: bytes.byteLength, parquetBytes: bytes }));
  }
  const sequenceNumber = loaded.metadata['last-sequence-number'] + 1;
  const entries = dataFiles.map((file) => addedEntry(file, snapshotId));
  const manifestBytes = encodeManifest(entries);
  const manifestKey = joinKey(table.s3.prefix, `metadata/${attempt}-m0.avro`);
  await objects.put(manifestKey, manifestBytes, 'application/octet-stream');
  const parent = currentSnapshot(loaded.metadata);
  const carried = parent ? decodeManifestList(await objects.get(s3Key(table, parent['manifest-list']))).files : [];
  const manifestFile = manifestFileFor({ manifestPath: `s3://${table.s3.bucket}/${manifestKey}`, manifestLengthBytes: manifestBytes.byteLength, entries, snapshotId, sequenceNumber });
  const listBytes = encodeManifestList([manifestFile, ...carried], { snapshotId, parentSnapshotId: parent?.['snapshot-id'] ?? null, sequenceNumber });
  const listKey = joinKey(table.s3.prefix, `metadata/snap-${snapshotId}-1-${attempt}.avro`);
  await objects.put(listKey, listBytes, 'application/octet-stream');
  const watermark: Watermark = { seq: last.seq, ingestTs: last.ingestTs };
  const next = appendSnapshot(loaded.metadata, {
    snapshotId,
    manifestListPath: `s3://${table.s3.bucket}/${listKey}`,
    nowMs: context.nowMs,
    addedFiles: summarizeAddedFiles(dataFiles),
    previousMetadataPath: loaded.metadataPath,
    summaryExtra: watermarkSummary({ seq: BigInt(last.seq), ingestTs: last.ingestTs, leaderTerm: context.term, writerId: context.writerId }),
  });
  context.beforeCommit?.();
  if (!context.mayCommit()) throw new Error('no longer the leader; the batch was not committed (its files are unreferenced)');
  const version = loaded.version + 1;
  const key = metadataKey(table, version);
  await objects.putIfAbsent(key, JSON.stringify(next), 'application/json');
  // Stores that ignore If-None-Match would let a deposed leader overwrite: check it is ours.
  const written = parseTableMetadata(new TextDecoder().decode(await objects.get(key)));
  if (written['current-snapshot-id'] !== snapshotId) throw new Error(`commit lost: v${version}.metadata.json was written by another committer`);
  await putHint(objects, table, version);
  return { version, watermark, bytes: dataFiles.reduce((s, f) => s + f.file_size_in_bytes, 0), files: dataFiles.length };
}

/** The bucket key of an `s3://bucket/key` path inside the table's bucket. */
export function s3Key(table: IcebergTableRef, path: string): string {
  const prefix = `s3://${table.s3.bucket}/`;
  if (!path.startsWith(prefix)) throw new Error(`path outside the table's bucket: ${path}`);
  return path.slice(prefix.length);
}
