import type { ParquetFooter } from './parquet-reader.js';

/**
 * Parsed footers of data files by key, the least recently used dropped beyond `entriesMax`.
 * Committed data files never change (a rewrite gets a new key), so a footer once read stays
 * right; caching it saves a request and a parse on every search that opens the file again.
 */
export class ParquetFooterCache {
  readonly entriesMax: number;
  readonly #footers = new Map<string, ParquetFooter>();

  constructor(entriesMax: number) {
    if (!Number.isSafeInteger(entriesMax) || entriesMax < 1) throw new TypeError(`entriesMax must be a positive integer, got ${entriesMax}`);
    this.entriesMax = entriesMax;
  }

  get size(): number {
    return this.#footers.size;
  }

  get(key: string): ParquetFooter | undefined {
    const footer = this.#footers.get(key);
    if (footer !== undefined) {
      // Map iteration order is insertion order: re-inserting marks it most recently used.
      this.#footers.delete(key);
      this.#footers.set(key, footer);
    }
    return footer;
  }

  set(key: string, footer: ParquetFooter): void {
    this.#footers.delete(key);
    this.#footers.set(key, footer);
    while (this.#footers.size > this.entriesMax) {
      const oldest = this.#footers.keys().next().value as string;
      this.#footers.delete(oldest);
    }
  }
}
