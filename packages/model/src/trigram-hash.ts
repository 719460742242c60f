/**
 * The trigram hash the free-text indexes share: the local store's block sketches and the
 * tiered files' row-group sketches hash a trigram (three consecutive UTF-16 code units) the
 * same way, so both answer `q` with the same semantics. It must never change: sketches
 * already written, on disk and in tiered files, were built with it.
 */

/** A 32-bit hash of the trigram (a, b, c) of UTF-16 code units: multiplicative, the same on every node. */
export function trigramHash(a: number, b: number, c: number): number {
  const h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca6b) ^ Math.imul(c, 0xc2b2ae35);
  return Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 0;
}

/**
 * Calls `visit` with the hash of every trigram of `text` (repeats included), in order. A text
 * shorter than three code units has none.
 */
export function forEachTrigramHash(text: string, visit: (hash: number) => void): void {
  if (text.length < 3) return;
  let a = text.charCodeAt(0);
  let b = text.charCodeAt(1);
  for (let i = 2; i < text.length; i++) {
    const c = text.charCodeAt(i);
    visit(trigramHash(a, b, c));
    a = b;
    b = c;
  }
}

/** The distinct trigram hashes of `text`; empty when it is shorter than a trigram. */
export function trigramHashes(text: string): number[] {
  const hashes = new Set<number>();
  forEachTrigramHash(text, (hash) => hashes.add(hash));
  return [...hashes];
}
