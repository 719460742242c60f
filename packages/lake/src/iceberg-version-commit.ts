import { currentSnapshot, parseTableMetadata, type IcebergTableMetadata } from '@auditlake/format';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { metadataVersionKey, type IcebergTableRef } from './iceberg-table-ref.js';
import { advanceVersionHint, type LoadedTable } from './iceberg-table.js';
import type { ObjectStore } from './object-store.js';

/** Who commits, and whether it still may: asked right before the commit object is written. */
export interface CommitFence {
  term: number;
  mayCommit: () => boolean;
  /** Debug/test hook run right before the commit object is written. */
  beforeCommit?: () => void;
  /**
   * Gives a maintenance step its turn among this process's tier writers (the node's commit lock,
   * which the sweep holds for each whole batch): the step's attempts — re-read the table, build
   * the commit, commit — run inside it, so no sweep of this process commits between a rebuild
   * and its commit (`tableTurn`). Absent: at once (the caller already holds the lock, as the
   * sweep does when it runs a step between maintenance runs, or has none).
   */
  serialize?: <T>(turn: () => Promise<T>) => Promise<T>;
}

/** The commit of `next` lost to another committer: `v<version>.metadata.json` was taken. */
export function commitLost(version: number): AuditError {
  return new AuditError(AuditErrorCode.OBJECT_EXISTS, `commit lost: v${version}.metadata.json was written by another committer`);
}

/**
 * The commit of `next` as `v<version>` succeeded only because that version had been written
 * before and deleted since: the table had moved past it.
 */
function commitForked(version: number, why: string): AuditError {
  return new AuditError(AuditErrorCode.OBJECT_EXISTS, `commit lost: v${version}.metadata.json was created again after the table had moved past it and deleted it (${why}); the table is not built on it`);
}

/**
 * Commits `next` as version `loaded.version + 1`: the fence is asked first, then
 * `v<N+1>.metadata.json` is created only if absent (first wins), then read back (a store that
 * ignores the condition would let a second writer overwrite) while the hint is moved forward
 * and the version after it is looked for. Throws AUDIT_NOT_LEADER when the fence refuses and
 * AUDIT_OBJECT_EXISTS when another commit won.
 *
 * The create is a fence only while the version's file exists. Another engine's metadata
 * cleanup deletes old versions, so a commit built on a version read before that engine
 * committed several times and cleaned up (a stale load, a sweep reusing its last table)
 * creates a deleted version number anew and succeeds beside the table, not on it: the table's
 * readers follow the hint to its newest version, and the batch would be lost while its
 * watermark moved on. So a create is also lost when the hint already named this version or a
 * later one, or when the next version exists without being built on this file (its
 * metadata-log names our file with our last-updated-ms and it holds our current snapshot).
 * A create is lost too when the version it is built on is gone (cleanup deletes only versions
 * behind the current one), and the version created is then deleted again. A table whose other
 * writer neither moves the hint, leaves the next version nor deletes old ones cannot be told
 * apart from one that never moved; our own writers always move the hint.
 */
export async function commitMetadataVersion(objects: ObjectStore, table: IcebergTableRef, loaded: LoadedTable, next: IcebergTableMetadata, fence: Omit<CommitFence, 'serialize'>): Promise<LoadedTable> {
  fence.beforeCommit?.();
  if (!fence.mayCommit()) throw new AuditError(AuditErrorCode.NOT_LEADER, 'no longer the leader; nothing was committed (files written for it are unreferenced)');
  const version = loaded.version + 1;
  const key = metadataVersionKey(table, version);
  const text = JSON.stringify(next);
  if (!(await objects.putIfAbsent(key, text, 'application/json'))) throw commitLost(version);
  // The hint is moved while the version is read back: it names a version that exists whoever
  // wrote it, so a read-back that finds another writer's bytes leaves it right. The version
  // after it is looked for meanwhile (not found, as a rule), so the checks add no round trip.
  const baseKey = metadataVersionKey(table, loaded.version);
  const [written, hintBefore, successor, base] = await Promise.all([objects.get(key), advanceVersionHint(objects, table, version), objects.find(metadataVersionKey(table, version + 1)), objects.exists(baseKey)]);
  if (new TextDecoder().decode(written) !== text) throw commitLost(version);
  const metadataPath = objects.url(key);
  if (successor !== undefined) {
    if (!builtOn(parseTableMetadata(new TextDecoder().decode(successor)), next, metadataPath)) throw commitForked(version, `v${version + 1} is not built on it`);
  } else if ((hintBefore >= version || !base) && (await builtOnByNow(objects, table, version, next, metadataPath))) {
    // Another writer committed on ours between the side-by-side looks (and moved the hint, or
    // deleted our base): ours is the table's.
  } else if (hintBefore >= version) {
    throw commitForked(version, `the version hint already named v${hintBefore}`);
  } else if (!base) {
    // Cleanup deletes only versions behind the current one: the table moved past our base, and
    // our version stands beside it. Deleted again, so no loader takes it for the head (one that
    // follows the hint reads past a deleted version by listing): a deposed leader's late hint
    // write had made the hint name a deleted version, and its next commit on the version it
    // kept created the next number anew — every loader then stopped there, and the real head's
    // commits left the table while the watermark counted them (review).
    await objects.delete(key);
    throw commitForked(version, `its base v${loaded.version} was deleted: the table had moved past it`);
  }
  return { version, metadata: parseTableMetadata(text), metadataPath };
}

/**
 * Whether the version after `version` exists now and is built on ours: looked for again when the
 * hint was found ahead or the base gone, since those looks and the look for it ran side by side —
 * another engine committing on ours (moving the hint, deleting our base) between them made our
 * real head look like a fork, and it was deleted or reported lost (reviews).
 */
async function builtOnByNow(objects: ObjectStore, table: IcebergTableRef, version: number, ours: IcebergTableMetadata, path: string): Promise<boolean> {
  const successor = await objects.find(metadataVersionKey(table, version + 1));
  return successor !== undefined && builtOn(parseTableMetadata(new TextDecoder().decode(successor)), ours, path);
}

/** Whether `successor` was committed on `ours` (written at `path`). */
function builtOn(successor: IcebergTableMetadata, ours: IcebergTableMetadata, path: string): boolean {
  if (!successor['metadata-log'].some((entry) => entry['metadata-file'] === path && entry['timestamp-ms'] === ours['last-updated-ms'])) return false;
  const current = currentSnapshot(ours);
  return current === undefined || successor.snapshots.some((snapshot) => snapshot['snapshot-id'] === current['snapshot-id']);
}
