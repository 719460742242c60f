import type { Level } from 'level';
import { readAt, type ReadSnapshot } from './point-reads.js';

/** Values of the first native read: a page of a few hundred events, with room for filtered-out ones. */
export const FIRST_READ_VALUES = 256;
/** Values of a read once a scan has gone on: large reads, so per-call overhead stays small. */
export const READ_VALUES_MAX = 8192;
/** Bytes of one native read, at most, however many values that is. */
const READ_BYTES_MAX = 1024 * 1024;

/**
 * The values of a key range, last key first, in the batches they are read in: batches that
 * double from FIRST_READ_VALUES. A page of 200 newest events needs one small read, while a
 * full scan soon reads a MiB per call. (One fixed 1 MiB read made a one-day page decode ~1,800
 * events to return 200: 5× the time.) A caller that knows how many values it will take passes
 * a smaller `first`. Whole batches, not single values: a page then costs one step of the
 * generator, not one per event. Breaking out of the loop closes the iterator.
 *
 * `fillCache`: keep the blocks read in LevelDB's block cache (classic-level's iterators do not
 * by default). Worth it for a page: the next search of the same window finds its blocks
 * decompressed (a one-day page decompressed about 11 blocks of 16 KiB, some 16% of the
 * request's CPU); not for a long scan, which would evict what pages and point reads keep there.
 */
export async function* rangeBatchesNewestFirst(
  db: Level<string, string>,
  range: { gte: string; lt: string },
  options: { first?: number; fillCache?: boolean; snapshot?: ReadSnapshot } = {},
): AsyncGenerator<string[]> {
  const iterator = db.values({ ...range, reverse: true, highWaterMarkBytes: READ_BYTES_MAX, fillCache: options.fillCache ?? false, ...readAt(options.snapshot) });
  try {
    for (let batch = Math.max(1, options.first ?? FIRST_READ_VALUES); ; batch = Math.min(batch * 2, READ_VALUES_MAX)) {
      const values = await iterator.nextv(batch);
      if (values.length === 0) return;
      yield values;
    }
  } finally {
    await iterator.close();
  }
}
