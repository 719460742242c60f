import type { Level } from 'level';
import { decodeUint, encodeUint, localKey, prefixEnd, PREFIX, seqKey } from './event-keys.js';
import { lowerStoredJson } from './lower-stored-json.js';
import { TEXT_BLOCK_SEQS, TextSketch, blockOfSeq, textSketchKey } from './text-sketch.js';

/** Anything that takes a binary put: a chained LevelDB batch. */
interface BinarySink {
  put(key: string, value: Uint8Array, options: { valueEncoding: 'view' }): unknown;
}

const VIEW = { valueEncoding: 'view' } as const;

/** Sketches kept in memory: the block being filled, and a few before it (late or replayed seqs). */
const HELD_BLOCKS_MAX = 4;

/**
 * Local-metadata keys of blocks whose sketch still holds the trigrams of values an erasure
 * removed (`l!staleSketch!<block:16>`): put in the erasure's own batch, deleted with the
 * rebuilt sketch, so a crash in between leaves the block to be rebuilt when the store opens.
 */
export const STALE_SKETCH_PREFIX = localKey('staleSketch!');

export function staleSketchKey(block: number): string {
  return STALE_SKETCH_PREFIX + encodeUint(block);
}

/**
 * Rebuilds, in `batch`, the sketch of every block marked stale: from the block's events as the
 * log holds them now (their whole stored JSON, as a standby adds them), so no trigram of an
 * erased value is left to confirm a guess of it (a sketch is a Bloom filter: a candidate value
 * whose trigrams are all set stays possible, one with a bit unset is ruled out). A block left
 * with no event loses its sketch. At most `blocksMax` blocks; returns those rebuilt. To run alone
 * in the writer's queue.
 */
export async function rebuildStaleSketches(db: Level<string, string>, batch: BinarySink & { del(key: string): unknown; put(key: string, value: string): unknown }, blocksMax: number): Promise<number[]> {
  const blocks: number[] = [];
  for (const key of await db.keys({ gte: STALE_SKETCH_PREFIX, lt: prefixEnd(STALE_SKETCH_PREFIX), limit: blocksMax }).all()) {
    const block = decodeUint(key.slice(STALE_SKETCH_PREFIX.length));
    const places = await db.iterator({ gte: seqKey(block * TEXT_BLOCK_SEQS), lt: seqKey((block + 1) * TEXT_BLOCK_SEQS) }).all();
    // s!<seq> → <ts>; the event is at t!<ts><seq>.
    const values = await db.getMany(places.map(([seq, ts]) => PREFIX.time + ts + seq.slice(PREFIX.seq.length)));
    const sketch = new TextSketch();
    values.forEach((json, i) => {
      if (json !== undefined) sketch.add(decodeUint((places[i] as [string, string])[1]), lowerStoredJson(json));
    });
    if (values.some((json) => json !== undefined)) batch.put(textSketchKey(block), sketch.value, VIEW);
    else batch.del(textSketchKey(block));
    batch.del(key);
    blocks.push(block);
  }
  return blocks;
}

/**
 * Keeps the sketches of the blocks being written and puts each changed one into the batch that
 * writes its events, so an event is never stored without its trigrams in its block's sketch.
 * A sketch only gains bits: one whose batch failed, or whose events were taken off the log,
 * has bits to spare, which costs a wasted block read, never a missed event.
 */
export class TextSketchWriter {
  readonly #db: Level<string, string>;
  readonly #held = new Map<number, TextSketch>();
  readonly #changed = new Set<number>();

  constructor(db: Level<string, string>) {
    this.#db = db;
  }

  /** Loads the sketches of the blocks seqs firstSeq..lastSeq fall in (call before `add`). */
  async prepare(firstSeq: number, lastSeq: number): Promise<void> {
    const blocks: number[] = [];
    for (let block = blockOfSeq(firstSeq); block <= blockOfSeq(lastSeq); block++) blocks.push(block);
    await this.prepareBlocks(blocks);
  }

  /** Loads the sketches of these blocks, from the store or empty. */
  async prepareBlocks(blocks: Iterable<number>): Promise<void> {
    for (const block of blocks) {
      if (this.#held.has(block)) continue;
      const stored = await this.#db.get<string, Uint8Array>(textSketchKey(block), VIEW);
      this.#held.set(block, new TextSketch(stored));
    }
  }

  /** Adds one event, by its seq, event time and stored JSON (as text or bytes). */
  add(seq: number, timestampMs: number, json: string | Uint8Array): void {
    const block = blockOfSeq(seq);
    const sketch = this.#held.get(block);
    if (sketch === undefined) throw new Error(`text sketch of block ${block} is not loaded: prepare() the seqs first`);
    const text = typeof json === 'string' ? json : Buffer.from(json.buffer, json.byteOffset, json.byteLength).toString('utf8');
    sketch.add(timestampMs, lowerStoredJson(text));
    this.#changed.add(block);
  }

  /** Puts every sketch changed since the last call into `batch`, and lets go of old blocks. */
  putChanged(batch: BinarySink): void {
    for (const block of this.#changed) batch.put(textSketchKey(block), (this.#held.get(block) as TextSketch).value, VIEW);
    this.#changed.clear();
    if (this.#held.size > HELD_BLOCKS_MAX) {
      const newest = [...this.#held.keys()].sort((a, b) => b - a).slice(0, HELD_BLOCKS_MAX);
      for (const block of this.#held.keys()) if (!newest.includes(block)) this.#held.delete(block);
    }
  }

  /** Forgets a block (its sketch was deleted): a later event in it starts from what is stored. */
  drop(block: number): void {
    this.#held.delete(block);
    this.#changed.delete(block);
  }
}
