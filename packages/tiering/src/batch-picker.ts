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
  const settled = eligibleCount(events, rules);
  if (settled <= rules.batchSizeMax) return events.slice(0, settled);
  // More settled events than fit: cut at the last group boundary at or before the limit.
  let cut = rules.batchSizeMax;
  const boundaryTs = (events[cut - 1] as StoredEvent).ingestTs;
  if ((events[cut] as StoredEvent).ingestTs === boundaryTs) {
    cut = groupStart(events, cut);
    if (cut === 0) {
      // The first group alone exceeds the limit: take it whole.
      cut = rules.batchSizeMax;
      while (cut < settled && (events[cut] as StoredEvent).ingestTs === boundaryTs) cut++;
    }
  }
  return events.slice(0, cut);
}

/**
 * How many of `events` (from the first) a batch may take, the size limit aside: those before
 * the settle window and, with `seqMax`, before the first millisecond group holding a seq past
 * it (the whole group waits). A batch shorter than this was cut by the size limit.
 */
export function eligibleCount(events: readonly StoredEvent[], rules: BatchRules): number {
  let settled = events.findIndex((e) => e.ingestTs > rules.ingestTsMax);
  if (settled < 0) settled = events.length;
  const { seqMax } = rules;
  if (seqMax === undefined) return settled;
  const held = events.findIndex((e) => e.seq > seqMax);
  return held < 0 ? settled : Math.min(settled, groupStart(events, held));
}

/** The index of the first event of the millisecond group `events[at]` belongs to. */
function groupStart(events: readonly StoredEvent[], at: number): number {
  const ts = (events[at] as StoredEvent).ingestTs;
  let start = at;
  while (start > 0 && (events[start - 1] as StoredEvent).ingestTs === ts) start--;
  return start;
}
