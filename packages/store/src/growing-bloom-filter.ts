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
 * Ids one filter is sized for at most: its bits then number at most 2^32, all a probe can reach.
 * A probe is a 32-bit hash modulo the filter's size, so the bits of a larger filter past 2^32
 * were never set: a filter sized for the ids of months at hundreds of events a second stopped
 * ruling ids out (22% false positives at a billion ids, 96% at three billion).
 */
export const FILTER_CAPACITY_MAX = Math.floor(2 ** 32 / BITS_PER_ID);

/** Default bound of a GrowingBloomFilter's memory (`bytesMax`). */
export const FILTER_BYTES_MAX_DEFAULT = 512 * 1024 * 1024;

export interface GrowingBloomFilterOptions {
  /** How many ids the first filter is sized for, when known (one filter then holds them all). */
  expectedIds?: number;
  /** Ids one filter holds at most (FILTER_CAPACITY_MAX; smaller in tests). */
  capacityMax?: number;
  /** Bytes the filters may take together; past them the filter is full (FILTER_BYTES_MAX_DEFAULT). */
  bytesMax?: number;
}

/**
 * A Bloom filter over strings that grows without being rebuilt: when its newest filter holds
 * as many ids as it was sized for, a filter twice that size (at most `capacityMax` ids) is
 * added, and an id may be held when any filter says so. Never a false negative; under 0.5%
 * false positives per full filter. Each filter has exactly BITS_PER_ID bits per id it is sized
 * for (1.5 bytes; a power of two of bits would cost up to twice that).
 *
 * Its memory is bounded (`bytesMax`): a filter that would need more is full — it holds no more
 * ids and rules none out from then on, so every id is read where it is kept (slower, never
 * wrong). Without the bound it grew by 1.5–3 bytes an id kept, gigabytes at the ids a busy node
 * keeps for a month.
 */
export class GrowingBloomFilter {
  readonly #firstCapacity: number;
  readonly #capacityMax: number;
  readonly #bytesMax: number;
  readonly #filters: Array<{ bits: Uint32Array; size: number; count: number; capacity: number }> = [];
  #full = false;

  constructor(options: GrowingBloomFilterOptions = {}) {
    this.#capacityMax = Math.min(options.capacityMax ?? FILTER_CAPACITY_MAX, FILTER_CAPACITY_MAX);
    this.#firstCapacity = Math.min(this.#capacityMax, Math.max(FIRST_CAPACITY, Math.ceil(options.expectedIds ?? FIRST_CAPACITY)));
    this.#bytesMax = options.bytesMax ?? FILTER_BYTES_MAX_DEFAULT;
  }

  /** Bytes the filters take. */
  get bytes(): number {
    return this.#filters.reduce((sum, filter) => sum + filter.bits.byteLength, 0);
  }

  /** True once an id did not fit in `bytesMax`: every id may be held from then on. */
  get full(): boolean {
    return this.#full;
  }

  add(id: string): void {
    if (this.#full) return;
    let filter = this.#filters[this.#filters.length - 1];
    if (filter === undefined || filter.count >= filter.capacity) {
      const capacity = filter === undefined ? this.#firstCapacity : Math.min(filter.capacity * 2, this.#capacityMax);
      const words = Math.ceil((capacity * BITS_PER_ID) / 32);
      if (this.bytes + words * 4 > this.#bytesMax) {
        this.#full = true;
        return;
      }
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
    if (this.#full) return true;
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
