import type { EffectiveSettings } from '@auditlake/model';
import { DAY_MS, type PrunePolicy, type TermStart } from '@auditlake/store';

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

/** What tieredThroughHere needs to know of the node. */
export interface TieredHereFacts {
  /** The replicated tiering watermark's seq. */
  watermarkSeq: number;
  /** Whether this node leads, and the term it leads in. */
  leading: { term: number } | undefined;
  /** Through which seq this node's sweep, in that term, found the watermark in its log or tiered itself (TierSweeper.verifiedThrough). */
  verifiedSeq: number | undefined;
  /** The log's term runs and where it ends. */
  termStarts: readonly TermStart[];
  lastSeq: number;
}

/**
 * Through which seq this node's log holds what the tier holds: what retention may count as
 * tiered and delete. A standby's log is a prefix of its leader's (log matching comes before
 * any metadata is applied), so the watermark holds for it as far as its log goes. A leader's
 * own entries, ordered in the term it leads, are the tier's only once its sweep has found the
 * watermark in its log or tiered them (`verifiedSeq`): a watermark that arrived by replication
 * may name seqs another log tiered — a leader that tiered alone and died — and retention that
 * trusted it deleted the acknowledged, never-tiered events this leader ordered under those seqs
 * (review: 100 of 100 `ack=replicated` events lost). Until then only the entries before its
 * term count.
 */
export function tieredThroughHere(facts: TieredHereFacts): number {
  const { watermarkSeq, leading } = facts;
  if (leading === undefined) return watermarkSeq;
  if (facts.verifiedSeq !== undefined) return Math.min(watermarkSeq, facts.verifiedSeq);
  const ownFrom = facts.termStarts.find((start) => start.term === leading.term)?.firstSeq ?? facts.lastSeq + 1;
  return Math.min(watermarkSeq, ownFrom - 1);
}
