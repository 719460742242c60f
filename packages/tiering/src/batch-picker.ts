import type { StoredEvent } from '@auditlake/model';

export interface BatchRules {
  /** Most events in one batch, unless the first same-millisecond group alone is larger. */
  batchSizeMax: number;
  /** Events with ingestTs > this wait for a later sweep (the settle window). */
  ingestTsMax: number;
  /**
   * Events with seq > this wait too (absent: none): a cluster leader tiers only what every
   * standby it hears from holds, so any successor holds every tiered entry.
   */
  seqMax?: number;
}

/**
 * Picks the next batch from events after the watermark, in seq order (which is ingestTs
 * order): stops before the settle window and after `seqMax`, takes at most `batchSizeMax`, and never splits a
 * group sharing one ingest millisecond — a group that does not fit waits for the next batch,
 * except a first group larger than the limit, which goes whole (else tiering would stall).
 * `events` must hold at least `batchSizeMax + 1` entries when that many exist, so the picker
 * can see whether the last group continues.
 */
export function pickBatch(events: readonly StoredEvent[], rules: BatchRules): StoredEvent[] {
  let settled = events.findIndex((e) => e.ingestTs > rules.ingestTsMax);
  if (settled < 0) settled = events.length;
  const { seqMax } = rules;
  if (seqMax !== undefined) {
    let held = events.findIndex((e) => e.seq > seqMax);
    if (held >= 0 && held < settled) {
      // Not into a millisecond group the bound cuts: the whole group waits.
      const cutTs = (events[held] as StoredEvent).ingestTs;
      while (held > 0 && (events[held - 1] as StoredEvent).ingestTs === cutTs) held--;
      settled = held;
    }
  }
  if (settled <= rules.batchSizeMax) return events.slice(0, settled);
  // More settled events than fit: cut at the last group boundary at or before the limit.
  let cut = rules.batchSizeMax;
  const boundaryTs = (events[cut - 1] as StoredEvent).ingestTs;
  if ((events[cut] as StoredEvent).ingestTs === boundaryTs) {
    while (cut > 0 && (events[cut - 1] as StoredEvent).ingestTs === boundaryTs) cut--;
    if (cut === 0) {
      // The first group alone exceeds the limit: take it whole.
      cut = rules.batchSizeMax;
      while (cut < settled && (events[cut] as StoredEvent).ingestTs === boundaryTs) cut++;
    }
  }
  return events.slice(0, cut);
}
