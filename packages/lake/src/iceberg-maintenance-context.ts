import { newestAncestorCarrying, WATERMARK_SUMMARY_KEY, type IcebergTableMetadata } from '@auditlake/format';
import { AuditError, AuditErrorCode, isAuditError } from '@auditlake/model';
import type { CommitFence } from './iceberg-version-commit.js';
import type { IcebergTableRef } from './iceberg-table-ref.js';
import { loadIcebergTable, type LoadedTable } from './iceberg-table.js';
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
  /**
   * The object store's clock (storeClockMs), which stamps the `LastModified` orphan cleanup ages
   * files by: it counts from the earlier of this and `now()`. A node passes it; without it the
   * node's clock alone counts.
   */
  storeNow?: () => Promise<number>;
  /** metadata-log entries each commit keeps (`metadata.previous.versions.max`). */
  metadataLogEntriesMax: number;
  /**
   * When this process first saw each snapshot of the table (id → `monotonicMs()`), kept by the
   * caller from one expiry of the table to the next: the parent of a snapshot that took files
   * out is expired only once this process has seen that snapshot for the grace period too, or
   * its time is older than that by `NODE_CLOCK_SKEW_MAX_MS` (expireIcebergSnapshots). Without
   * it, by the snapshots' times alone.
   */
  snapshotsSeen?: Map<number, number>;
  /** The clock `snapshotsSeen` is on, one no step of the wall clock moves (default `performance.now()`; tests pass their own). */
  monotonicMs?: () => number;
  /** Debug/test hook, see {@link MaintenanceStep}. */
  onStep?: (step: MaintenanceStep) => void | Promise<void>;
  /** Encodes compacted files (default: on this thread). */
  encoder?: TierFileEncoder;
}

/** Commits that lost to another committer are re-applied on the new table this often at most. */
export const COMMIT_ATTEMPTS_MAX = 5;

/** The table's current version, read again (a step's turn starts from it). */
export async function reloadTable(context: Pick<MaintenanceContext, 'objects' | 'table'>): Promise<LoadedTable> {
  const loaded = await loadIcebergTable(context.objects, context.table);
  if (!loaded) throw new AuditError(AuditErrorCode.TABLE_INVALID, `table ${context.table.identifier} has no metadata at ${context.table.location}`);
  return loaded;
}

/**
 * Runs a step's commit in its turn: `attempt` builds the step's commit from a version of the
 * table and commits it. With `fence.serialize` (a node's commit lock, shared with the sweep)
 * the table is read again once the turn came, so the attempt starts from what every earlier
 * holder (a sweep) committed; a commit that still loses (a committer in another process, a
 * deposed leader) is rebuilt on the re-read table and tried again, up to
 * {@link COMMIT_ATTEMPTS_MAX} attempts, all in the same turn — a sweep of this process can never
 * take the version between a rebuild and its commit. Without it (the caller holds the lock, as
 * the sweep does between runs) the first attempt starts from `loaded`.
 */
export async function tableTurn<T>(context: MaintenanceContext, loaded: LoadedTable, attempt: (base: LoadedTable, attemptNumber: number) => Promise<T>): Promise<T> {
  const attempts = async (): Promise<T> => {
    let base = context.fence.serialize ? await reloadTable(context) : loaded;
    for (let attemptNumber = 1; ; attemptNumber++) {
      try {
        return await attempt(base, attemptNumber);
      } catch (err) {
        if (!isAuditError(err, AuditErrorCode.OBJECT_EXISTS) || attemptNumber >= COMMIT_ATTEMPTS_MAX) throw err;
        base = await reloadTable(context);
      }
    }
  };
  return context.fence.serialize ? context.fence.serialize(attempts) : attempts();
}

/**
 * auditlake's own summary keys to carry into a maintenance snapshot, so that the current snapshot
 * always says where tiering stopped and expiring older snapshots can never lose it: the tiering
 * keys (`auditlake.tiering.*`, together, of the one snapshot that has the watermark) and the
 * newest signed checkpoint, each from the newest snapshot in the current snapshot's ancestry
 * that carries it — the current one, or, when another engine committed on top without our keys,
 * an ancestor (the same walk the watermark is read with). Nothing when no retained ancestor
 * carries them.
 */
export function carriedSummary(metadata: IcebergTableMetadata): Record<string, string> {
  const prefix = WATERMARK_SUMMARY_KEY.slice(0, WATERMARK_SUMMARY_KEY.lastIndexOf('.') + 1);
  const tiering = newestAncestorCarrying(metadata, WATERMARK_SUMMARY_KEY)?.summary ?? {};
  const carried = Object.fromEntries(Object.entries(tiering).filter(([key]) => key.startsWith(prefix)));
  const checkpoint = newestCheckpoint(metadata);
  return checkpoint === undefined ? carried : { ...carried, [CHECKPOINT_SUMMARY_KEY]: checkpoint };
}

/** The newest signed checkpoint the table's snapshots carry (`auditlake.integrity.checkpoint`), looked up as {@link carriedSummary} does. */
export function newestCheckpoint(metadata: IcebergTableMetadata): string | undefined {
  return newestAncestorCarrying(metadata, CHECKPOINT_SUMMARY_KEY)?.summary[CHECKPOINT_SUMMARY_KEY];
}
