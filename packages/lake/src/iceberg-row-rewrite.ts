import { randomInt, randomUUID } from 'node:crypto';
import {
  addedEntry,
  AuditParquetFile,
  bytesSource,
  currentSchema,
  dayPartitionPath,
  decodeLongBound,
  dropRefsOffCurrent,
  encodeManifest,
  encodeManifestList,
  icebergParquetKvMetadata,
  ManifestEntryStatus,
  manifestFileFor,
  replaceSnapshot,
  SEQ_FIELD_ID,
  summarizeAddedFiles,
  updateProperties,
  type DataFile,
  type IcebergTableMetadata,
  type ManifestEntry,
  type ManifestFile,
  type TieredEvent,
} from '@auditlake/format';
import { AuditError, AuditErrorCode, isAuditError } from '@auditlake/model';
import { carriedSummary, COMMIT_ATTEMPTS_MAX, type MaintenanceContext } from './iceberg-maintenance-context.js';
import { currentManifests, isLive, ManifestCache, snapshotReach, type ResolvedManifest } from './iceberg-table-files.js';
import { expireIcebergSnapshots, reachedOnlyByExpiring } from './iceberg-snapshot-expiry.js';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { deletableKeys, metadataFileKey, s3Key } from './iceberg-table-ref.js';
import { loadIcebergTable, type LoadedTable } from './iceberg-table.js';
import { commitMetadataVersion } from './iceberg-version-commit.js';
import { joinKey } from './s3-location.js';
import { INLINE_TIER_FILE_ENCODER } from './tier-file-encoding.js';

/**
 * Table property: the data files a row-level rewrite replaced and that must still be deleted
 * (a JSON array of paths). Written in the rewrite's own commit and removed once they are gone,
 * so a crash anywhere in between leaves the work named in the table for the next pass.
 */
export const PURGE_FILES_PROPERTY = 'auditlake.rewrite.purge-files';

/**
 * Table property: the seq through which the log's erasure records are applied to the table's
 * rows (absent: none yet, 0). Moved forward by the commit that applies them, and by a sweep's
 * append of a batch that holds no erasure record when it was at the batch's start.
 */
export const ERASURES_APPLIED_THROUGH_PROPERTY = 'auditlake.erasure.applied-through-seq';

/** {@link ERASURES_APPLIED_THROUGH_PROPERTY} of a table's metadata (0 when absent). */
export function erasuresAppliedThrough(metadata: { properties: Readonly<Record<string, string>> }): number {
  const text = metadata.properties[ERASURES_APPLIED_THROUGH_PROPERTY];
  const value = text === undefined ? 0 : Number(text);
  if (!Number.isSafeInteger(value) || value < 0) throw new AuditError(AuditErrorCode.TABLE_INVALID, `table property ${ERASURES_APPLIED_THROUGH_PROPERTY} must be a seq, got ${JSON.stringify(text)}`);
  return value;
}

/** A row-level change: which rows may change (by seq) and what each becomes. */
export interface RowRewrite {
  /** Seqs of the rows that may change: a file whose seq bounds hold none of them is not read. */
  seqs: readonly number[];
  /** The row as rewritten, or undefined when it stays as it is. */
  rewrite(row: TieredEvent): TieredEvent | undefined;
  /** Table properties the rewrite's commit sets (e.g. how far the log's erasures are applied). */
  properties: Readonly<Record<string, string>>;
}

export interface RowRewriteResult {
  loaded: LoadedTable;
  filesRewritten: number;
  rowsRewritten: number;
}

/** False only when the file's seq bounds prove it holds none of `seqs` (files without bounds are read). */
function mayHoldSeqs(file: DataFile, seqs: readonly number[]): boolean {
  const lower = file.lower_bounds?.find((bound) => bound.key === SEQ_FIELD_ID)?.value;
  const upper = file.upper_bounds?.find((bound) => bound.key === SEQ_FIELD_ID)?.value;
  if (lower === undefined || upper === undefined) return true;
  const lo = Number(decodeLongBound(lower));
  const hi = Number(decodeLongBound(upper));
  return seqs.some((seq) => seq >= lo && seq <= hi);
}

/** Reads one live file, rewrites its rows; undefined when no row changes. */
async function rewriteFile(context: MaintenanceContext, file: DataFile, change: RowRewrite): Promise<{ rows: TieredEvent[]; changed: number } | undefined> {
  const bytes = await context.objects.get(s3Key(context.table, file.file_path));
  const rows = await (await AuditParquetFile.open(bytesSource(bytes))).read({});
  if (rows.length !== file.record_count) {
    throw new AuditError(AuditErrorCode.TABLE_INVALID, `${file.file_path} holds ${rows.length} rows, its manifest entry says ${file.record_count}`);
  }
  let changed = 0;
  const out = rows.map((row) => {
    const next = change.rewrite(row);
    if (next === undefined) return row;
    changed++;
    return next;
  });
  return changed === 0 ? undefined : { rows: out, changed };
}

/**
 * The entries of a manifest the rewrite touches: a replaced file → DELETED, and its bounds
 * dropped (they are min/max of its values, the very values a rewrite may be removing); live
 * files EXISTING with their sequence numbers explicit; entries other snapshots deleted dropped,
 * so no manifest of the new snapshot names a file that may hold an old value.
 */
function rewrittenEntries(manifest: ResolvedManifest, replaced: ReadonlySet<string>, snapshotId: number): ManifestEntry[] {
  return manifest.entries.filter(isLive).map((entry) =>
    replaced.has(entry.data_file.file_path)
      ? { ...entry, status: ManifestEntryStatus.DELETED, snapshot_id: snapshotId, data_file: { ...entry.data_file, lower_bounds: null, upper_bounds: null } }
      : { ...entry, status: ManifestEntryStatus.EXISTING },
  );
}

/**
 * A copy-on-write row-level rewrite (spec operation `overwrite`) of the table's current
 * snapshot: every live data file that holds a row `change` rewrites is written again with every
 * row (the changed ones changed, all columns of the others as they were), and one commit swaps
 * them: a new manifest adds the new files; every manifest that listed a replaced file, or still
 * lists a file an earlier snapshot deleted, is rewritten (replaced → DELETED without bounds,
 * others EXISTING, old DELETED dropped); the rest are carried. The commit sets `change.properties`
 * and {@link PURGE_FILES_PROPERTY} naming the replaced files, which {@link purgeReplacedFiles}
 * then deletes. With nothing to rewrite, it commits only the properties (when they differ).
 * The row counts are checked before the commit (a rewrite keeps every row). When another
 * commit wins meanwhile, the swap is re-applied on the new version as long as every replaced
 * file is still live there; else AUDIT_OBJECT_EXISTS (the new files stay unreferenced, and the
 * caller's next pass starts over).
 */
export async function rewriteIcebergRows(context: MaintenanceContext, loaded: LoadedTable, change: RowRewrite): Promise<RowRewriteResult> {
  const schema = currentSchema(loaded.metadata);
  const encoder = context.encoder ?? INLINE_TIER_FILE_ENCODER;
  const replacedFiles: DataFile[] = [];
  const addedFiles: DataFile[] = [];
  let rowsRewritten = 0;
  const attempt = `t${context.fence.term}-${randomUUID()}`;
  const candidates = (await currentManifests(context.objects, context.table, loaded.metadata))
    .flatMap((manifest) => manifest.entries.filter(isLive).map((entry) => entry.data_file))
    .filter((file) => file.content === 0 && mayHoldSeqs(file, change.seqs));
  for (const file of candidates) {
    const rewritten = await rewriteFile(context, file, change);
    if (rewritten === undefined) continue;
    const encoded = await encoder.encode(rewritten.rows, { kvMetadata: icebergParquetKvMetadata(schema), icebergDataFile: true });
    if (!encoded.dataFile) throw new Error('assertion failed: the encoder built no data_file record');
    if (encoded.rows !== file.record_count) throw new Error(`assertion failed: a row rewrite of ${file.file_path} read ${file.record_count} rows and wrote ${encoded.rows}`);
    // Attempt-unique: a rewrite never overwrites another writer's file.
    const key = joinKey(context.table.s3.prefix, `data/${dayPartitionPath(file.partition.event_time_day ?? 0)}/rewritten-${attempt}-${replacedFiles.length}.parquet`);
    await context.objects.put(key, encoded.bytes, 'application/vnd.apache.parquet');
    replacedFiles.push(file);
    addedFiles.push({ ...encoded.dataFile, file_path: context.objects.url(key) });
    rowsRewritten += rewritten.changed;
  }
  await context.onStep?.('rewrite-written');
  if (replacedFiles.length === 0) return { loaded: await commitProperties(context, loaded, change.properties, []), filesRewritten: 0, rowsRewritten: 0 };

  const replaced = new Set(replacedFiles.map((file) => file.file_path));
  const snapshotId = randomInt(1, 2 ** 47);
  const addedEntries = addedFiles.map((file) => addedEntry(file, snapshotId));
  const addedManifestBytes = encodeManifest(addedEntries, { schema });
  const addedManifestKey = metadataFileKey(context.table, `${attempt}-m0.avro`);
  await context.objects.put(addedManifestKey, addedManifestBytes, 'application/octet-stream');

  let base = loaded;
  for (let attemptNumber = 1; ; attemptNumber++) {
    const manifests = await currentManifests(context.objects, context.table, base.metadata);
    const live = new Set(manifests.flatMap((m) => m.entries.filter(isLive).map((e) => e.data_file.file_path)));
    if (![...replaced].every((path) => live.has(path))) {
      throw new AuditError(AuditErrorCode.OBJECT_EXISTS, `a row rewrite of ${context.table.identifier} lost to a commit that changed its files; it starts over`);
    }
    const sequenceNumber = base.metadata['last-sequence-number'] + 1;
    const rows: ManifestFile[] = [
      manifestFileFor({ manifestPath: context.objects.url(addedManifestKey), manifestLengthBytes: addedManifestBytes.byteLength, entries: addedEntries, snapshotId, sequenceNumber }),
    ];
    for (const [index, manifest] of manifests.entries()) {
      const touched = manifest.entries.some((entry) => !isLive(entry) || replaced.has(entry.data_file.file_path));
      if (!touched) {
        rows.push(manifest.file);
        continue;
      }
      const entries = rewrittenEntries(manifest, replaced, snapshotId);
      if (entries.length === 0) continue;
      const bytes = encodeManifest(entries, { schema: currentSchema(base.metadata) });
      const key = metadataFileKey(context.table, `${attempt}-${attemptNumber}-m${index + 1}.avro`);
      await context.objects.put(key, bytes, 'application/octet-stream');
      rows.push(manifestFileFor({ manifestPath: context.objects.url(key), manifestLengthBytes: bytes.byteLength, entries, snapshotId, sequenceNumber }));
    }
    const parentId = base.metadata['current-snapshot-id'];
    const listBytes = encodeManifestList(rows, { snapshotId, parentSnapshotId: parentId > 0 ? parentId : null, sequenceNumber });
    const listKey = metadataFileKey(context.table, `snap-${snapshotId}-${attemptNumber}-${attempt}.avro`);
    await context.objects.put(listKey, listBytes, 'application/octet-stream');
    const snapshot = replaceSnapshot(base.metadata, {
      operation: 'overwrite',
      snapshotId,
      manifestListPath: context.objects.url(listKey),
      nowMs: context.now(),
      previousMetadataPath: base.metadataPath,
      addedFiles: summarizeAddedFiles(addedFiles),
      deletedFiles: { records: replacedFiles.reduce((s, f) => s + f.record_count, 0), files: replacedFiles.length, sizeBytes: replacedFiles.reduce((s, f) => s + f.file_size_in_bytes, 0) },
      // The watermark (and the newest checkpoint) stay in the current snapshot's summary.
      summaryExtra: carriedSummary(base.metadata),
      metadataLogEntriesMax: context.metadataLogEntriesMax,
    });
    const purge = [...new Set([...purgeList(base), ...replaced])];
    const next = { ...snapshot, properties: { ...snapshot.properties, ...change.properties, [PURGE_FILES_PROPERTY]: JSON.stringify(purge) } };
    try {
      const committed = await commitMetadataVersion(context.objects, context.table, base, next, context.fence);
      await context.onStep?.('rewrite-committed');
      return { loaded: committed, filesRewritten: replacedFiles.length, rowsRewritten };
    } catch (err) {
      if (!isAuditError(err, AuditErrorCode.OBJECT_EXISTS) || attemptNumber >= COMMIT_ATTEMPTS_MAX) throw err;
      const reloaded = await loadIcebergTable(context.objects, context.table);
      if (!reloaded) throw err;
      base = reloaded;
    }
  }
}

/** The replaced files a table still names for deletion. */
function purgeList(loaded: LoadedTable): string[] {
  const text = loaded.metadata.properties[PURGE_FILES_PROPERTY];
  if (text === undefined) return [];
  const value = JSON.parse(text) as unknown;
  if (!Array.isArray(value) || !value.every((path) => typeof path === 'string')) {
    throw new AuditError(AuditErrorCode.TABLE_INVALID, `table property ${PURGE_FILES_PROPERTY} must be a JSON array of paths`);
  }
  return value;
}

/** Commits `set` (and drops `remove`) as a properties-only version; the table as it is when nothing changes. Re-applied when another commit wins. */
export async function commitProperties(context: MaintenanceContext, loaded: LoadedTable, set: Readonly<Record<string, string>>, remove: readonly string[]): Promise<LoadedTable> {
  return commitChange(context, loaded, (base) => updateProperties(base.metadata, { set, remove, nowMs: context.now(), previousMetadataPath: base.metadataPath, metadataLogEntriesMax: context.metadataLogEntriesMax }));
}

/** Commits the version `change` makes of the table as it is (undefined: nothing to commit); made again on the table as it is then when another commit wins. */
async function commitChange(context: MaintenanceContext, loaded: LoadedTable, change: (base: LoadedTable) => IcebergTableMetadata | undefined): Promise<LoadedTable> {
  let base = loaded;
  for (let attemptNumber = 1; ; attemptNumber++) {
    const next = change(base);
    if (next === undefined) return base;
    try {
      return await commitMetadataVersion(context.objects, context.table, base, next, context.fence);
    } catch (err) {
      if (!isAuditError(err, AuditErrorCode.OBJECT_EXISTS) || attemptNumber >= COMMIT_ATTEMPTS_MAX) throw err;
      const reloaded = await loadIcebergTable(context.objects, context.table);
      if (!reloaded) throw err;
      base = reloaded;
    }
  }
}

export interface PurgeResult {
  loaded: LoadedTable;
  snapshotsExpired: number;
  filesDeleted: number;
}

/**
 * Makes what a row rewrite replaced unreadable from the bucket: every snapshot but the current
 * one is expired (their manifest lists, manifests and the data files only they reach are
 * deleted — the pre-rewrite files, and files an earlier compaction replaced, among them), then
 * the files {@link PURGE_FILES_PROPERTY} names are deleted (the current snapshot lists them
 * only as DELETED), then the property is removed. Idempotent: a pass stopped anywhere is
 * finished by the next (a delete of a file already gone succeeds). No-op without the property.
 */
export async function purgeReplacedFiles(context: MaintenanceContext, loaded: LoadedTable): Promise<PurgeResult> {
  if (loaded.metadata.properties[PURGE_FILES_PROPERTY] === undefined) return { loaded, snapshotsExpired: 0, filesDeleted: 0 };
  // What the expiry below will delete is added to the property first: older manifests hold
  // column bounds (values) and older data files the values themselves, and a crash after the
  // expiry's commit, before its deletes, would otherwise leave them named by nothing until
  // orphan cleanup (days). Named here, the next pass deletes them.
  // Branches and tags other than main go first: the expiry keeps every snapshot a ref names,
  // and one made before the rewrite (by another engine) would keep the values readable.
  const unpinned = await commitChange(context, loaded, (base) => dropRefsOffCurrent(base.metadata, { nowMs: context.now(), previousMetadataPath: base.metadataPath, metadataLogEntriesMax: context.metadataLogEntriesMax }));
  const expiring = await reachedOnlyByExpiring(context, unpinned, 1);
  // Added to the list as the table holds it when committing (a retry after another commit).
  const recorded = await commitChange(context, unpinned, (base) => {
    const listed = purgeList(base);
    const unlisted = expiring.filter((path) => !listed.includes(path));
    if (unlisted.length === 0) return undefined;
    return updateProperties(base.metadata, { set: { [PURGE_FILES_PROPERTY]: JSON.stringify([...listed, ...unlisted]) }, nowMs: context.now(), previousMetadataPath: base.metadataPath, metadataLogEntriesMax: context.metadataLogEntriesMax });
  });
  const paths = [...new Set(purgeList(recorded))];
  // No grace: the replaced files hold the erased values, which must leave the bucket now.
  const expired = await expireIcebergSnapshots(context, recorded, 1, 0);
  const live = new Set((await currentManifests(context.objects, context.table, expired.loaded.metadata)).flatMap((m) => m.entries.filter(isLive).map((e) => e.data_file.file_path)));
  if (paths.some((path) => live.has(path))) throw new Error(`assertion failed: a replaced file is live again in ${context.table.identifier}`);
  // Never a file a snapshot the expiry kept still reads (a tag another engine put on an old
  // snapshot since the refs were dropped): the table stays readable; such a file keeps its
  // values. Its own entries (a manifest list, its manifests) and live data files count; a file
  // a kept snapshot lists as DELETED does not (the current one lists every replaced file so).
  const stillRead = new Set<string>();
  const cache = new ManifestCache();
  for (const snapshot of expired.loaded.metadata.snapshots) await snapshotReach(context.objects, context.table, snapshot, cache, stillRead, true);
  const doomed = paths.filter((path) => !stillRead.has(path));
  await context.onStep?.('purge-expired');
  const keys = deletableKeys(context.table, doomed);
  await mapBounded(keys, OBJECT_REQUESTS_IN_FLIGHT_MAX, (key) => context.objects.delete(key));
  const committed = await commitProperties(context, expired.loaded, {}, [PURGE_FILES_PROPERTY]);
  return { loaded: committed, snapshotsExpired: expired.snapshotsExpired, filesDeleted: expired.filesDeleted + keys.length };
}
