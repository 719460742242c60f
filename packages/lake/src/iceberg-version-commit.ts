import { parseTableMetadata, type IcebergTableMetadata } from '@auditlake/format';
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
 * Commits `next` as version `loaded.version + 1`: the fence is asked first, then
 * `v<N+1>.metadata.json` is created only if absent (first wins), then read back (a store that
 * ignores the condition would let a second writer overwrite) while the hint is moved forward. Throws
 * AUDIT_NOT_LEADER when the fence refuses and AUDIT_OBJECT_EXISTS when another commit won.
 */
export async function commitMetadataVersion(objects: ObjectStore, table: IcebergTableRef, loaded: LoadedTable, next: IcebergTableMetadata, fence: Omit<CommitFence, 'serialize'>): Promise<LoadedTable> {
  fence.beforeCommit?.();
  if (!fence.mayCommit()) throw new AuditError(AuditErrorCode.NOT_LEADER, 'no longer the leader; nothing was committed (files written for it are unreferenced)');
  const version = loaded.version + 1;
  const key = metadataVersionKey(table, version);
  const text = JSON.stringify(next);
  if (!(await objects.putIfAbsent(key, text, 'application/json'))) throw commitLost(version);
  // The hint is moved while the version is read back: it names a version that exists whoever
  // wrote it, so a read-back that finds another writer's bytes leaves it right.
  const [written] = await Promise.all([objects.get(key), advanceVersionHint(objects, table, version)]);
  if (new TextDecoder().decode(written) !== text) throw commitLost(version);
  return { version, metadata: parseTableMetadata(text), metadataPath: objects.url(key) };
}
