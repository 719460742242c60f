import { createHash } from 'node:crypto';

/**
 * How many preceding records of a file are remembered to tell identical records apart. A
 * bound, so a file of any length is read in bounded memory; identical records (the same user
 * doing the same thing in the same millisecond) are neighbours in a log, far inside it.
 */
export const IDENTICAL_RECORDS_WINDOW = 65_536;

/**
 * Event ids for imported records: none of the four formats carries an id of its own per record
 * (Lakekeeper's and LAS's request_id is shared by every record of one request), so the id is a
 * hash of the format and the record's text. The same file imported again yields the same ids,
 * and the node stores nothing twice. Two identical records in one file are two events (a log
 * can hold the same line twice when it happened twice), so the n-th repeat within the window
 * hashes its ordinal too. One instance per file, fed every record in file order.
 */
export class RecordIds {
  readonly #format: string;
  readonly #seen = new Map<string, number>();

  constructor(format: string) {
    this.#format = format;
  }

  /** The id of the next record, whose canonical text is `text`. */
  next(text: string): string {
    const base = hash(`${this.#format}\n${text}`);
    const repeats = this.#seen.get(base) ?? 0;
    this.#seen.delete(base);
    this.#seen.set(base, repeats + 1);
    if (this.#seen.size > IDENTICAL_RECORDS_WINDOW) {
      const oldest = this.#seen.keys().next().value;
      if (oldest !== undefined) this.#seen.delete(oldest);
    }
    return `${this.#format}-${repeats === 0 ? base : hash(`${base}#${repeats}`)}`;
  }
}

/** 128 bits of SHA-256 as hex: far beyond any collision a log's size could reach. */
function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 32);
}
