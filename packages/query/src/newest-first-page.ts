import { newestFirst, type StoredEvent } from '@auditlake/model';

/**
 * The first `max` events of `batches` in the API's newest-first order (model's newestFirst),
 * as one array: what newestFirstStream gives, for a source read a batch at a time (the
 * store's searchBatches). The source is by event time descending (within one time, by seq);
 * reading stops at the first event older than `max` events already read, since nothing from
 * there on can rank. Memory stays bounded by the page and one batch: past 2 × `max` events,
 * only the newest `max` are kept (each dropped one has `max` newer than it, which stay).
 * Stopping closes the source.
 */
export async function newestFirstPage<E extends StoredEvent>(batches: AsyncIterable<readonly E[]>, max: number): Promise<E[]> {
  if (!Number.isSafeInteger(max) || max < 0) throw new TypeError(`max must be a non-negative integer, got ${max}`);
  const kept: E[] = [];
  if (max === 0) return kept;
  let runTs = Number.POSITIVE_INFINITY;
  read: for await (const batch of batches) {
    for (const event of batch) {
      const ts = event.timestamp;
      if (ts !== runTs) {
        if (ts > runTs) throw new TypeError(`source is not by event time descending: ${ts} after ${runTs}`);
        // Every event kept is strictly newer than this one, and the page is full.
        if (kept.length >= max) break read;
        runTs = ts;
      }
      kept.push(event);
    }
    if (kept.length >= 2 * max) keepNewest(kept, max);
  }
  keepNewest(kept, max);
  return kept;
}

function keepNewest(events: StoredEvent[], count: number): void {
  events.sort(newestFirst);
  if (events.length > count) events.length = count;
}
