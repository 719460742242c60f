import { currentSnapshot, WATERMARK_SUMMARY_KEY, type IcebergTableMetadata } from '@auditlake/format';
import type { CommitFence } from './iceberg-version-commit.js';
import type { IcebergTableRef } from './iceberg-table-ref.js';
import type { ObjectStore } from './object-store.js';
import { CHECKPOINT_SUMMARY_KEY } from './integrity-objects.js';
import type { TierFileEncoder } from './tier-file-encoding.js';

/**
 * Points of a run a debug hook is called at (the crash tests kill the process there): after each
 * step, and inside two — new files written but not yet committed, and expiry committed but
 * nothing deleted yet; and inside a row-level rewrite.
 */
export type MaintenanceStep =
  | 'compaction-written'
  | 'compaction'
  | 'manifest-rewrite'
  | 'expiry-committed'
  | 'expiry'
  | 'metadata-cleanup'
  | 'orphans'
  // A row-level rewrite (erasure): new files written, rewrite committed, old snapshots expired.
  | 'rewrite-written'
  | 'rewrite-committed'
  | 'purge-expired';

/** What every maintenance step works with. */
export interface MaintenanceContext {
  objects: ObjectStore;
  table: IcebergTableRef;
  fence: CommitFence;
  now: () => number;
  /** metadata-log entries each commit keeps (`metadata.previous.versions.max`). */
  metadataLogEntriesMax: number;
  /** Debug/test hook, see {@link MaintenanceStep}. */
  onStep?: (step: MaintenanceStep) => void | Promise<void>;
  /** Encodes compacted files (default: on this thread). */
  encoder?: TierFileEncoder;
}

/** Commits that lost to another committer are re-applied on the new table this often at most. */
export const COMMIT_ATTEMPTS_MAX = 5;

/**
 * The tiering keys (`auditlake.tiering.*`) of the current snapshot's summary, to carry into a
 * maintenance snapshot: the current snapshot always says where tiering stopped, so expiring
 * older snapshots can never lose the watermark (nor the newest tiered checkpoint).
 */
export function carriedSummary(metadata: IcebergTableMetadata): Record<string, string> {
  const summary = currentSnapshot(metadata)?.summary ?? {};
  const prefix = WATERMARK_SUMMARY_KEY.slice(0, WATERMARK_SUMMARY_KEY.lastIndexOf('.') + 1);
  // The newest signed checkpoint rides along too, so the current snapshot always carries it.
  return Object.fromEntries(Object.entries(summary).filter(([key]) => key.startsWith(prefix) || key === CHECKPOINT_SUMMARY_KEY));
}
