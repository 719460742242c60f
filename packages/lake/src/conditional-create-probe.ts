import { randomUUID } from 'node:crypto';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { ObjectStore } from './object-store.js';
import { joinKey } from './s3-location.js';

/** Probe objects live here under a tier location; each is deleted right after its probe. */
export const PROBES_DIR = '_auditlake/probes';

/**
 * Checks once that the store honours a conditional create (`If-None-Match: *` on PUT): it
 * creates a fresh key, then creates it again, which must be refused. Every commit relies on it —
 * the first commit object wins and a deposed leader's late one is refused — so a store that
 * overwrites instead is refused with AUDIT_TIER_TARGET_UNUSABLE naming the problem. The probe
 * object is deleted either way.
 */
export async function probeConditionalCreate(objects: ObjectStore, prefix: string): Promise<void> {
  const key = joinKey(prefix, `${PROBES_DIR}/${randomUUID()}`);
  try {
    if (!(await objects.putIfAbsent(key, 'first', 'text/plain'))) {
      throw new AuditError(AuditErrorCode.TIER_TARGET_UNUSABLE, `${objects.url(key)} refused a conditional create of a new key; the store cannot be tiered to`);
    }
    if (await objects.putIfAbsent(key, 'second', 'text/plain')) {
      throw new AuditError(
        AuditErrorCode.TIER_TARGET_UNUSABLE,
        `the store at ${objects.url()} ignores If-None-Match on PUT (a second conditional create of ${key} overwrote the first): a deposed leader's late commit could replace tiered events there, so tiering to it is refused until it answers 412 PreconditionFailed`,
      );
    }
  } finally {
    await objects.delete(key).catch(() => undefined);
  }
}
