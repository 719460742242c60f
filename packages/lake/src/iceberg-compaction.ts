import { randomInt, randomUUID } from 'node:crypto';
import {
  addedEntry,
  currentSchema,
  currentSnapshot,
  dayPartitionPath,
  encodeManifest,
  encodeManifestList,
  icebergParquetKvMetadata,
  ManifestEntryStatus,
  manifestFileFor,
  replaceSnapshot,
  summarizeAddedFiles,
  type DataFile,
  type IcebergSchema,
  type ManifestEntry,
  type ManifestFile,
} from '@auditlake/format';
import { AuditErrorCode, isAuditError } from '@auditlake/model';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { fetchGroupFiles, isSmallFile, smallFileGroups, type CompactionPass, type SmallFileFacts } from './compaction-passes.js';
import { carriedSummary, reloadTable, tableTurn, type MaintenanceContext } from './iceberg-maintenance-context.js';
import { currentManifests, isLive, ManifestCache, type ResolvedManifest } from './iceberg-table-files.js';
import { metadataFileKey, s3Key } from './iceberg-table-ref.js';
import { loadIcebergTable, type LoadedTable } from './iceberg-table.js';
import { commitMetadataVersion } from './iceberg-version-commit.js';
import { joinKey } from './s3-location.js';
import { INLINE_TIER_FILE_ENCODER } from './tier-file-encoding.js';

/**
 * Bytes of small files one compaction pass rewrites at most: a pass's memory and its hold on
 * the encoder stay bounded; the rest waits for the run's next pass (compactInPasses).
 */
export const COMPACTION_INPUT_BYTES_MAX = 256 * 1024 * 1024;

export interface CompactionResult extends CompactionPass {
  /** The version committed, or the one found when there was nothing to compact. */
  loaded: LoadedTable;
}

/** How compaction planning reads an Iceberg data file. */
const DATA_FILE_FACTS: SmallFileFacts<DataFile> = { day: (file) => file.partition.event_time_day ?? 0, key: (file) => file.file_path, bytes: (file) => file.file_size_in_bytes };

/**
 * Merges `files` (one day) into files near the target size through the context's encoder (a
 * worker thread in a node): sweep-size row groups copied as they are, smaller ones re-encoded
 * together (mergeAuditParquetFiles); returns their data_file records, computed from the merged
 * footers. Each input must hold the rows its manifest entry says. Writes nothing, and says which
 * are missing, when the bucket no longer holds some of `files` (fetchGroupFiles).
 */
async function writeCompacted(context: MaintenanceContext, schema: IcebergSchema, day: number, files: readonly DataFile[], targetFileSizeBytes: number): Promise<DataFile[] | { missing: DataFile[] }> {
  const fetched = await fetchGroupFiles(files, (file) => context.objects.find(s3Key(context.table, file.file_path)));
  if ('missing' in fetched) return fetched;
  const inputs = files.map((file, i) => ({ bytes: fetched.bytes[i] as Uint8Array, name: file.file_path, expectedRows: file.record_count }));
  const rowsIn = files.reduce((sum, file) => sum + file.record_count, 0);
  const inputBytes = files.reduce((sum, file) => sum + file.file_size_in_bytes, 0);
  const bytesPerRow = Math.max(1, inputBytes / Math.max(1, rowsIn));
  const rowsPerFile = Math.max(1, Math.floor(targetFileSizeBytes / bytesPerRow));
  const encoder = context.encoder ?? INLINE_TIER_FILE_ENCODER;
  const encoded = await encoder.rewrite(inputs, rowsPerFile, { kvMetadata: icebergParquetKvMetadata(schema), icebergDataFile: true });
  const attempt = `t${context.fence.term}-${randomUUID()}`;
  const written: DataFile[] = [];
  for (const [part, file] of encoded.entries()) {
    // Attempt-unique: a compaction never overwrites another writer's file.
    const key = joinKey(context.table.s3.prefix, `data/${dayPartitionPath(day)}/compacted-${attempt}-${part}.parquet`);
    await context.objects.put(key, file.bytes, 'application/vnd.apache.parquet');
    if (!file.dataFile) throw new Error('assertion failed: the encoder built no data_file record');
    written.push({ ...file.dataFile, file_path: context.objects.url(key) });
  }
  return written;
}

/** The paths of those of `missing` the table's current snapshot still lists live. */
async function stillLive(context: MaintenanceContext, missing: readonly DataFile[]): Promise<string[]> {
  const table = await loadIcebergTable(context.objects, context.table);
  if (table === undefined) return [];
  const live = new Set((await currentManifests(context.objects, context.table, table.metadata)).flatMap((manifest) => manifest.entries.filter(isLive).map((entry) => entry.data_file.file_path)));
  return missing.filter((file) => live.has(file.file_path)).map((file) => file.file_path);
}

/** The entries of a manifest that lists a removed file: removed → DELETED, the rest EXISTING, old DELETED dropped. */
function rewrittenEntries(manifest: ResolvedManifest, removed: ReadonlySet<string>, snapshotId: number): ManifestEntry[] {
  return manifest.entries.filter(isLive).map((entry) =>
    removed.has(entry.data_file.file_path)
      ? { ...entry, status: ManifestEntryStatus.DELETED, snapshot_id: snapshotId }
      : { ...entry, status: ManifestEntryStatus.EXISTING },
  );
}

/**
 * Compaction (spec operation `replace`): per day partition, the small live files are merged
 * into files near `targetFileSizeBytes` with exactly their rows, and one commit swaps them: a new
 * manifest adds the new files; each manifest that listed a replaced file is rewritten with it
 * DELETED (original sequence numbers explicit) and its other files EXISTING; other manifests
 * are carried unchanged. Before the commit the rows are counted again: a rewrite that would lose
 * or duplicate a row is refused. Reading and encoding happen outside the step's turn (the
 * sweep goes on meanwhile); the swap is built and committed in its turn on the table as it is
 * then, as long as every replaced file is still live there ({@link tableTurn}). One call is one
 * pass: it reads at most `inputBytesMax` of small files and says how many it left.
 */
export async function compactIcebergTable(context: MaintenanceContext, loaded: LoadedTable, targetFileSizeBytes: number, inputBytesMax = COMPACTION_INPUT_BYTES_MAX): Promise<CompactionResult> {
  // Planned in a turn on the table as it is then (a short one: no data is read), so the files
  // it names are the current snapshot's; manifests never change once written, so those read
  // here serve the swap's turn too.
  const cache = new ManifestCache();
  const plan = await tableTurn(context, loaded, async (base) => ({ base, ...smallFileGroups((await currentManifests(context.objects, context.table, base.metadata, cache)).flatMap((manifest) => manifest.entries.filter(isLive).map((entry) => entry.data_file)), DATA_FILE_FACTS, targetFileSizeBytes, inputBytesMax) }));
  const { groups } = plan;
  const left = plan.left > 0 ? { smallFilesLeft: plan.left } : {};
  if (groups.length === 0) return { loaded: plan.base, filesRewritten: 0, filesAdded: 0, smallFilesAdded: 0, ...left };
  const removedFiles: DataFile[] = [];
  /** Live files found missing (stillLive): their groups are left as they are. */
  const lost: string[] = [];
  const lostFiles = () => (lost.length > 0 ? { lostFiles: lost } : {});
  const addedFiles: DataFile[] = [];
  // Rows keep every column they have, the record chain's included (row groups copied whole, or
  // rows read whole and written whole under the table's current schema: a table that gained
  // columns by evolution says so here too).
  const schema = currentSchema(plan.base.metadata);
  for (const group of groups) {
    const written = await writeCompacted(context, schema, group[0]?.partition.event_time_day ?? 0, group, targetFileSizeBytes);
    if ('missing' in written) {
      // A file gone since the plan was made may have been replaced meanwhile (an erasure's
      // overwrite deletes the files it replaced at once): the swap would refuse the group
      // anyway, and the next pass plans the day from the table as it is. A file the table still
      // holds live is lost: the group is left as it is and the run, once its other steps are
      // done, fails naming it (failOnLostFiles; review: skipped silently, it went unseen).
      lost.push(...(await stillLive(context, written.missing)));
      continue;
    }
    const rowsIn = group.reduce((sum, file) => sum + file.record_count, 0);
    const rowsOut = written.reduce((sum, file) => sum + file.record_count, 0);
    if (rowsIn !== rowsOut) throw new Error(`assertion failed: compaction of ${group.length} files read ${rowsIn} rows and wrote ${rowsOut}`);
    // One by one, not push(...group): a day of many small files is more arguments than a call takes.
    for (const file of group) removedFiles.push(file);
    for (const file of written) addedFiles.push(file);
  }
  if (removedFiles.length === 0) return { loaded: plan.base, filesRewritten: 0, filesAdded: 0, smallFilesAdded: 0, ...left, ...lostFiles() };
  const removed = new Set(removedFiles.map((file) => file.file_path));
  const snapshotId = randomInt(1, 2 ** 47);
  const attempt = randomUUID();
  const addedManifestEntries = addedFiles.map((file) => addedEntry(file, snapshotId));
  const addedManifestBytes = encodeManifest(addedManifestEntries, { schema });
  const addedManifestKey = metadataFileKey(context.table, `${attempt}-m0.avro`);
  /** Every object this pass wrote: the data files, then each manifest and manifest list as it is put. */
  const written = [...addedFiles.map((file) => s3Key(context.table, file.file_path)), addedManifestKey];
  await context.objects.put(addedManifestKey, addedManifestBytes, 'application/octet-stream');
  await context.onStep?.('compaction-written');
  const smallFilesAdded = addedFiles.filter((file) => isSmallFile(file.file_size_in_bytes, targetFileSizeBytes)).length;
  const done = (committed: LoadedTable): CompactionResult => ({ loaded: committed, filesRewritten: removedFiles.length, filesAdded: addedFiles.length, smallFilesAdded, ...left });

  /** A create was sent whose outcome is not known (any error but 'taken' or the fence's refusal): what this pass wrote may be the table's. */
  let outcomeUnknown = false;
  const ours = { written, snapshotId, addedFiles, cache };
  // The swap, in the step's turn: on the table as it is then (a sweep may have appended
  // meanwhile), as long as every replaced file is still live there.
  let swapped: CompactionResult | { refusedOn: LoadedTable };
  try {
    swapped = await tableTurn(context, loaded, async (base, attemptNumber): Promise<CompactionResult | { refusedOn: LoadedTable }> => {
      const manifests = await currentManifests(context.objects, context.table, base.metadata, cache);
      const live = new Set(manifests.flatMap((m) => m.entries.filter(isLive).map((e) => e.data_file.file_path)));
      if (![...removed].every((path) => live.has(path))) {
        // An earlier attempt's commit that landed although it was told otherwise (an SDK retry
        // of the create answered 'taken'): the table holds our snapshot, and our files are live.
        if ((base.metadata.snapshots ?? []).some((snapshot) => snapshot['snapshot-id'] === snapshotId) || addedFiles.some((file) => live.has(file.file_path))) return done(base);
        return { refusedOn: base };
      }
      const sequenceNumber = base.metadata['last-sequence-number'] + 1;
      const rows: ManifestFile[] = [
        manifestFileFor({ manifestPath: context.objects.url(addedManifestKey), manifestLengthBytes: addedManifestBytes.byteLength, entries: addedManifestEntries, snapshotId, sequenceNumber }),
      ];
      for (const [index, manifest] of manifests.entries()) {
        if (!manifest.entries.some((entry) => removed.has(entry.data_file.file_path))) {
          rows.push(manifest.file);
          continue;
        }
        const entries = rewrittenEntries(manifest, removed, snapshotId);
        const bytes = encodeManifest(entries, { schema: currentSchema(base.metadata) });
        const key = metadataFileKey(context.table, `${attempt}-${attemptNumber}-m${index + 1}.avro`);
        written.push(key);
        await context.objects.put(key, bytes, 'application/octet-stream');
        rows.push(manifestFileFor({ manifestPath: context.objects.url(key), manifestLengthBytes: bytes.byteLength, entries, snapshotId, sequenceNumber }));
      }
      const parentId = base.metadata['current-snapshot-id'];
      const listBytes = encodeManifestList(rows, { snapshotId, parentSnapshotId: parentId > 0 ? parentId : null, sequenceNumber });
      const listKey = metadataFileKey(context.table, `snap-${snapshotId}-${attemptNumber}-${attempt}.avro`);
      written.push(listKey);
      await context.objects.put(listKey, listBytes, 'application/octet-stream');
      const next = replaceSnapshot(base.metadata, {
        snapshotId,
        manifestListPath: context.objects.url(listKey),
        nowMs: context.now(),
        previousMetadataPath: base.metadataPath,
        addedFiles: summarizeAddedFiles(addedFiles),
        deletedFiles: { records: removedFiles.reduce((s, f) => s + f.record_count, 0), files: removedFiles.length, sizeBytes: removedFiles.reduce((s, f) => s + f.file_size_in_bytes, 0) },
        summaryExtra: carriedSummary(base.metadata),
        metadataLogEntriesMax: context.metadataLogEntriesMax,
      });
      try {
        return done(await commitMetadataVersion(context.objects, context.table, base, next, context.fence));
      } catch (err) {
        if (!isAuditError(err, AuditErrorCode.OBJECT_EXISTS) && !isAuditError(err, AuditErrorCode.NOT_LEADER)) outcomeUnknown = true;
        throw err;
      }
    });
  } catch (err) {
    // No swap (the fence refused, every attempt lost, a write failed): unless a create may have
    // landed, what this pass wrote goes as for a refused swap. A deposed leader's compacted copies
    // outlived the erasure its successor applied to their inputs (review).
    if (!outcomeUnknown) await deleteUnlessCommitted(context, ours).catch(() => undefined);
    throw err;
  }
  if ('refusedOn' in swapped) {
    // Another writer replaced some of these files (an erasure's rewrite, another compaction):
    // what this pass wrote is in no snapshot, under names of this attempt alone. Deleted now, not
    // after the orphan age: a rewrite that won removed erased values these files still hold.
    await deleteUnlessCommitted(context, ours, swapped.refusedOn);
    return { loaded: swapped.refusedOn, filesRewritten: 0, filesAdded: 0, smallFilesAdded: 0, ...left, ...lostFiles() };
  }
  return { ...swapped, ...lostFiles() };
}

/**
 * Deletes what a compaction pass wrote (`written`: its data files, manifests and manifest
 * lists) unless the table holds its snapshot or one of its data files (a commit that landed
 * although its answer said otherwise), and never an object the table's current snapshot names.
 * `table`: the table as the caller just read it; else it is read again.
 */
async function deleteUnlessCommitted(
  context: MaintenanceContext,
  ours: { written: readonly string[]; snapshotId: number; addedFiles: readonly DataFile[]; cache: ManifestCache },
  table?: LoadedTable,
): Promise<void> {
  const current = table ?? (await reloadTable(context));
  if ((current.metadata.snapshots ?? []).some((snapshot) => snapshot['snapshot-id'] === ours.snapshotId)) return;
  const manifests = await currentManifests(context.objects, context.table, current.metadata, ours.cache);
  const list = currentSnapshot(current.metadata)?.['manifest-list'];
  const named = new Set<string>([...(list === undefined ? [] : [s3Key(context.table, list)]), ...manifests.map((manifest) => s3Key(context.table, manifest.file.manifest_path))]);
  for (const manifest of manifests) for (const entry of manifest.entries) if (isLive(entry)) named.add(s3Key(context.table, entry.data_file.file_path));
  if (ours.addedFiles.some((file) => named.has(s3Key(context.table, file.file_path)))) return;
  await mapBounded(
    ours.written.filter((key) => !named.has(key)),
    OBJECT_REQUESTS_IN_FLIGHT_MAX,
    (key) => context.objects.delete(key),
  );
}
