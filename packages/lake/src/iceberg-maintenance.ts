import { AuditError, AuditErrorCode } from '@auditlake/model';
import { compactIcebergTable } from './iceberg-compaction.js';
import type { MaintenanceContext } from './iceberg-maintenance-context.js';
import { rewriteIcebergManifests } from './iceberg-manifest-rewrite.js';
import { cleanIcebergMetadata } from './iceberg-metadata-cleanup.js';
import { removeIcebergOrphans, tableBytes } from './iceberg-orphan-cleanup.js';
import { expireIcebergSnapshots } from './iceberg-snapshot-expiry.js';
import { loadIcebergTable } from './iceberg-table.js';

/** The knobs of one maintenance run (the `audit.tier.maintenance.*` settings). */
export interface MaintenancePolicy {
  snapshotRetainLast: number;
  removeOrphanFiles: boolean;
  orphanMinAgeMs: number;
  targetFileSizeBytes: number;
  metadataPreviousVersionsMax: number;
}

/** What one run did: the figures `GET /admin/audit/maintenance` and the audit event report. */
export interface MaintenanceRunFigures {
  filesRewritten: number;
  filesAdded: number;
  snapshotsExpired: number;
  /** Files expiry and metadata cleanup deleted (manifest lists, manifests, data files, old metadata). */
  filesDeleted: number;
  orphansDeleted: number;
  bytesBefore: number;
  bytesAfter: number;
}

/**
 * One maintenance run over an Iceberg table, each step its own commit on the version the last
 * left: compaction, manifest rewrite, snapshot expiry, metadata cleanup, then (when enabled)
 * orphan cleanup. Every step leaves a readable table holding every event once, so a run that
 * stops anywhere (a crash, a lost lease) is finished by the next one. A sweep may commit between
 * and during the steps (only the commits and orphan cleanup take `fence.serialize`): each step's
 * commit that loses re-reads the table and re-applies itself when still valid.
 */
export async function runIcebergMaintenance(context: Omit<MaintenanceContext, 'metadataLogEntriesMax'>, policy: MaintenancePolicy): Promise<MaintenanceRunFigures> {
  const steps: MaintenanceContext = { ...context, metadataLogEntriesMax: policy.metadataPreviousVersionsMax };
  const bytesBefore = await tableBytes(steps);
  const loaded = await loadIcebergTable(context.objects, context.table);
  if (!loaded) throw new AuditError(AuditErrorCode.TABLE_INVALID, `table ${context.table.identifier} has no metadata at ${context.table.location}`);
  const compaction = await compactIcebergTable(steps, loaded, policy.targetFileSizeBytes);
  await steps.onStep?.('compaction');
  const rewrite = await rewriteIcebergManifests(steps, compaction.loaded);
  await steps.onStep?.('manifest-rewrite');
  const expiry = await expireIcebergSnapshots(steps, rewrite.loaded, policy.snapshotRetainLast);
  await steps.onStep?.('expiry');
  const metadata = await cleanIcebergMetadata(steps, expiry.loaded);
  await steps.onStep?.('metadata-cleanup');
  // Under the commit lock when there is one: a sweep in this process writes its data files
  // before it commits them, and orphan cleanup must not find them in between.
  const removeOrphans = () => removeIcebergOrphans(steps, metadata.loaded, policy.orphanMinAgeMs);
  const orphansDeleted = !policy.removeOrphanFiles ? 0 : steps.fence.serialize ? await steps.fence.serialize(removeOrphans) : await removeOrphans();
  await steps.onStep?.('orphans');
  return {
    filesRewritten: compaction.filesRewritten,
    filesAdded: compaction.filesAdded,
    snapshotsExpired: expiry.snapshotsExpired,
    filesDeleted: expiry.filesDeleted + metadata.filesDeleted,
    orphansDeleted,
    bytesBefore,
    bytesAfter: await tableBytes(steps),
  };
}
