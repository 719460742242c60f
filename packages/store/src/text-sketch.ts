import { forEachTrigramHash, trigramHash, trigramHashes } from '@auditlake/model';
import { encodeUint } from './event-keys.js';
import { INDEX_PREFIX } from './index-keys.js';

/**
 * The free-text index: for each block of TEXT_BLOCK_SEQS consecutive seqs, one sketch of every
 * trigram (three consecutive UTF-16 units) of its events' stored JSON, lower-cased, hashed to
 * one bit of SKETCH_BITS. A `q` search tests the bits of its needle's trigrams: a block with one
 * of them unset cannot hold the needle anywhere in any event and is never read. Blocks that
 * pass are only candidates (hash collisions); every event is still matched exactly.
 *
 *   x!q<block:16>  → <tsMin:f64><tsMax:f64><bits:SKETCH_BITS/8>
 *
 * Lower-cased stored JSON, because that is what the store's existing free-text prefilter looks
 * for the JSON-escaped needle in: a needle that cannot pass the sketch cannot pass the prefilter.
 */
export const TEXT_SKETCH_PREFIX = INDEX_PREFIX + 'q';

/** Seqs per block: at ~550 bytes of JSON per event a block's sketch is ~6% full (measured on generated events). */
export const TEXT_BLOCK_SEQS = 4096;

/** Bits per sketch (8 KiB): two bytes per event, a needle of five trigrams passes a non-matching block ~1 in 10⁶. */
export const SKETCH_BITS = 1 << 16;

const HEADER_BYTES = 16;
export const SKETCH_VALUE_BYTES = HEADER_BYTES + SKETCH_BITS / 8;

export function textSketchKey(block: number): string {
  return TEXT_SKETCH_PREFIX + encodeUint(block);
}

export function blockOfSeq(seq: number): number {
  return Math.floor(seq / TEXT_BLOCK_SEQS);
}

/** The bit of a trigram: the top 16 bits of the shared trigram hash (model's trigram-hash.ts). */
function trigramBit(hash: number): number {
  return hash >>> 16;
}

/** One block's sketch in memory, with the event-time range of the events added to it. */
export class TextSketch {
  readonly value: Uint8Array;
  readonly #view: DataView;

  constructor(value?: Uint8Array) {
    if (value !== undefined && value.byteLength !== SKETCH_VALUE_BYTES) throw new TypeError(`a text sketch is ${SKETCH_VALUE_BYTES} bytes, got ${value.byteLength}`);
    this.value = value === undefined ? new Uint8Array(SKETCH_VALUE_BYTES) : Uint8Array.from(value);
    this.#view = new DataView(this.value.buffer, this.value.byteOffset, this.value.byteLength);
    if (value === undefined) {
      this.#view.setFloat64(0, Number.POSITIVE_INFINITY, true);
      this.#view.setFloat64(8, Number.NEGATIVE_INFINITY, true);
    }
  }

  get tsMinMs(): number {
    return this.#view.getFloat64(0, true);
  }

  get tsMaxMs(): number {
    return this.#view.getFloat64(8, true);
  }

  /** Adds an event: its event time and the trigrams of its stored JSON, lower-cased. */
  add(timestampMs: number, lowerJson: string): void {
    if (timestampMs < this.tsMinMs) this.#view.setFloat64(0, timestampMs, true);
    if (timestampMs > this.tsMaxMs) this.#view.setFloat64(8, timestampMs, true);
    const bits = this.value;
    forEachTrigramHash(lowerJson, (hash) => {
      const bit = trigramBit(hash);
      bits[HEADER_BYTES + (bit >>> 3)] = (bits[HEADER_BYTES + (bit >>> 3)] as number) | (1 << (bit & 7));
    });
  }

  /** False when some trigram of the needle is missing: no event of the block contains it. */
  mayContain(needleBits: readonly number[]): boolean {
    return sketchMayContain(this.value, needleBits);
  }
}

/** As TextSketch.mayContain, on a stored sketch value as read (not copied into a TextSketch). */
export function sketchMayContain(value: Uint8Array, needleBits: readonly number[]): boolean {
  for (const bit of needleBits) if (((value[HEADER_BYTES + (bit >>> 3)] as number) & (1 << (bit & 7))) === 0) return false;
  return true;
}

/** The event-time range [tsMinMs, tsMaxMs] a stored sketch value records (read in place). */
export function sketchTimeRange(value: Uint8Array): { tsMinMs: number; tsMaxMs: number } {
  if (value.byteLength !== SKETCH_VALUE_BYTES) throw new TypeError(`a text sketch is ${SKETCH_VALUE_BYTES} bytes, got ${value.byteLength}`);
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  return { tsMinMs: view.getFloat64(0, true), tsMaxMs: view.getFloat64(8, true) };
}

/** The bits of a needle's trigrams (lower-cased, JSON-escaped as stored); empty when shorter than a trigram. */
export function needleBits(needle: string): number[] {
  return [...new Set(trigramHashes(needle).map(trigramBit))];
}

const SIGMA = 0x3c3;
const FINAL_SIGMA = 0x3c2;

/**
 * Per trigram of a needle holding σ, the bits a sketch may hold for it: the trigram's, and those
 * with any of its σ as ς. A sketch written before lowerStoredJson lower-cased a Σ right after an
 * escape to ς, where the value gives σ; asked only for the σ form, it ruled out the block.
 */
export function needleBitChoices(needle: string): number[][] {
  const choices: number[][] = [];
  const forms = (code: number) => (code === SIGMA ? [SIGMA, FINAL_SIGMA] : [code]);
  for (let i = 2; i < needle.length; i++) {
    const bits = new Set<number>();
    for (const a of forms(needle.charCodeAt(i - 2))) for (const b of forms(needle.charCodeAt(i - 1))) for (const c of forms(needle.charCodeAt(i))) bits.add(trigramBit(trigramHash(a, b, c)));
    choices.push([...bits]);
  }
  return choices;
}

/** As sketchMayContain, for {@link needleBitChoices}: each trigram needs one of its bits set. */
export function sketchMayContainChoices(value: Uint8Array, choices: readonly (readonly number[])[]): boolean {
  return choices.every((bits) => bits.some((bit) => ((value[HEADER_BYTES + (bit >>> 3)] as number) & (1 << (bit & 7))) !== 0));
}
