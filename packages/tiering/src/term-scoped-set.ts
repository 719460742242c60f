/**
 * Keys remembered for the current leadership term only: adding or asking under a newer term
 * forgets every key of the older ones. What a sweeper learns once per term and target (the
 * store honours conditional create, the namespace exists) must be learnt again by a new term
 * anyway, and a set keyed by term as well grew by an entry per target at every failover of a
 * node's life.
 */
export class TermScopedSet {
  #term: number | undefined;
  readonly #keys = new Set<string>();

  has(term: number, key: string): boolean {
    this.#enter(term);
    return this.#keys.has(key);
  }

  add(term: number, key: string): void {
    this.#enter(term);
    this.#keys.add(key);
  }

  /** Keys held (those of the current term). */
  get size(): number {
    return this.#keys.size;
  }

  #enter(term: number): void {
    if (term === this.#term) return;
    this.#term = term;
    this.#keys.clear();
  }
}
