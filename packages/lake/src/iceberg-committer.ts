import { randomInt, randomUUID } from 'node:crypto';
import {
  addedEntry,
  appendSnapshot,
  currentSchema,
  currentSnapshot,
  dayOrdinal,
  dayPartitionPath,
  decodeManifestList,
  encodeManifest,
  encodeManifestList,
  evolveToAuditSchema,
  icebergParquetKvMetadata,
  manifestFileFor,
  summarizeAddedFiles,
  watermarkSummary,
  type DataFile,
  type IcebergTableMetadata,
  type ManifestFile,
} from '@auditlake/format';
import { AuditError, AuditErrorCode, isAuditError, type StoredEvent } from '@auditlake/model';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { COMMIT_ATTEMPTS_MAX, newestCheckpoint } from './iceberg-maintenance-context.js';
import { encodeKeyNumber } from './key-number.js';
import type { ObjectStore } from './object-store.js';
import { metadataFileKey, s3Key, type IcebergTableRef } from './iceberg-table-ref.js';
import { loadIcebergTable, tableWatermark, type LoadedTable } from './iceberg-table.js';
import { commitMetadataVersion, type CommitFence } from './iceberg-version-commit.js';
import { joinKey } from './s3-location.js';
import { CHECKPOINT_SUMMARY_KEY, latestCheckpointText } from './integrity-objects.js';
import { ERASURES_APPLIED_THROUGH_PROPERTY, erasuresAppliedThrough } from './iceberg-row-rewrite.js';
import { INLINE_TIER_FILE_ENCODER, type EncodedTierFile, type TierFileEncoder } from './tier-file-encoding.js';
import type { Watermark } from './watermark.js';

export interface IcebergCommitResult {
  version: number;
  /** The table as this commit left it. */
  loaded: LoadedTable;
  /** Manifests the new snapshot's manifest list names. */
  manifests: number;
  watermark: Watermark;
  bytes: number;
  files: number;
}

/** A batch's data files, encoded before its commit: one per event day, in day order. */
export interface EncodedIcebergBatch {
  firstSeq: number;
  lastSeq: number;
  events: number;
  /** The footer metadata the files carry (the table schema they were encoded for). */
  kvMetadata: Readonly<Record<string, string>>;
  days: Array<{ day: number; file: EncodedTierFile }>;
}

/**
 * Encodes a batch's data files for `loaded`'s schema (as evolved by the commit), one per event
 * day. Nothing is written: a sweep encodes the next batch with this while the previous one
 * commits, so the encoder's thread and the commit's requests overlap.
 */
export async function encodeIcebergBatch(loaded: LoadedTable, batch: readonly StoredEvent[], encoder: TierFileEncoder): Promise<EncodedIcebergBatch> {
  const first = batch[0];
  const last = batch[batch.length - 1];
  if (!first || !last) throw new TypeError('encodeIcebergBatch needs at least one event');
  const kvMetadata = icebergParquetKvMetadata(currentSchema(evolveToAuditSchema(loaded.metadata)));
  const byDay = new Map<number, StoredEvent[]>();
  for (const event of batch) {
    const day = dayOrdinal(event.timestamp);
    const list = byDay.get(day);
    if (list) list.push(event);
    else byDay.set(day, [event]);
  }
  const days = [...byDay.entries()].sort(([a], [b]) => a - b);
  const shape = { kvMetadata, icebergDataFile: true };
  const files = await Promise.all(days.map(([, events]) => encoder.encode(events, shape)));
  return { firstSeq: first.seq, lastSeq: last.seq, events: batch.length, kvMetadata, days: days.map(([day], index) => ({ day, file: files[index] as EncodedTierFile })) };
}

/** True when `encoded` holds exactly `batch` (same seq range and count) with this footer metadata. */
function encodedFits(encoded: EncodedIcebergBatch, batch: readonly StoredEvent[], kvMetadata: Readonly<Record<string, string>>): boolean {
  const sameRange = encoded.firstSeq === batch[0]?.seq && encoded.lastSeq === batch[batch.length - 1]?.seq && encoded.events === batch.length;
  return sameRange && JSON.stringify(encoded.kvMetadata) === JSON.stringify(kvMetadata);
}

/**
 * One sweep = one commit: data files per day, one manifest, a manifest list carrying the
 * previous manifests, then `v(N+1).metadata.json` with the watermark in the snapshot summary
 * (created only if absent, then read back to check it is ours), then the hint. Every object
 * has an attempt-unique name, so a deposed leader's late writes can only add unreferenced files
 * (orphan cleanup removes them); its late metadata file loses to the version already there. A crash
 * before the metadata file leaves only unreferenced files: readers never see them and the
 * successor re-reads the watermark from the table, so nothing is tiered twice.
 *
 * The data files are encoded by `encoder` (worker threads in a node, so the event loop keeps
 * ingesting). When the commit loses to a maintenance commit (a compaction or expiry that took
 * the version meanwhile), the append is re-applied on the new version — same data files and
 * manifest, a new manifest list — as long as that version's watermark is still the one this
 * batch continues from; a table whose watermark moved on (another leader tiered these events)
 * fails the commit with AUDIT_OBJECT_EXISTS, and this batch's files stay unreferenced.
 */
export async function commitIcebergBatch(
  objects: ObjectStore,
  table: IcebergTableRef,
  loaded: LoadedTable,
  batch: readonly StoredEvent[],
  context: {
    term: number;
    nowMs: number;
    writerId: string;
    mayCommit: () => boolean;
    beforeCommit?: () => void;
    /** metadata-log entries the new version keeps (`metadata.previous.versions.max`, applied at every commit as Java does); default 100. */
    metadataLogEntriesMax?: number;
    /** Encodes the data files (default: on this thread). */
    encoder?: TierFileEncoder;
    /**
     * This batch's data files, encoded ahead ({@link encodeIcebergBatch}, while an earlier
     * batch committed). Used when they hold exactly this batch in this table's schema, else
     * the batch is encoded again here.
     */
    encoded?: Promise<EncodedIcebergBatch>;
    /** Debug/test hook: after the data files and manifest are written, before the first commit attempt. */
    afterWrite?: () => Promise<void>;
    /**
     * The seq the batch continues from (the sweep's watermark; default the loaded table's). A
     * commit that loses its version is re-applied on the new one only if that ends here.
     */
    afterSeq?: number;
    /**
     * True when the batch holds no erasure record: a table whose erasures are applied through
     * the batch's start then has them applied through its end (set in the same commit).
     */
    erasureFree?: boolean;
  },
): Promise<IcebergCommitResult> {
  const first = batch[0];
  const last = batch[batch.length - 1];
  if (!first || !last) throw new TypeError('commitIcebergBatch needs at least one event');
  const snapshotId = randomInt(1, 2 ** 47);
  const attempt = randomUUID();
  // A table made before the chain columns gets them now, in this commit (schema evolution).
  const metadata = evolveToAuditSchema(loaded.metadata);
  const schema = currentSchema(metadata);
  const kvMetadata = icebergParquetKvMetadata(schema);
  const given = context.encoded === undefined ? undefined : await context.encoded;
  // Files encoded ahead are used only when they are this batch's, in this table's schema.
  const encoded = given !== undefined && encodedFits(given, batch, kvMetadata) ? given : await encodeIcebergBatch(loaded, batch, context.encoder ?? INLINE_TIER_FILE_ENCODER);
  const days = encoded.days;
  // Every object before the commit object has an attempt-unique name and depends on no other's
  // bytes, so they are written at once: one round trip of the store instead of one each (the
  // sweep's commits are bound by round trips, not CPU). Should any fail, the others are orphans.
  const dataKeys = days.map(({ day }) => joinKey(table.s3.prefix, `data/${dayPartitionPath(day)}/${encodeKeyNumber(first.seq)}-t${context.term}-${attempt.slice(0, 8)}.parquet`));
  const dataFiles: DataFile[] = days.map(({ file }, i) => {
    if (!file.dataFile) throw new Error('assertion failed: the encoder built no data_file record');
    return { ...file.dataFile, file_path: objects.url(dataKeys[i]) };
  });
  const entries = dataFiles.map((file) => addedEntry(file, snapshotId));
  const manifestBytes = encodeManifest(entries, { schema });
  const manifestKey = metadataFileKey(table, `${attempt}-m0.avro`);
  const written = Promise.all([
    mapBounded(days, OBJECT_REQUESTS_IN_FLIGHT_MAX, ({ file }, i) => objects.put(dataKeys[i] as string, file.bytes, 'application/vnd.apache.parquet')),
    objects.put(manifestKey, manifestBytes, 'application/octet-stream'),
  ]);
  // Never unhandled: the first attempt awaits it, or the failure before that is thrown.
  written.catch(() => undefined);
  const watermark: Watermark = { seq: last.seq, ingestTs: last.ingestTs };
  // Not the loaded table's own word alone: a sweep may commit on the table as its last commit
  // left it while its watermark (shared with every sweeper of the store) knows of later ones.
  const continuesFrom = context.afterSeq ?? tableWatermark(loaded)?.seq ?? 0;
  let base = loaded;
  for (let attemptNumber = 1; ; attemptNumber++) {
    try {
      // Only what depends on the version is redone per attempt: sequence number, carried manifests, list.
      const baseMetadata = evolveToAuditSchema(base.metadata);
      const sequenceNumber = baseMetadata['last-sequence-number'] + 1;
      const parent = currentSnapshot(baseMetadata);
      const carried = parent ? await manifestListFiles(objects, table, base, parent['manifest-list']) : [];
      const manifestFile = manifestFileFor({ manifestPath: objects.url(manifestKey), manifestLengthBytes: manifestBytes.byteLength, entries, snapshotId, sequenceNumber });
      const listFiles = [manifestFile, ...carried];
      const listBytes = encodeManifestList(listFiles, { snapshotId, parentSnapshotId: parent?.['snapshot-id'] ?? null, sequenceNumber });
      const listKey = metadataFileKey(table, `snap-${snapshotId}-${attemptNumber}-${attempt}.avro`);
      await Promise.all([written, objects.put(listKey, listBytes, 'application/octet-stream')]);
      if (attemptNumber === 1) await context.afterWrite?.();
      const next = appendSnapshot(baseMetadata, {
        snapshotId,
        manifestListPath: objects.url(listKey),
        nowMs: context.nowMs,
        addedFiles: summarizeAddedFiles(dataFiles),
        previousMetadataPath: base.metadataPath,
        summaryExtra: {
          ...watermarkSummary({ seq: BigInt(last.seq), ingestTs: last.ingestTs, leaderTerm: context.term, writerId: context.writerId }),
          ...checkpointSummary(batch, baseMetadata),
        },
        ...(context.metadataLogEntriesMax === undefined ? {} : { metadataLogEntriesMax: context.metadataLogEntriesMax }),
      });
      // The erasure cursor follows a batch with nothing to erase, and only from where it began.
      if (context.erasureFree === true && erasuresAppliedThrough(baseMetadata) >= continuesFrom) {
        next.properties = { ...next.properties, [ERASURES_APPLIED_THROUGH_PROPERTY]: String(last.seq) };
      }
      const fence: CommitFence = {
        term: context.term,
        mayCommit: context.mayCommit,
        ...(context.beforeCommit ? { beforeCommit: context.beforeCommit } : {}),
      };
      const committed = await commitMetadataVersion(objects, table, base, next, fence);
      committed.knownManifestList = { path: objects.url(listKey), files: listFiles };
      return { version: committed.version, loaded: committed, manifests: listFiles.length, watermark, bytes: dataFiles.reduce((s, f) => s + f.file_size_in_bytes, 0), files: dataFiles.length };
    } catch (err) {
      if (!isAuditError(err, AuditErrorCode.OBJECT_EXISTS) || attemptNumber >= COMMIT_ATTEMPTS_MAX) throw err;
      const reloaded = await loadIcebergTable(objects, table);
      // Re-applied only on a version that still ends where this batch begins: a commit that
      // tiered further (another leader's sweep) means these events are someone else's now.
      // A table that has not moved (a list removed by hand) is not retried into the same loss.
      if (!reloaded || reloaded.version === base.version || (tableWatermark(reloaded)?.seq ?? 0) !== continuesFrom) throw err;
      base = reloaded;
    }
  }
}

/** The manifests of the list at `path` (the base's parent snapshot's): as this process wrote it, or fetched. */
async function manifestListFiles(objects: ObjectStore, table: IcebergTableRef, base: LoadedTable, path: string): Promise<ManifestFile[]> {
  const known = base.knownManifestList;
  if (known !== undefined && known.path === path) return known.files;
  const bytes = await objects.find(s3Key(table, path));
  // Gone: snapshot expiry removed it, so the table has moved past this version since it was
  // read. The commit on it would lose; it is re-applied on the table as it is now (and fails
  // with this error if the table has not moved: then the list was removed by hand).
  if (bytes === undefined) throw new AuditError(AuditErrorCode.OBJECT_EXISTS, `commit lost: the manifest list ${path} of v${base.version}'s current snapshot is gone (expired by a later commit, or removed)`);
  return decodeManifestList(bytes).files;
}

/**
 * The newest signed checkpoint tiered so far: this batch's, else the newest one the table's
 * snapshots carry — the parent's, or an ancestor's when another engine committed on top without
 * our keys (so the checkpoint is not lost once that ancestor expires).
 */
function checkpointSummary(batch: readonly StoredEvent[], baseMetadata: IcebergTableMetadata): Record<string, string> {
  const checkpoint = latestCheckpointText(batch) ?? newestCheckpoint(baseMetadata);
  return checkpoint === undefined ? {} : { [CHECKPOINT_SUMMARY_KEY]: checkpoint };
}
