export { pickBatch, type BatchRules } from './batch-picker.js';
export { localCleanupPolicy } from './local-cleanup-policy.js';
export { ObjectStore, S3Connections } from './object-store.js';
export { COMMITS_DIR, commitParquetBatch, eventDate, markerKey, readMarkers, type CommitMarker, type CommittedFile } from './parquet-committer.js';
export { joinKey, parseS3Location, type S3Location } from './s3-location.js';
export { validateTierTarget } from './tier-target-validator.js';
export { TierSweeper, type SweepOutcome, type TierStatus, type TierSweeperOptions } from './tier-sweeper.js';
export { TIERED_LOCATIONS_META, WATERMARK_META, ZERO_WATERMARK, laterWatermark, type TieredLocation, type Watermark } from './watermark.js';
export { ParquetTierSource, type ParquetTierFile } from './parquet-tier-source.js';
