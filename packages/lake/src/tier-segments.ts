/**
 * Replicated-metadata name of the seq ranges this log's sweeps committed to each tier location.
 *
 * Why it is kept: retention deletes only what was tiered, and a verifier reading a node with its
 * tier takes a seq the node declares deleted as excused only where no tier read with it must
 * hold it. Judged by the rows the tier holds, a tier whose first rows were removed seemed to
 * begin later, and the node's deleted range excused the removed rows (a false pass). The node
 * knows better: it committed those seqs to that location.
 */
export const TIER_SEGMENTS_META = 'tierSegments';
/**
 * Replicated-metadata name of the greatest seq a segment dropped past TIER_SEGMENTS_MAX reached:
 * below it the node no longer says what it tiered, so a verifier excuses what it deleted there.
 */
export const TIER_SEGMENTS_CUT_META = 'tierSegmentsCutThrough';

/** Seqs fromSeq..toSeq were committed to the location at `url`, every one of them. */
export interface TierSegment {
  /** `s3://bucket/prefix` of a Parquet tier, or an Iceberg table's location. */
  url: string;
  fromSeq: number;
  toSeq: number;
}

/**
 * Most segments kept. A commit adds one for each hole in its batch's seqs (entries retention
 * deleted while tiering was off, often islands: it deletes by event time) and one when it does
 * not continue where the last segment left off (the target changed, an adoption); in steady
 * tiering the last segment just grows. Past this many the oldest go, and how far they reached is
 * kept (TIER_SEGMENTS_CUT_META): the verifier then excuses what the node deleted there (judged
 * by the tier's rows instead, the holes of the dropped segments were called missing).
 */
export const TIER_SEGMENTS_MAX = 1_000;

/**
 * The segments after a commit to `url` of the log's entries after `afterSeq` with the seqs
 * `seqs` (ascending; the watermark is the last). Each run of consecutive seqs is a segment; the
 * first continues the last segment only when that is the same location's and ends right before
 * it. A hole in the seqs is entries this log no longer held, which were never tiered: a
 * segment across it would make the verifier call them missing.
 */
export function segmentsAfterCommit(segments: readonly TierSegment[], url: string, afterSeq: number, seqs: readonly number[]): { segments: TierSegment[]; cutThrough: number | undefined } {
  const next = [...segments];
  let last = next.at(-1);
  let continues = last !== undefined && last.url === url && last.toSeq === afterSeq;
  for (const seq of seqs) {
    if (continues && last !== undefined && seq === last.toSeq + 1) {
      last = { ...last, toSeq: seq };
      next[next.length - 1] = last;
    } else {
      last = { url, fromSeq: seq, toSeq: seq };
      next.push(last);
      continues = true;
    }
  }
  if (next.length <= TIER_SEGMENTS_MAX) return { segments: next, cutThrough: undefined };
  const dropped = next.slice(0, next.length - TIER_SEGMENTS_MAX);
  return { segments: next.slice(-TIER_SEGMENTS_MAX), cutThrough: Math.max(...dropped.map((segment) => segment.toSeq)) };
}

/** How far dropped segments reached (TIER_SEGMENTS_CUT_META); undefined while none was dropped. */
export async function readTierSegmentsCut(meta: { getMeta<T>(name: string): Promise<T | undefined> }): Promise<number | undefined> {
  return meta.getMeta<number>(TIER_SEGMENTS_CUT_META);
}

/** The segments replicated metadata lists (none before the first commit of a version that keeps them). */
export async function readTierSegments(meta: { getMeta<T>(name: string): Promise<T | undefined> }): Promise<TierSegment[]> {
  return (await meta.getMeta<TierSegment[]>(TIER_SEGMENTS_META)) ?? [];
}

/** A location URL as compared: without trailing slashes (`s3://b/p/` and `s3://b/p` are one place). */
export function segmentUrlKey(url: string): string {
  return url.replace(/\/+$/, '');
}
