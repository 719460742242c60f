/**
 * mulberry32: a tiny 32-bit PRNG returning floats in [0, 1). Seeded, so a generated data set or
 * a property test's run can be replayed from its seed. Not for anything that must be unguessable.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}
