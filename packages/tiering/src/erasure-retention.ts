import { readTieredLocations } from '@auditlake/lake';
import type { AuditStore } from '@auditlake/store';

/**
 * Replicated metadata written by the leader's sweep: every erasure record with a seq at or below
 * it is applied to every location that ever received tiered events (the current target and
 * every earlier one). Absent: nothing is known to be applied.
 */
export const ERASURES_APPLIED_META = 'tierErasuresAppliedThrough';

/** What the replicated metadata says is applied everywhere (0 when it says nothing). */
export async function tierErasuresAppliedThrough(store: AuditStore): Promise<number> {
  return (await store.getMeta<number>(ERASURES_APPLIED_META)) ?? 0;
}

/**
 * The seq of the oldest erasure record in this store that some tiered location may not have
 * applied yet, or undefined when none waits (or nothing was ever tiered, so no tier holds
 * values to erase). Retention keeps it and everything after it (localCleanupPolicy): a pass
 * that has not run yet — a failed rewrite, an unreachable earlier target, a cluster down for
 * longer than the local retention — finds the record where it looks for it, in the local log.
 */
export async function firstUnappliedErasureSeq(store: AuditStore): Promise<number | undefined> {
  if ((await readTieredLocations(store)).length === 0) return undefined;
  const [first] = await store.erasureRecordSeqs(await tierErasuresAppliedThrough(store), store.position.lastSeq, 1);
  return first;
}
