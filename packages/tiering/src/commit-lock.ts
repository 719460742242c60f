/**
 * One tier commit at a time in this process. The sweep holds it for a whole batch (its files
 * are written just before its commit, and orphan cleanup must not find them in between); a table
 * maintenance run holds it throughout (its encoding runs in worker threads, so only the sweep
 * waits). Commits also resolve a race by conditional create and re-apply, but only where the
 * store refuses a second create of the same key; on a store that ignores `If-None-Match` two
 * commits of one version from this process would overwrite each other, so they never overlap here.
 */
export class CommitLock {
  #tail: Promise<unknown> = Promise.resolve();

  /** Runs `fn` after every earlier holder finished; the next waits for it. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(fn);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}
