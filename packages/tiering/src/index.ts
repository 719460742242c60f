export { pickBatch, type BatchRules } from './batch-picker.js';
export { localCleanupPolicy } from './local-cleanup-policy.js';
export { ERASURES_APPLIED_META, firstUnappliedErasureSeq, tierErasuresAppliedThrough } from './erasure-retention.js';
export { validateTierTarget } from './tier-target-validator.js';
export { TierSweeper, type AdoptedTier, type SweepOutcome, type TierStatus, type TierSweeperOptions } from './tier-sweeper.js';
export { TIER_ADOPTION_ENTRIES_MAX, type AdoptionRecord, type TierAdoption } from './tier-log-adoption.js';
export { COMPACTION_DEFERRAL_MAX_MS, MaintenanceScheduler, MAINTENANCE_RUNS_KEPT, type MaintenanceRegistration, type MaintenanceRun, type MaintenanceSchedulerOptions, type MaintenanceSettingsView } from './maintenance-scheduler.js';
export { CommitLock } from './commit-lock.js';
export { applyIcebergErasures, applyParquetErasures, isErasureRecord, type ParquetErasureResult, type TierErasureResult } from './tier-erasure.js';
