/**
 * A set of uint32 values in one typed array (open addressing, linear probing): what sketching
 * a row group needs, millions of adds of mostly repeated trigram hashes, at a fraction of a
 * JavaScript Set's cost. Values must be uint32 (`>>> 0`).
 */
export class Uint32Set {
  #slots: Uint32Array;
  #mask: number;
  #shift: number;
  /** 0 marks an empty slot, so the value 0 is tracked apart. */
  #hasZero = false;
  #size = 0;

  constructor(capacityLog2 = 14) {
    this.#slots = new Uint32Array(1 << capacityLog2);
    this.#mask = (1 << capacityLog2) - 1;
    this.#shift = 32 - capacityLog2;
  }

  get size(): number {
    return this.#size + (this.#hasZero ? 1 : 0);
  }

  add(value: number): void {
    if (value === 0) {
      this.#hasZero = true;
      return;
    }
    const slots = this.#slots;
    // Fibonacci hashing: the top bits of the product, so similar values spread out.
    let i = Math.imul(value, 0x9e3779b1) >>> this.#shift;
    for (;;) {
      const slot = slots[i] as number;
      if (slot === value) return;
      if (slot === 0) break;
      i = (i + 1) & this.#mask;
    }
    slots[i] = value;
    // Kept at most half full, so probes stay short.
    if (++this.#size * 2 > slots.length) this.#grow();
  }

  /** Calls `visit` with every value, in no particular order. */
  forEach(visit: (value: number) => void): void {
    if (this.#hasZero) visit(0);
    for (const slot of this.#slots) if (slot !== 0) visit(slot);
  }

  #grow(): void {
    const old = this.#slots;
    const log2 = 33 - this.#shift;
    this.#slots = new Uint32Array(1 << log2);
    this.#mask = (1 << log2) - 1;
    this.#shift = 32 - log2;
    this.#size = 0;
    for (const slot of old) if (slot !== 0) this.add(slot);
  }
}
