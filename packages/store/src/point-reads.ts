import type { Level } from 'level';

/** Keys below which one native read is made: splitting pays only once each part has work to do. */
const SPLIT_KEYS_MIN = 64;
/** Native reads a large point read is split into: LevelDB then finds and decompresses blocks on that many threads. */
const SPLIT_PARTS = 2;

/**
 * The values of `keys`, in their order (undefined where a key is absent), read by SPLIT_PARTS
 * native reads side by side. One `getMany` runs on one thread, and each key of an indexed
 * search's page is usually in a different block of the time range (a block to find, read and
 * decompress per event), so a page of 200 point reads kept one core busy while the other waited.
 */
export async function getManySideBySide(db: Level<string, string>, keys: readonly string[]): Promise<Array<string | undefined>> {
  if (keys.length < SPLIT_KEYS_MIN) return db.getMany(keys as string[]);
  const size = Math.ceil(keys.length / SPLIT_PARTS);
  const parts = await Promise.all(Array.from({ length: SPLIT_PARTS }, (_, i) => db.getMany(keys.slice(i * size, (i + 1) * size))));
  return parts.flat();
}
