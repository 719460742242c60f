/** Requests to one store in flight at once for a cold read or a cleanup: enough to hide latency, few enough to be polite. */
export const OBJECT_REQUESTS_IN_FLIGHT_MAX = 8;

/**
 * `fn` over `items` with at most `limit` calls in flight, results in the order of `items`.
 * The first failure stops the handing out of items and rejects once the calls already started
 * have settled (their results dropped): the bound holds until the caller hears of the failure,
 * so a caller that then starts other work (a lookup that took its turn) never has more than
 * `limit` calls of this one still running beside it.
 */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError(`limit must be a positive integer, got ${limit}`);
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined) {
      const index = next++;
      if (index >= items.length) return;
      try {
        results[index] = await fn(items[index] as T, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure.error;
  return results;
}
