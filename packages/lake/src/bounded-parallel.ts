/** Requests to one store in flight at once for a cold read or a cleanup: enough to hide latency, few enough to be polite. */
export const OBJECT_REQUESTS_IN_FLIGHT_MAX = 8;

/**
 * `fn` over `items` with at most `limit` calls in flight, results in the order of `items`.
 * The first failure rejects (calls already started still finish, their results dropped).
 */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError(`limit must be a positive integer, got ${limit}`);
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const index = next++;
      if (index >= items.length) return;
      results[index] = await fn(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
