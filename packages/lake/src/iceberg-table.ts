import { randomUUID } from 'node:crypto';
import { newTableMetadata, parseTableMetadata, readWatermarkFromMetadata, type IcebergTableMetadata, type ManifestFile } from '@auditlake/format';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { ObjectStore } from './object-store.js';
import { metadataFileKey, metadataVersionKey, versionHintKey, type IcebergTableRef } from './iceberg-table-ref.js';
import type { S3Connections } from './s3-connections.js';
import type { Watermark } from './watermark.js';

/** The table's current version, as a file-system catalog reader finds it. */
export interface LoadedTable {
  version: number;
  metadata: IcebergTableMetadata;
  metadataPath: string;
  /**
   * What `version-hint.text` named when loadIcebergTable read it (0: none, or not a number):
   * below `version`, readers that trust the hint (icebird, DuckDB) read an older version until
   * it is moved (the sweep does: a hint write that failed after its commit left them a batch
   * behind for as long as the tier was idle).
   */
  hintVersion?: number;
  /**
   * The manifests a manifest list names, when the process that holds this table wrote that list
   * itself (a sweep commit): the next commit then need not fetch it again. Keyed by the list's
   * path, which is attempt-unique and never rewritten, so it is right for whichever version
   * names that list and is only ever used for it.
   */
  knownManifestList?: { path: string; files: ManifestFile[] };
}

/**
 * Loads the current version: the hint, then probing forward for newer versions (a hint
 * can lag behind a commit), as Java's HadoopTableOperations does. Undefined: no table yet.
 */
export async function loadIcebergTable(objects: ObjectStore, table: IcebergTableRef): Promise<LoadedTable | undefined> {
  const hintBytes = await objects.find(versionHintKey(table));
  const hint = hintBytes === undefined ? '' : new TextDecoder().decode(hintBytes).trim();
  const hintVersion = /^\d+$/.test(hint) && Number.isSafeInteger(Number(hint)) ? Number(hint) : 0;
  if (hintVersion > 0) {
    const loaded = await loadFromVersion(objects, table, hintVersion);
    if (loaded !== undefined) return { ...loaded, hintVersion };
    // The hint names a version metadata cleanup has deleted, and none after it is there: a
    // deposed leader's hint write, in flight while its successor committed on and cleaned up,
    // landed last. Trusted, it made the table unreadable to every reader and writer for good
    // (review); the newest version listed is the table's, as for a table without a hint.
  }
  const keys = await objects.list(metadataFileKey(table, 'v'));
  let version = 0;
  for (const key of keys) {
    const match = /\/v(\d+)\.metadata\.json$/.exec(key);
    if (match) version = Math.max(version, Number(match[1]));
  }
  if (version === 0) return undefined;
  const loaded = await loadFromVersion(objects, table, version);
  if (loaded === undefined) throw new AuditError(AuditErrorCode.OBJECT_NOT_FOUND, `${objects.url(metadataVersionKey(table, version))} was listed and is gone: the table's metadata changed while it was read; read it again`, { retryable: true });
  return { ...loaded, hintVersion };
}

/** The table at `version` or the newest version after it (probed one by one); undefined when `version` is not there and no later one is. */
async function loadFromVersion(objects: ObjectStore, table: IcebergTableRef, from: number): Promise<LoadedTable | undefined> {
  let version = from;
  while (await objects.exists(metadataVersionKey(table, version + 1))) version++;
  const bytes = await objects.find(metadataVersionKey(table, version));
  if (bytes === undefined) return undefined;
  const metadata = parseTableMetadata(new TextDecoder().decode(bytes));
  return { version, metadata, metadataPath: objects.url(metadataVersionKey(table, version)) };
}

/** Points `version-hint.text` at `version`. */
export async function putVersionHint(objects: ObjectStore, table: IcebergTableRef, version: number): Promise<void> {
  // Digits only: pyiceberg rejects a hint with a trailing newline.
  await objects.put(versionHintKey(table), String(version), 'text/plain');
}

/**
 * Moves the hint forward to `version`, never back: a late hint write of an older commit (a
 * deposed leader's, still in flight) must not point readers that trust the hint at an old
 * version. Not atomic — a write can still land between the read and the put — but the hint is
 * only a hint: readers here probe forward from it, and list the versions when the one it names
 * is gone (loadIcebergTable), so a stale one hides nothing. Answers the version the hint named
 * before (0: none, or not a number).
 */
export async function advanceVersionHint(objects: ObjectStore, table: IcebergTableRef, version: number): Promise<number> {
  const current = await objects.find(versionHintKey(table));
  const known = current ? Number(new TextDecoder().decode(current).trim()) : 0;
  if (Number.isSafeInteger(known) && known >= version) return known;
  await putVersionHint(objects, table, version);
  return Number.isSafeInteger(known) ? known : 0;
}

/** Creates the namespace marker (the file-system catalog's directory) if missing. */
export async function ensureNamespace(connections: S3Connections, table: IcebergTableRef): Promise<void> {
  const objects = connections.bucket(table.connectionId, table.s3.bucket);
  if (!(await objects.exists(table.namespaceKey))) await objects.put(table.namespaceKey, new Uint8Array(0), 'application/x-directory');
}

/** Creates `v1.metadata.json` (empty table) and the hint, unless the table exists. */
export async function ensureIcebergTable(objects: ObjectStore, table: IcebergTableRef, nowMs: number): Promise<LoadedTable> {
  const loaded = await loadIcebergTable(objects, table);
  if (loaded) return loaded;
  const metadata = newTableMetadata({ location: table.location, tableUuid: randomUUID(), nowMs });
  // Another creator got there first: theirs is the table.
  if (!(await objects.putIfAbsent(metadataVersionKey(table, 1), JSON.stringify(metadata), 'application/json'))) {
    const theirs = await loadIcebergTable(objects, table);
    if (theirs) return theirs;
  }
  await putVersionHint(objects, table, 1);
  return { version: 1, metadata, metadataPath: objects.url(metadataVersionKey(table, 1)) };
}

/** The tiering watermark a table's current snapshot records (the table's own word). */
export function tableWatermark(loaded: LoadedTable | undefined): Watermark | undefined {
  if (!loaded) return undefined;
  const mark = readWatermarkFromMetadata(loaded.metadata);
  if (!mark) return undefined;
  return { seq: Number(mark.seq), ingestTs: mark.ingestTs ?? 0 };
}
