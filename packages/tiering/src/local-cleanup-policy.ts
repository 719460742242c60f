import type { EffectiveSettings } from '@auditlake/model';
import { DAY_MS, type PrunePolicy } from '@auditlake/store';

/**
 * What local retention may delete now (docs/invariants.md, 6). Without tiering: everything
 * older than `audit.retention.days`. With tiering on: only tiered events (seq ≤ the
 * watermark), once older than the shorter of `audit.tier.retain.local.days` and
 * `audit.retention.days` — so an untiered event is never deleted, whatever its age.
 *
 * In either case, nothing from `unappliedErasureSeq` on (firstUnappliedErasureSeq): an erasure
 * record stays in the local log until every tier location has applied it, since the sweep
 * reads it there.
 */
export function localCleanupPolicy(settings: EffectiveSettings, watermarkSeq: number, nowMs: number, unappliedErasureSeq?: number): PrunePolicy {
  const policy = tieringPolicy(settings, watermarkSeq, nowMs);
  if (unappliedErasureSeq === undefined) return policy;
  return { ...policy, maxSeq: Math.min(policy.maxSeq ?? Number.MAX_SAFE_INTEGER, unappliedErasureSeq - 1) };
}

function tieringPolicy(settings: EffectiveSettings, watermarkSeq: number, nowMs: number): PrunePolicy {
  if (settings.tierMode === 'none') return { cutoffMs: cutoffBefore(nowMs, settings.retentionDays) };
  const windowDays = Math.min(settings.retentionDays, settings.tierRetainLocalDays);
  return { cutoffMs: cutoffBefore(nowMs, windowDays), maxSeq: watermarkSeq, tieredOnly: true };
}

/**
 * `days` before `nowMs`, but never before the epoch: a window longer than the time since 1970
 * (`audit.retention.days` 36500, "keep 100 years") means nothing is old enough.
 */
function cutoffBefore(nowMs: number, days: number): number {
  return Math.max(0, nowMs - days * DAY_MS);
}
