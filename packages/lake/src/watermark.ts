/** Where tiering stopped: the (ingestTs, seq) of the last tiered event. */
export interface Watermark {
  ingestTs: number;
  seq: number;
}

export const ZERO_WATERMARK: Watermark = { ingestTs: 0, seq: 0 };

/** The later of two watermarks (by seq: the log's one order). */
export function laterWatermark(a: Watermark, b: Watermark): Watermark {
  return b.seq > a.seq ? b : a;
}

/** Replicated-metadata name of the watermark. */
export const WATERMARK_META = 'tierWatermark';

/**
 * Replicated-metadata name of the term in which a leader's sweep last tiered or found the
 * watermark in its own log: entries of a later term (ordered by a leader whose sweep has not
 * done so yet) are not covered by the watermark, whatever their seq (tieredThroughHere).
 */
export const WATERMARK_TERM_META = 'tierWatermarkTerm';
