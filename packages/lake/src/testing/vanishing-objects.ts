import type { ObjectStore } from '../object-store.js';

/**
 * `objects` as a reader sees it when something else deletes `key` just before the reader fetches
 * it: the object is deleted as `get` or `find` first asks for it, after `beforeDelete` (what took
 * it out of the table: an erasure's or another compaction's swap; nothing, for a file lost
 * outright). Every other call is the store's own.
 */
export function vanishingOnRead(objects: ObjectStore, key: string, beforeDelete: () => Promise<unknown> = async () => undefined): ObjectStore {
  let done = false;
  return new Proxy(objects, {
    get(target, prop) {
      if (prop === 'get' || prop === 'find') {
        return async (asked: string) => {
          if (asked === key && !done) {
            done = true;
            await beforeDelete();
            await target.delete(asked);
          }
          return prop === 'find' ? target.find(asked) : target.get(asked);
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
