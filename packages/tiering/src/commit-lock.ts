/**
 * One tier commit at a time in this process, in the order asked. The sweep holds it for a whole
 * batch (its files are written just before its commit, and orphan cleanup must not find them in
 * between); a table maintenance step holds it for one turn — re-read the table, build the
 * commit, commit (and orphan cleanup's read of what is referenced) — while a compaction's
 * reading and encoding happen outside it. Being first-come first-served, it gives a step its
 * turn between two sweeps that follow each other back to back. Commits also resolve a race by
 * conditional create and re-apply, but only where the store refuses a second create of the same
 * key; on a store that ignores `If-None-Match` two commits of one version from this process
 * would overwrite each other, so they never overlap here.
 */
export class CommitLock {
  #tail: Promise<unknown> = Promise.resolve();
  #turns = 0;

  /**
   * Turns begun so far; inside a turn, its own number. A holder that finds it one more than at
   * its last turn knows nobody else held the lock in between (the sweep reuses the table it
   * committed then).
   */
  get turns(): number {
    return this.#turns;
  }

  /** Runs `fn` after every earlier holder finished; the next waits for it. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(() => {
      this.#turns++;
      return fn();
    });
    this.#tail = result.catch(() => undefined);
    return result;
  }
}
