import type { EffectiveSettings } from '@auditlake/model';
import { DAY_MS, type PrunePolicy } from '@auditlake/store';

/**
 * What local retention may delete now (docs/invariants.md, 6). Without tiering: everything
 * older than `audit.retention.days`. With tiering on: only tiered events (seq ≤ the
 * watermark), once older than the shorter of `audit.tier.retain.local.days` and
 * `audit.retention.days` — so an untiered event is never deleted, whatever its age.
 */
export function localCleanupPolicy(settings: EffectiveSettings, watermarkSeq: number, nowMs: number): PrunePolicy {
  const capCutoffMs = nowMs - settings.retentionDays * DAY_MS;
  if (settings.tierMode === 'none') return { cutoffMs: capCutoffMs };
  const windowDays = Math.min(settings.retentionDays, settings.tierRetainLocalDays);
  return { cutoffMs: nowMs - windowDays * DAY_MS, maxSeq: watermarkSeq };
}
