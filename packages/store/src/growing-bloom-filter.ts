/**
 * A Bloom filter over eventIds that grows as ids are added: what ErasedIds and PrunedIds hold in
 * memory of the ids they keep in LevelDB, so an id it rules out costs no read.
 */

/** Bits per id of a filter in GrowingBloomFilter (k = 7 probes: under 0.5% false positives each). */
const BITS_PER_ID = 12;
const PROBES = 7;
/**
 * Ids the first filter is sized for at least (96 KiB); each next one holds twice as many as the
 * one before, so a million ids take five filters (~2.9 MB) and a lookup asks each.
 */
const FIRST_CAPACITY = 65_536;

/**
 * A Bloom filter over strings that grows without being rebuilt: when its newest filter holds
 * as many ids as it was sized for, a filter twice that size is added, and an id may be held
 * when any filter says so. Never a false negative; under 0.5% false positives per full filter.
 * Each filter has exactly BITS_PER_ID bits per id it is sized for (1.5 bytes; a power of two
 * of bits would cost up to twice that).
 */
export class GrowingBloomFilter {
  readonly #firstCapacity: number;
  readonly #filters: Array<{ bits: Uint32Array; size: number; count: number; capacity: number }> = [];

  /** `expectedIds`: how many ids the first filter is sized for, when known (one filter then holds them all). */
  constructor(expectedIds = FIRST_CAPACITY) {
    this.#firstCapacity = Math.max(FIRST_CAPACITY, Math.ceil(expectedIds));
  }

  /** Bytes the filters take. */
  get bytes(): number {
    return this.#filters.reduce((sum, filter) => sum + filter.bits.byteLength, 0);
  }

  add(id: string): void {
    let filter = this.#filters[this.#filters.length - 1];
    if (filter === undefined || filter.count >= filter.capacity) {
      const capacity = filter === undefined ? this.#firstCapacity : filter.capacity * 2;
      const words = Math.ceil((capacity * BITS_PER_ID) / 32);
      filter = { bits: new Uint32Array(words), size: words * 32, count: 0, capacity };
      this.#filters.push(filter);
    }
    const [h1, h2] = hashes(id);
    for (let i = 0; i < PROBES; i++) {
      const bit = ((h1 + Math.imul(i, h2)) >>> 0) % filter.size;
      filter.bits[bit >>> 5] = (filter.bits[bit >>> 5] as number) | (1 << (bit & 31));
    }
    filter.count++;
  }

  mayHave(id: string): boolean {
    if (this.#filters.length === 0) return false;
    const [h1, h2] = hashes(id);
    for (const filter of this.#filters) {
      let all = true;
      for (let i = 0; i < PROBES && all; i++) {
        const bit = ((h1 + Math.imul(i, h2)) >>> 0) % filter.size;
        all = ((filter.bits[bit >>> 5] as number) & (1 << (bit & 31))) !== 0;
      }
      if (all) return true;
    }
    return false;
  }
}

/** Two 32-bit FNV-1a hashes of the UTF-16 code units (different offsets), the second odd (double hashing). */
function hashes(text: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  return [a >>> 0, (b ^ (b >>> 15)) | 1];
}
