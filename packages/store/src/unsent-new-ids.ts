/**
 * Which outbox entries hold an event whose eventId this process assigned when it received the
 * event, and that no outbox read has handed out yet. Such an id exists nowhere else: no forward
 * can have carried it, so no node can hold the event, and the leader may store it without its
 * idempotency lookup (as it does for ids it assigns itself). That lookup, a LevelDB get per
 * forwarded event, was the largest part of a busy leader's reads.
 *
 * Kept in memory only: after a restart nobody knows what was sent before the crash, so no
 * entry counts as unsent. Entries diverted from the log into the outbox are never added.
 */
export class UnsentNewIds {
  /** Half-open ranges [from, to) of outbox numbers holding ids assigned here, ascending. */
  readonly #runs: Array<[number, number]> = [];
  /** Every outbox number below this has been handed out by a read (or was skipped by one). */
  #readBelow = 0;

  /** Outbox entry `n` (numbers only grow) holds an id this process assigned. */
  add(n: number): void {
    const last = this.#runs[this.#runs.length - 1];
    if (last !== undefined && last[1] === n) last[1] = n + 1;
    else this.#runs.push([n, n + 1]);
  }

  /**
   * Whether entry `n` holds an id assigned here and was never handed out; from now on it (and
   * every number below it) counts as handed out. Reads go from the oldest entry up, so a read
   * that skips a number (an entry not yet visible) errs on the safe side: it is looked up.
   */
  take(n: number): boolean {
    const unsent = n >= this.#readBelow && this.#holds(n);
    if (n >= this.#readBelow) this.#readBelow = n + 1;
    // A run wholly below the mark can never answer true again.
    while (this.#runs.length > 0 && (this.#runs[0] as [number, number])[1] <= this.#readBelow) this.#runs.shift();
    return unsent;
  }

  #holds(n: number): boolean {
    for (const [from, to] of this.#runs) {
      if (n < from) return false;
      if (n < to) return true;
    }
    return false;
  }
}
