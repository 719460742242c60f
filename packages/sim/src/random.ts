/**
 * A seeded pseudo-random stream (mulberry32): the simulator's only source of randomness, so a
 * seed replays a run exactly. fork() derives an independent stream per concern (network,
 * faults, workload), so adding a draw to one does not shift the others.
 */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new TypeError('pick from an empty list');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** An independent stream derived from this one's seed and `label`. */
  fork(label: string): Random {
    let hash = this.#state ^ 0x9e3779b9;
    for (let i = 0; i < label.length; i++) hash = Math.imul(hash ^ label.charCodeAt(i), 0x01000193) >>> 0;
    return new Random(hash);
  }
}
