import { onTestFinished } from 'vitest';
import { ObjectStore } from '../object-store.js';

/**
 * Counts the GETs every ObjectStore sends from now to the end of the test (each reader makes its
 * own store), by the first of `dirs` whose `/<dir>/` the key holds, else as `otherName`. `find`
 * GETs through `get`, so it counts too. Returns a snapshot of the counts so far.
 */
export function countObjectGets(dirs: readonly string[], otherName = 'other'): () => Record<string, number> {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called back with its own `this` below
  const original = ObjectStore.prototype.get;
  const counts: Record<string, number> = {};
  ObjectStore.prototype.get = function (this: ObjectStore, key: string) {
    const dirName = dirs.find((dir) => key.includes(`/${dir}/`)) ?? otherName;
    counts[dirName] = (counts[dirName] ?? 0) + 1;
    return original.call(this, key);
  };
  onTestFinished(() => {
    ObjectStore.prototype.get = original;
  });
  return () => ({ ...counts });
}
