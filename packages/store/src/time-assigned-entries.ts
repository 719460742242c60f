/**
 * Which outbox entries hold an event whose time this node set when it received it (the sender
 * sent no `ts`): the leader compares such an event with the one it holds under its eventId by
 * all but the time, since a retry of it is given another time (EncodedEvent.timeAssigned).
 *
 * Kept in memory only, as UnsentNewIds: after a restart no entry counts as such, and the leader
 * then compares the time too (a retry of such an event may be answered as a conflict).
 */
export class TimeAssignedEntries {
  /** Half-open ranges [from, to) of outbox numbers, ascending. */
  readonly #runs: Array<[number, number]> = [];

  /** Outbox entry `n` (numbers only grow) holds an event whose time this node set. */
  add(n: number): void {
    const last = this.#runs[this.#runs.length - 1];
    if (last !== undefined && last[1] === n) last[1] = n + 1;
    else this.#runs.push([n, n + 1]);
  }

  has(n: number): boolean {
    for (const [from, to] of this.#runs) {
      if (n < from) return false;
      if (n < to) return true;
    }
    return false;
  }

  /** Every entry below `n` has left the outbox. */
  forgetBelow(n: number): void {
    while (this.#runs.length > 0 && (this.#runs[0] as [number, number])[1] <= n) this.#runs.shift();
  }
}
