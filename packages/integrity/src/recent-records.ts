/**
 * The last `capacity` items added, looked up by seq. Items come with strictly ascending seqs,
 * so a ring in insertion order can be searched by bisection. A Map used the same way (delete the
 * oldest key on each add) was the verifier's largest cost: a Map's first key is found by
 * skipping over every deleted entry still held in its table.
 */
export class RecentBySeq<T extends { seq: number }> {
  readonly #items: Array<T | undefined>;
  #start = 0;
  #size = 0;

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new TypeError(`capacity must be a positive integer, got ${capacity}`);
    this.#items = new Array<T | undefined>(capacity).fill(undefined);
  }

  get size(): number {
    return this.#size;
  }

  /** Adds an item whose seq is above every seq held; the oldest goes when the ring is full. */
  add(item: T): void {
    const capacity = this.#items.length;
    const newest = this.#size === 0 ? undefined : this.#at(this.#size - 1);
    if (newest !== undefined && item.seq <= newest.seq) throw new TypeError(`seqs must ascend: ${item.seq} after ${newest.seq}`);
    if (this.#size < capacity) {
      this.#items[(this.#start + this.#size) % capacity] = item;
      this.#size++;
    } else {
      this.#items[this.#start] = item;
      this.#start = (this.#start + 1) % capacity;
    }
  }

  /** The item held for `seq`, if any. */
  get(seq: number): T | undefined {
    let low = 0;
    let high = this.#size - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const item = this.#at(middle);
      if (item.seq === seq) return item;
      if (item.seq < seq) low = middle + 1;
      else high = middle - 1;
    }
    return undefined;
  }

  #at(index: number): T {
    return this.#items[(this.#start + index) % this.#items.length] as T;
  }
}
