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
  /**
   * The term in which a leader's sweep last tiered or found the watermark in its log
   * (WATERMARK_TERM_META); undefined for a watermark stored before that was kept.
   */
  watermarkTerm: number | undefined;
  /** This node leads, in this term; undefined on a standby. */
  leadingTerm: number | undefined;
  /** The log's term runs. */
  termStarts: readonly TermStart[];
}

/**
 * Through which seq this node's log holds what the tier holds: what retention may count as
 * tiered and delete. Not past the watermark, and not into entries of a term later than the one
 * the watermark was tiered or vouched for in: a watermark that reached this node by replication
 * may name seqs another log tiered — a leader that tiered alone and died — and a successor
 * orders its own, acknowledged, never-tiered entries under them; retention that trusted the
 * seq alone deleted those on every node (review: 100 of 100 `ack=replicated` events lost). A
 * successor's sweep vouches for the watermark in its own term once it finds it in its log (or
 * adopts the tier, or tiers), and from then its entries count. For a watermark without a term
 * (stored before terms were kept), a leader counts only entries before its own term and a
 * standby trusts the watermark as far as its log goes (its log is a prefix of its leader's).
 */
export function tieredThroughHere(facts: TieredHereFacts): number {
  const { watermarkSeq, watermarkTerm, leadingTerm, termStarts } = facts;
  const coveredTerm = watermarkTerm ?? leadingTerm;
  if (coveredTerm === undefined) return watermarkSeq;
  // The first entry of a term the watermark does not cover; legacy leaders: its own term.
  const uncoveredFrom = termStarts.find((start) => (watermarkTerm === undefined ? start.term >= coveredTerm : start.term > coveredTerm))?.firstSeq;
  return uncoveredFrom === undefined ? watermarkSeq : Math.min(watermarkSeq, uncoveredFrom - 1);
}
