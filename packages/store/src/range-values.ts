import type { Level } from 'level';

/** Values of the first native read: a page of a few hundred events, with room for filtered-out ones. */
export const FIRST_READ_VALUES = 256;
/** Values of a read once a scan has gone on: large reads, so per-call overhead stays small. */
export const READ_VALUES_MAX = 8192;
/** Bytes of one native read, at most, however many values that is. */
const READ_BYTES_MAX = 1024 * 1024;

/**
 * The values of a key range, last key first, read in batches that double from FIRST_READ_VALUES.
 * A page of 200 newest events needs one small read, while a full scan soon reads a MiB per call.
 * (One fixed 1 MiB read made a one-day page decode ~1,800 events to return 200: 5× the time.)
 * A caller that knows how many values it will take passes a smaller `first`. Breaking out of
 * the loop closes the iterator.
 */
export async function* rangeValuesNewestFirst(db: Level<string, string>, range: { gte: string; lt: string }, first = FIRST_READ_VALUES): AsyncGenerator<string> {
  const iterator = db.values({ ...range, reverse: true, highWaterMarkBytes: READ_BYTES_MAX });
  try {
    for (let batch = Math.max(1, first); ; batch = Math.min(batch * 2, READ_VALUES_MAX)) {
      const values = await iterator.nextv(batch);
      if (values.length === 0) return;
      yield* values;
    }
  } finally {
    await iterator.close();
  }
}
