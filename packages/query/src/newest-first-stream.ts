import { newestFirst, type StoredEvent } from '@auditlake/model';

/**
 * The first `max` events of `source` in the API's newest-first order (model's newestFirst).
 * `source` yields them by event time descending, as the store's time index does, but within
 * one event time by seq, not by ingest time and eventId: each run of one event time is
 * gathered and sorted before any of it is passed on. A run holds at most about 2 × `max`
 * events at once (only its newest `max` can be passed on), so memory stays bounded by the page
 * even when a bulk import gave thousands of events the same time. Stopping early (a `break`,
 * or reaching `max`) closes `source`.
 */
export async function* newestFirstStream<E extends StoredEvent>(source: AsyncIterable<E>, max: number): AsyncGenerator<E> {
  if (!Number.isSafeInteger(max) || max < 0) throw new TypeError(`max must be a non-negative integer, got ${max}`);
  if (max === 0) return;
  let sent = 0;
  let run: E[] = [];
  const keepNewest = (count: number) => {
    run.sort(newestFirst);
    if (run.length > count) run.length = count;
  };
  for await (const event of source) {
    const runTs = run[0]?.timestamp;
    if (runTs !== undefined && event.timestamp !== runTs) {
      if (event.timestamp > runTs) throw new TypeError(`source is not by event time descending: ${event.timestamp} after ${runTs}`);
      keepNewest(max - sent);
      for (const e of run) yield e;
      sent += run.length;
      run = [];
      if (sent >= max) return;
    }
    run.push(event);
    if (run.length >= 2 * (max - sent)) keepNewest(max - sent);
  }
  keepNewest(max - sent);
  for (const e of run) yield e;
}
