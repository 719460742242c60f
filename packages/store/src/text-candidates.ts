import type { Level } from 'level';
import { PREFIX, encodeUint, prefixEnd, seqKey } from './event-keys.js';
import { getManySideBySide, readAt, type ReadSnapshot } from './point-reads.js';
import { SKETCH_VALUE_BYTES, TEXT_BLOCK_SEQS, TEXT_SKETCH_PREFIX, needleBitChoices, needleBits, sketchMayContain, sketchMayContainChoices, sketchTimeRange } from './text-sketch.js';

type Db = Level<string, string>;

/**
 * Sketches per native read. The sketches are 8 KiB each: small reads (16 sketches, 128 KiB)
 * measured about twice as fast as `for await` (which reads ~2 per call: the iterator's 16 KiB
 * default high-water mark) and 2-4x as fast as 64 or 256 per read, whose multi-MiB buffers
 * cost fresh pages on every search.
 */
const SKETCHES_PER_READ = 16;

interface Candidate {
  block: number;
  tsMinMs: number;
  tsMaxMs: number;
}

/**
 * The blocks whose sketch may hold the needle and whose events' times overlap [fromMs, toMs],
 * newest first (by their latest event time), and how many blocks overlap the window at all;
 * undefined when the needle is too short to have a trigram (every block would pass). A block in
 * `staleBlocks` passes whatever its sketch says: an erasure changed its events (the marker's
 * trigrams are not in the sketch) and its rebuild has not run yet.
 */
export async function textCandidateBlocks(
  db: Db,
  needle: string,
  fromMs: number | undefined,
  toMs: number | undefined,
  staleBlocks?: ReadonlySet<number>,
  snapshot?: ReadSnapshot,
): Promise<{ candidates: Candidate[]; overlapping: number } | undefined> {
  const bits = needleBits(needle);
  if (bits.length === 0) return undefined;
  // A needle with σ takes a block whose sketch holds each of its trigrams with σ or with ς
  // (needleBitChoices): sketches written before lowerStoredJson may hold the ς form.
  const choices = needle.includes('σ') ? needleBitChoices(needle) : undefined;
  const candidates: Candidate[] = [];
  let overlapping = 0;
  const sketches = db.iterator<string, Uint8Array>({
    gte: TEXT_SKETCH_PREFIX,
    lt: prefixEnd(TEXT_SKETCH_PREFIX),
    valueEncoding: 'view',
    highWaterMarkBytes: SKETCHES_PER_READ * SKETCH_VALUE_BYTES,
    ...readAt(snapshot),
  });
  try {
    for (let entries = await sketches.nextv(SKETCHES_PER_READ); entries.length > 0; entries = await sketches.nextv(SKETCHES_PER_READ)) {
      for (const [key, value] of entries) {
        // Read in place: only the needle's few bits of each 8 KiB value are looked at.
        const { tsMinMs, tsMaxMs } = sketchTimeRange(value);
        if (fromMs !== undefined && tsMaxMs < fromMs) continue;
        if (toMs !== undefined && tsMinMs > toMs) continue;
        overlapping++;
        const block = parseInt(key.slice(TEXT_SKETCH_PREFIX.length), 16);
        const mayContain = choices === undefined ? sketchMayContain(value, bits) : sketchMayContainChoices(value, choices);
        if (!mayContain && staleBlocks?.has(block) !== true) continue;
        candidates.push({ block, tsMinMs, tsMaxMs });
      }
    }
  } finally {
    await sketches.close();
  }
  return { candidates: candidates.sort((a, b) => b.tsMaxMs - a.tsMaxMs), overlapping };
}

/**
 * The stored events of the candidate blocks within [fromMs, toMs], by event time then seq
 * descending, like a time scan, a batch per block read. Blocks are read newest first; an event
 * is passed on once no block still to be read can hold a later one (its time is above the next
 * block's latest).
 */
export async function* textCandidateBatches(db: Db, blocks: readonly Candidate[], fromMs: number | undefined, toMs: number | undefined, snapshot?: ReadSnapshot): AsyncGenerator<string[]> {
  let pending: Array<{ timeKey: string; value: string }> = [];
  for (let i = 0; i < blocks.length; i++) {
    const block = (blocks[i] as Candidate).block;
    const seqs = await db.iterator({ gte: seqKey(block * TEXT_BLOCK_SEQS), lt: seqKey((block + 1) * TEXT_BLOCK_SEQS), ...readAt(snapshot) }).all();
    const timeKeys: string[] = [];
    for (const [key, ts] of seqs) {
      const timestampMs = parseInt(ts, 16);
      if ((fromMs !== undefined && timestampMs < fromMs) || (toMs !== undefined && timestampMs > toMs)) continue;
      timeKeys.push(PREFIX.time + ts + key.slice(PREFIX.seq.length));
    }
    const values = timeKeys.length === 0 ? [] : await getManySideBySide(db, timeKeys, snapshot);
    values.forEach((value, j) => {
      if (value !== undefined) pending.push({ timeKey: timeKeys[j] as string, value });
    });
    // Time keys sort as (event time, seq): descending key order is the time scan's order.
    pending.sort((a, b) => (a.timeKey < b.timeKey ? 1 : a.timeKey > b.timeKey ? -1 : 0));
    const next = blocks[i + 1];
    // Events strictly later than anything a later block holds are final; equal times may interleave.
    const bound = next === undefined ? '' : PREFIX.time + encodeUint(next.tsMaxMs + 1);
    let ready = 0;
    while (ready < pending.length && (pending[ready] as { timeKey: string }).timeKey >= bound) ready++;
    if (ready > 0) yield pending.slice(0, ready).map((entry) => entry.value);
    pending = pending.slice(ready);
  }
}
