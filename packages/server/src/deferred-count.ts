/** Counting deferred events stops here: a count runs in the background, but must still end. */
export const DEFERRED_COUNT_MAX = 1_000_000;

/** A deferred count is counted again once it is this old (when asked for): the staleness bound. */
export const DEFERRED_RECOUNT_MS = 10_000;

/** A count made at another watermark or retention is counted again once it is this old. */
export const DEFERRED_RECOUNT_CHANGED_MS = 1_000;

/** What a count depends on: events older than the cutoff, after the watermark. */
export interface DeferredInputs {
  nowMs: number;
  retentionMs: number;
  watermarkSeq: number;
}

interface Counted {
  count: number;
  countedMs: number;
  retentionMs: number;
  watermarkSeq: number;
}

/**
 * The `deferred` figure of `tierStatus` (untiered events older than retention, kept because
 * tiering is on), answered from the last count so a status read never waits for a scan of the
 * time index: the status must stay fast while ingest and the sweep keep the node busy. A read
 * that finds the count older than {@link DEFERRED_RECOUNT_MS} (or than
 * {@link DEFERRED_RECOUNT_CHANGED_MS} when counted at another watermark or retention) starts one
 * recount in the background and answers the last count; only the very first read waits for a
 * count. So the figure lags by at most that bound plus one recount (a scan of keys only, up to
 * {@link DEFERRED_COUNT_MAX}).
 */
export class DeferredCount {
  readonly #count: (cutoffMs: number, afterSeq: number, max: number) => Promise<number>;
  #counted: Counted | undefined;
  #recounting: Promise<void> | undefined;

  constructor(count: (cutoffMs: number, afterSeq: number, max: number) => Promise<number>) {
    this.#count = count;
  }

  async read(inputs: DeferredInputs): Promise<number> {
    const counted = this.#counted;
    if (counted === undefined) {
      await this.#recount(inputs);
      return this.#counted?.count ?? 0;
    }
    const ageMs = inputs.nowMs - counted.countedMs;
    const changed = counted.watermarkSeq !== inputs.watermarkSeq || counted.retentionMs !== inputs.retentionMs;
    const stale = ageMs >= DEFERRED_RECOUNT_MS || (changed && ageMs >= DEFERRED_RECOUNT_CHANGED_MS);
    if (stale) void this.#recount(inputs).catch(() => undefined);
    return counted.count;
  }

  /** One recount at a time; a read during one shares it. */
  #recount(inputs: DeferredInputs): Promise<void> {
    // Never before the epoch: a retention longer than the time since 1970 holds nothing back.
    this.#recounting ??= this.#count(Math.max(0, inputs.nowMs - inputs.retentionMs), inputs.watermarkSeq, DEFERRED_COUNT_MAX)
      .then((count) => {
        this.#counted = { count, countedMs: inputs.nowMs, retentionMs: inputs.retentionMs, watermarkSeq: inputs.watermarkSeq };
      })
      .finally(() => {
        this.#recounting = undefined;
      });
    return this.#recounting;
  }
}
