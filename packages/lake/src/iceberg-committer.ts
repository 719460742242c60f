import { randomInt, randomUUID } from 'node:crypto';
import {
  addedEntry,
  appendSnapshot,
  currentSchema,
  currentSnapshot,
  dataFileFromParquet,
  dayOrdinal,
  dayPartitionPath,
  decodeManifestList,
  encodeAuditParquet,
  encodeManifest,
  encodeManifestList,
  evolveToAuditSchema,
  icebergParquetKvMetadata,
  manifestFileFor,
  summarizeAddedFiles,
  watermarkSummary,
  type DataFile,
} from '@auditlake/format';
import type { StoredEvent } from '@auditlake/model';
import { encodeKeyNumber } from './key-number.js';
import type { ObjectStore } from './object-store.js';
import { metadataFileKey, s3Key, type IcebergTableRef } from './iceberg-table-ref.js';
import type { LoadedTable } from './iceberg-table.js';
import { commitMetadataVersion } from './iceberg-version-commit.js';
import { joinKey } from './s3-location.js';
import { CHECKPOINT_SUMMARY_KEY, latestCheckpointText } from './integrity-objects.js';
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

/**
 * One sweep = one commit: data files per day, one manifest, a manifest list carrying the
 * previous manifests, then `v(N+1).metadata.json` with the watermark in the snapshot summary
 * (created only if absent, then read back to check it is ours), then the hint. Every object
 * has an attempt-unique name, so a deposed leader's late writes can only add unreferenced files
 * (orphan cleanup removes them); its late metadata file loses to the version already there. A crash
 * before the metadata file leaves only unreferenced files: readers never see them and the
 * successor re-reads the watermark from the table, so nothing is tiered twice.
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
  const byDay = new Map<number, StoredEvent[]>();
  for (const event of batch) {
    const day = dayOrdinal(event.timestamp);
    const list = byDay.get(day);
    if (list) list.push(event);
    else byDay.set(day, [event]);
  }
  const dataFiles: DataFile[] = [];
  for (const [day, events] of [...byDay.entries()].sort(([a], [b]) => a - b)) {
    const bytes = encodeAuditParquet(events, { kvMetadata: icebergParquetKvMetadata(schema) });
    // Attempt-unique (term and random): no writer ever overwrites another's data file.
    const key = joinKey(table.s3.prefix, `data/${dayPartitionPath(day)}/${encodeKeyNumber(first.seq)}-t${context.term}-${attempt.slice(0, 8)}.parquet`);
    await objects.put(key, bytes, 'application/vnd.apache.parquet');
    dataFiles.push(dataFileFromParquet({ events, filePath: objects.url(key), fileSizeBytes: bytes.byteLength, parquetBytes: bytes }));
  }
  const sequenceNumber = metadata['last-sequence-number'] + 1;
  const entries = dataFiles.map((file) => addedEntry(file, snapshotId));
  const manifestBytes = encodeManifest(entries, { schema });
  const manifestKey = metadataFileKey(table, `${attempt}-m0.avro`);
  await objects.put(manifestKey, manifestBytes, 'application/octet-stream');
  const parent = currentSnapshot(metadata);
  const carried = parent ? decodeManifestList(await objects.get(s3Key(table, parent['manifest-list']))).files : [];
  const manifestFile = manifestFileFor({ manifestPath: objects.url(manifestKey), manifestLengthBytes: manifestBytes.byteLength, entries, snapshotId, sequenceNumber });
  const listBytes = encodeManifestList([manifestFile, ...carried], { snapshotId, parentSnapshotId: parent?.['snapshot-id'] ?? null, sequenceNumber });
  const listKey = metadataFileKey(table, `snap-${snapshotId}-1-${attempt}.avro`);
  await objects.put(listKey, listBytes, 'application/octet-stream');
  const watermark: Watermark = { seq: last.seq, ingestTs: last.ingestTs };
  const next = appendSnapshot(metadata, {
    snapshotId,
    manifestListPath: objects.url(listKey),
    nowMs: context.nowMs,
    addedFiles: summarizeAddedFiles(dataFiles),
    previousMetadataPath: loaded.metadataPath,
    summaryExtra: {
      ...watermarkSummary({ seq: BigInt(last.seq), ingestTs: last.ingestTs, leaderTerm: context.term, writerId: context.writerId }),
      ...checkpointSummary(batch, parent?.summary),
    },
    ...(context.metadataLogEntriesMax === undefined ? {} : { metadataLogEntriesMax: context.metadataLogEntriesMax }),
  });
  const committed = await commitMetadataVersion(objects, table, loaded, next, {
    term: context.term,
    mayCommit: context.mayCommit,
    ...(context.beforeCommit ? { beforeCommit: context.beforeCommit } : {}),
  });
  return { version: committed.version, loaded: committed, manifests: carried.length + 1, watermark, bytes: dataFiles.reduce((s, f) => s + f.file_size_in_bytes, 0), files: dataFiles.length };
}

/** The newest signed checkpoint tiered so far: this batch's, else the one the parent snapshot carried. */
function checkpointSummary(batch: readonly StoredEvent[], parentSummary: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const checkpoint = latestCheckpointText(batch) ?? parentSummary?.[CHECKPOINT_SUMMARY_KEY];
  return checkpoint === undefined ? {} : { [CHECKPOINT_SUMMARY_KEY]: checkpoint };
}
