export { ObjectStore, type ListedObject, type ObjectHead } from './object-store.js';
export { S3Connections } from './s3-connections.js';
export { joinKey, parseS3Location, type S3Location } from './s3-location.js';
export { encodeKeyNumber } from './key-number.js';
export { WATERMARK_META, WATERMARK_TERM_META, ZERO_WATERMARK, laterWatermark, type Watermark } from './watermark.js';
export { TIERED_LOCATIONS_META, includesLocation, includesPlace, readTieredLocations, recordTieredLocation, tieredLocationKey, tieredLocationPlace, type Endpoints, type TieredLocation } from './tiered-location.js';
export { TIER_SEGMENTS_CUT_META, TIER_SEGMENTS_MAX, TIER_SEGMENTS_META, readTierSegments, readTierSegmentsCut, segmentsAfterCommit, segmentUrlKey, type TierSegment } from './tier-segments.js';
export type { TierFile, TierSource } from './tier-source.js';
export { icebergTableAt, metadataFileKey, metadataVersionKey, resolveIcebergTable, s3Key, tableKeyOf, versionHintKey, type IcebergTableRef } from './iceberg-table-ref.js';
export { watermarkFromLiveFiles } from './iceberg-file-watermark.js';
export { advanceVersionHint, ensureIcebergTable, ensureNamespace, loadIcebergTable, putVersionHint, tableWatermark, type LoadedTable } from './iceberg-table.js';
export { commitIcebergBatch, encodeIcebergBatch, type EncodedIcebergBatch, type IcebergCommitResult } from './iceberg-committer.js';
export { COMMITS_DIR, commitParquetBatch, dataFileFault, eventDate, markerKey, PARQUET_DATA_FILE_NAME, type CommitMarker, type CommittedFile, type ParquetBatchResult, type ParquetCommitContext } from './parquet-committer.js';
export { readMarkersByKey } from './parquet-marker-log.js';
export { MARKER_PACK_FORMAT, MARKER_PACKS_DIR } from './parquet-marker-pack.js';
export { MARKER_PACK_LIMITS, packParquetMarkers, type MarkerPackLimits, type MarkerPacking } from './parquet-marker-packing.js';
export { COMPACTION_MARKER_PACKS, COMPACTION_PACKS_DIR } from './parquet-compaction-pack.js';
export { COMPACTION_PACK_LIMITS, packCompactionMarkers } from './parquet-compaction-packing.js';
export { PROBES_DIR, probeConditionalCreate } from './conditional-create-probe.js';
export { IcebergTierSource, FOOTER_CACHE_ENTRIES_MAX, type DeclaredTierFile } from './iceberg-tier-source.js';
export { ParquetTierSource } from './parquet-tier-source.js';
export { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
export { commitMetadataVersion, type CommitFence } from './iceberg-version-commit.js';
export { currentManifests, ManifestCache, snapshotManifests, type ResolvedManifest } from './iceberg-table-files.js';
export type { MaintenanceContext, MaintenanceStep } from './iceberg-maintenance-context.js';
export { compactIcebergTable, COMPACTION_INPUT_BYTES_MAX } from './iceberg-compaction.js';
export { COMPACTION_RUN_TIME_BUDGET_MS, type CompactionPass } from './compaction-passes.js';
export { manifestsToMerge, rewriteIcebergManifests, rewriteManifestsIfMany, MANIFEST_ENTRIES_MAX, MANIFEST_ENTRIES_SMALL, MANIFESTS_BETWEEN_RUNS_MAX, type ManifestRewriteResult } from './iceberg-manifest-rewrite.js';
export { expireIcebergSnapshots, expireOverdueSnapshots, SNAPSHOTS_BETWEEN_RUNS_FACTOR, type ExpiryResult } from './iceberg-snapshot-expiry.js';
export { SNAPSHOT_READ_GRACE_MS } from './replaced-file-grace.js';
export { cleanIcebergMetadata } from './iceberg-metadata-cleanup.js';
export { removeIcebergOrphans } from './iceberg-orphan-cleanup.js';
export { runIcebergMaintenance, type MaintenancePolicy, type MaintenanceRunFigures } from './iceberg-maintenance.js';
export { CHECKPOINTS_DIR, checkpointKey, parseCheckpoint, readNewestCheckpoint, type LoadedCheckpoint, type ParquetCheckpoint, type ReplacedFile } from './parquet-checkpoint.js';
export { checkParquetCheckpoint, checkpointState, PARQUET_CHECKPOINT_INTERVAL_COMPACTIONS, PARQUET_CHECKPOINT_INTERVAL_MARKERS, writeParquetCheckpoint, type ParquetCheckpointWrite } from './parquet-checkpoint-write.js';
export { CHECKPOINT_RECHECK_MARKERS, KNOWN_LOG_STALE_MS, COMPACTIONS_DIR, compactionKey, compactParquetLocation, createCompactionMarker, liveParquetFiles, nextCompactionGeneration, ParquetLogCache, parquetLogEnd, readCompactions, readContextLog, readParquetLog, type CompactionMarker, type ParquetLog } from './parquet-compaction.js';
export { REPLACED_FILE_GRACE_MS, runParquetMaintenance } from './parquet-maintenance.js';
export type { ParquetCompactionContext, ParquetCompactionResult } from './parquet-compaction.js';
export {
  CHECKPOINT_PACK_FORMAT,
  CHECKPOINT_PACK_LIMITS,
  CHECKPOINT_SUMMARY_KEY,
  INTEGRITY_DIR,
  latestCheckpointText,
  packIntegrityCheckpoints,
  readIntegrityObjects,
  writeIntegrityObjects,
  type CheckpointPackLimits,
  type FoundIntegrityText,
  type IntegrityObjects,
} from './integrity-objects.js';
export { encodeTierFile, INLINE_TIER_FILE_ENCODER, rewriteTierFiles, type EncodedTierFile, type RewriteInput, type TierFileEncoder, type TierFileShape } from './tier-file-encoding.js';
export { ENCODE_MESSAGE_EVENTS_MAX, TierEncodePool, type TierEncodePoolOptions } from './tier-encode-pool.js';
export { commitProperties, ERASURES_APPLIED_THROUGH_PROPERTY, erasuresAppliedThrough, PURGE_FILES_PROPERTY, purgeReplacedFiles, rewriteIcebergRows, type PurgeResult, type RowRewrite, type RowRewriteResult } from './iceberg-row-rewrite.js';
export { findTieredRecords, type TieredLookupOptions, type TieredLookupStats, type TieredRecordRef } from './tiered-record-lookup.js';
export { readTieredSuffix } from './tiered-suffix.js';
export { icebergSeqsAfter, newestIcebergRow, newestParquetRow, parquetSeqsAfter, SEQS_AFTER_FOOTERS_MAX, type NewestTieredRow } from './newest-tiered-row.js';
export { ERASURES_DIR, erasureDoneKey, erasuresNotDone, markErasureDone, pendingParquetErasures, rewriteParquetRows, type ParquetRowRewriteResult } from './parquet-row-rewrite.js';
export { orphanCutoffMs, storeClockMs, storeNowAt } from './store-clock.js';
export { deleteSupersededLogCheckpoints, LOG_CHECKPOINTS_KEPT } from './parquet-checkpoint-cleanup.js';
