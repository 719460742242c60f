import { createHash, timingSafeEqual } from 'node:crypto';

/** SHA-256 of a secret: fixed length, so comparing digests takes the same time for any input. */
export function digest(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** Compares a presented secret with a stored digest in constant time. */
export function matchesDigest(presented: string, storedDigest: Buffer): boolean {
  return timingSafeEqual(digest(presented), storedDigest);
}
