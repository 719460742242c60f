import type { ObjectStore } from '../object-store.js';

/**
 * `objects` as a reader sees it when something else deletes `key` just before the reader fetches
 * it (an erasure deleting the files it replaced while a compaction plans to read them): the
 * object is deleted as `get` or `find` asks for it. Every other call is the store's own.
 */
export function vanishingOnRead(objects: ObjectStore, key: string): ObjectStore {
  return new Proxy(objects, {
    get(target, prop) {
      if (prop === 'get' || prop === 'find') {
        return async (asked: string) => {
          if (asked === key) await target.delete(asked);
          return prop === 'find' ? target.find(asked) : target.get(asked);
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
