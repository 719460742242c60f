import { randomUUID } from 'node:crypto';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { PROBES_DIR } from './conditional-create-probe.js';
import type { ObjectStore } from './object-store.js';
import { joinKey } from './s3-location.js';

/**
 * The object store's clock now, as the `LastModified` of a probe object it just stored under
 * `<prefix>/_auditlake/probes/` (deleted right after): S3 stamps objects with its own clock, to
 * the second, so this reads at most a second early. Orphan cleanup ages objects by their
 * `LastModified`, which is the same clock: measured against the node's clock instead, a node
 * whose clock runs `orphan.min.age.ms` ahead takes a file written a moment ago for an old orphan.
 */
export async function storeClockMs(objects: ObjectStore, prefix: string): Promise<number> {
  const key = joinKey(prefix, `${PROBES_DIR}/clock-${randomUUID()}`);
  try {
    await objects.put(key, 'clock', 'text/plain');
    const head = await objects.head(key);
    if (head === undefined || head.lastModifiedMs <= 0) {
      throw new AuditError(AuditErrorCode.OBJECT_STORE_FAILED, `${objects.url(key)} was stored but the store tells no LastModified for it: orphan cleanup cannot age objects by the store's clock, so it deletes nothing`);
    }
    return head.lastModifiedMs;
  } finally {
    await objects.delete(key).catch(() => undefined);
  }
}

/**
 * The latest `LastModified` an orphan may have: `minAgeMs` before the earlier of the node's clock
 * and the store's (`storeNow`, when the caller measures it). The earlier one: a node clock behind
 * the store's only spares files longer, one ahead of it must not make young files look old.
 */
export async function orphanCutoffMs(nowMs: number, minAgeMs: number, storeNow: (() => Promise<number>) | undefined): Promise<number> {
  const storeMs = storeNow === undefined ? nowMs : await storeNow();
  return Math.min(nowMs, storeMs) - minAgeMs;
}

/**
 * A cleanup context's `storeNow` for objects at `prefix`: the store's clock (storeClockMs) moved
 * by `clock.offsetMs` (tests), or none when no clock is asked for (objects aged by `now` alone).
 */
export function storeNowAt(clock: { offsetMs: number } | undefined, objects: ObjectStore, prefix: string): { storeNow?: () => Promise<number> } {
  return clock === undefined ? {} : { storeNow: async () => (await storeClockMs(objects, prefix)) + clock.offsetMs };
}
