import { AuditError, AuditErrorCode } from '@auditlake/model';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import type { CommitFence } from './iceberg-version-commit.js';
import type { ObjectStore } from './object-store.js';

/**
 * Deletes `keys` (orphans a cleanup found, checkpoints packed elsewhere) while this node may still commit: `fence.mayCommit()`
 * (the leader's lease and term) is asked right before each delete is sent, so a leader deposed
 * during a cleanup stops there — its successor may be writing files its own listing took for
 * orphans. Throws `AUDIT_NOT_LEADER` then, saying how many were deleted; the next leader's run
 * finishes the job.
 */
export async function deleteWhileLeader(objects: ObjectStore, keys: readonly string[], fence: Pick<CommitFence, 'mayCommit'>, what: string): Promise<number> {
  let deleted = 0;
  let deposed = false;
  await mapBounded(keys, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (key) => {
    if (deposed || !fence.mayCommit()) {
      deposed = true;
      return;
    }
    await objects.delete(key);
    deleted++;
  });
  if (deposed) throw new AuditError(AuditErrorCode.NOT_LEADER, `no longer the leader; ${what} stopped after deleting ${deleted} of ${keys.length} objects (the next leader's maintenance run finishes it)`);
  return deleted;
}

/**
 * Deletes those of `keys` that a listing of `prefix` finds (deleteWhileLeader), answering how
 * many: a file named in a log may be gone already (a run stopped among its deletes, finished by
 * the next).
 */
export async function deleteListedWhileLeader(objects: ObjectStore, prefix: string, keys: readonly string[], fence: Pick<CommitFence, 'mayCommit'>, what: string): Promise<number> {
  const wanted = new Set(keys);
  const listed = (await objects.list(prefix)).filter((key) => wanted.has(key));
  return deleteWhileLeader(objects, listed, fence, what);
}
