import { COMPACTION_RUN_TIME_BUDGET_MS, compactInPasses, compactionFigures, failOnLostFiles } from './compaction-passes.js';
import { compactIcebergTable, type CompactionResult } from './iceberg-compaction.js';
import { reloadTable, type MaintenanceContext } from './iceberg-maintenance-context.js';
import { rewriteIcebergManifests } from './iceberg-manifest-rewrite.js';
import { cleanIcebergMetadata } from './iceberg-metadata-cleanup.js';
import { removeIcebergOrphans, tableBytes } from './iceberg-orphan-cleanup.js';
import { expireIcebergSnapshots } from './iceberg-snapshot-expiry.js';
import { packIntegrityCheckpoints } from './integrity-objects.js';

/** The knobs of one maintenance run (the `audit.tier.maintenance.*` settings). */
export interface MaintenancePolicy {
  snapshotRetainLast: number;
  removeOrphanFiles: boolean;
  orphanMinAgeMs: number;
  targetFileSizeBytes: number;
  metadataPreviousVersionsMax: number;
  /** False skips compaction this run (the other steps run): a scheduler defers it while the tier is behind. */
  compact?: boolean;
  /**
   * How long the run goes on starting compaction passes while the last one left small files
   * (default COMPACTION_RUN_TIME_BUDGET_MS; `auditlake.audit.tier.maintenance.compaction.time.budget.ms`).
   */
  compactionTimeBudgetMs?: number;
  /** Bytes of small files one compaction pass reads at most (default COMPACTION_INPUT_BYTES_MAX; tests set a few KiB). */
  compactionPassBytesMax?: number;
}

/** What one run did: the figures `GET /admin/audit/maintenance` and the audit event report. */
export interface MaintenanceRunFigures {
  filesRewritten: number;
  filesAdded: number;
  /** Compaction passes the run made (0 when it skipped compaction). */
  compactionPasses: number;
  /**
   * Small files worth merging (two or more in their day) its last compaction pass had no byte
   * budget for, left for the next run — the run's time budget ended its passes — or 0; null when
   * the run did not compact (deferred, failed, nothing to maintain).
   */
  smallFilesLeft: number | null;
  snapshotsExpired: number;
  /** Files expiry and metadata cleanup deleted (manifest lists, manifests, data files, old metadata). */
  filesDeleted: number;
  orphansDeleted: number;
  /** Loose `_integrity/` checkpoint objects moved into packs (integrity-objects.ts). */
  checkpointsPacked: number;
  /** Parquet mode: checkpoints of the location's log superseded long enough ago, deleted (parquet-checkpoint-cleanup.ts); 0 for Iceberg. */
  logCheckpointsDeleted: number;
  bytesBefore: number;
  bytesAfter: number;
}

/**
 * One maintenance run over an Iceberg table, each step its own commit on the version the last
 * left: compaction (unless `policy.compact` is false; pass after pass while small files are left,
 * within the run's time budget: {@link compactInPasses}), manifest rewrite, snapshot expiry, metadata cleanup, (when enabled)
 * orphan cleanup, then packing of the `_integrity/` checkpoint objects beside the table. Every step leaves a readable table holding every event once, so a run that
 * stops anywhere (a crash, a lost lease) is finished by the next one. Sweeps go on between and
 * during the steps: each step takes one turn of `fence.serialize` (the node's commit lock) in
 * which it re-reads the table, builds its commit from it and commits (`tableTurn`), so
 * a sweep waits for at most one step's turn — never for a compaction's reading and encoding,
 * nor for the deletes that follow a commit — and no sweep can take a step's version between its
 * rebuild and its commit.
 */
export async function runIcebergMaintenance(context: Omit<MaintenanceContext, 'metadataLogEntriesMax'>, policy: MaintenancePolicy): Promise<MaintenanceRunFigures> {
  const steps: MaintenanceContext = { ...context, metadataLogEntriesMax: policy.metadataPreviousVersionsMax };
  const bytesBefore = await tableBytes(steps);
  const loaded = await reloadTable(context);
  const compaction =
    policy.compact === false
      ? undefined
      : await compactInPasses((previous: CompactionResult | undefined) => compactIcebergTable(steps, previous?.loaded ?? loaded, policy.targetFileSizeBytes, policy.compactionPassBytesMax), {
          now: context.now,
          timeBudgetMs: policy.compactionTimeBudgetMs ?? COMPACTION_RUN_TIME_BUDGET_MS,
          fence: context.fence,
        });
  await steps.onStep?.('compaction');
  const rewrite = await rewriteIcebergManifests(steps, compaction?.last.loaded ?? loaded);
  await steps.onStep?.('manifest-rewrite');
  const expiry = await expireIcebergSnapshots(steps, rewrite.loaded, policy.snapshotRetainLast);
  await steps.onStep?.('expiry');
  const metadata = await cleanIcebergMetadata(steps, expiry.loaded);
  await steps.onStep?.('metadata-cleanup');
  const orphansDeleted = policy.removeOrphanFiles ? await removeIcebergOrphans(steps, metadata.loaded, policy.orphanMinAgeMs) : 0;
  await steps.onStep?.('orphans');
  const checkpointsPacked = await packIntegrityCheckpoints(context.objects, context.table.s3.prefix, context.fence);
  failOnLostFiles(compaction, context.table.identifier);
  return {
    ...compactionFigures(compaction),
    snapshotsExpired: expiry.snapshotsExpired,
    filesDeleted: expiry.filesDeleted + metadata.filesDeleted,
    orphansDeleted,
    checkpointsPacked,
    logCheckpointsDeleted: 0,
    bytesBefore,
    bytesAfter: await tableBytes(steps),
  };
}
