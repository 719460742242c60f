import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { createGunzip } from 'node:zlib';
import type { InputFile } from './input-files.js';

const GZIP_MAGIC = [0x1f, 0x8b];

/** A line of input: its number (from 1) and its text without the line break. */
export interface Line {
  number: number;
  /** Empty for a line longer than LINE_CHARS_MAX. */
  text: string;
  /** The line was longer than LINE_CHARS_MAX: not kept, only counted. */
  overlong?: true;
}

/**
 * The longest line kept, in characters: 256 MB as a string. A longer line is dropped as it
 * arrives and reported (`overlong`): kept, a file without line breaks (a gzip file of 6 GB of
 * one character) grew the import until it died out of memory (review), and V8 cannot hold a
 * string past ~512 Mi characters anyway. A compact JSON array on one line must stay below it.
 */
export const LINE_CHARS_MAX = 128 * 1024 * 1024;

/** What LineSplitter gives for a line longer than its limit. */
export const OVERLONG_LINE: unique symbol = Symbol('overlong line');

function lineOf(number: number, text: string | typeof OVERLONG_LINE): Line {
  if (text === OVERLONG_LINE) return { number, text: '', overlong: true };
  return { number, text: text.endsWith('\r') ? text.slice(0, -1) : text };
}

/**
 * The lines of a file or of standard input, gzip-compressed or not (told by the first two
 * bytes, not the name). `onBytes` hears how many bytes of the input itself (compressed, when
 * it is) have been read, for progress. `\n` and `\r\n` end lines; a leading byte-order mark
 * (U+FEFF) is not part of the first line. A last line without a break counts on standard input
 * and in a gzip file (both complete when they end); in a plain file it may be a line its writer
 * is still writing, so it is not yielded but handed to `onUnterminated`.
 */
export async function* readLines(file: InputFile, onBytes: (bytes: number) => void = () => undefined, onUnterminated: (line: Line) => void = () => undefined): AsyncGenerator<Line> {
  const raw: Readable = file.kind === 'stdin' ? process.stdin : createReadStream(file.path);
  raw.on('data', (chunk: Buffer) => onBytes(chunk.length));
  const chunks = raw[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const first = await chunks.next();
  if (first.done) return;
  const rest = (async function* () {
    yield first.value;
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
  })();
  const isGzip = first.value[0] === GZIP_MAGIC[0] && first.value[1] === GZIP_MAGIC[1];
  const content: AsyncIterable<Buffer> = isGzip ? Readable.from(rest).pipe(createGunzip()) : rest;
  const decoder = new StringDecoder('utf8');
  const splitter = new LineSplitter();
  let number = 0;
  let atStart = true;
  const decoded = (text: string): string => {
    if (atStart && text !== '') {
      atStart = false;
      if (text.startsWith('\uFEFF')) return text.slice(1);
    }
    return text;
  };
  try {
    for await (const chunk of content) {
      for (const text of splitter.push(decoded(decoder.write(chunk)))) yield lineOf(++number, text);
    }
    for (const text of splitter.push(decoded(decoder.end()))) yield lineOf(++number, text);
    const pending = splitter.rest();
    if (pending !== '') {
      const last = lineOf(++number, pending);
      if (file.kind === 'file' && !isGzip) onUnterminated(last);
      else yield last;
    }
  } finally {
    if (file.kind === 'file') raw.destroy();
  }
}

/**
 * Splits text arriving in chunks into lines at `\n`. Every character is searched once, and the
 * pieces of a line that spans chunks are kept apart and joined once when its end comes: adding
 * each chunk to the unfinished line and splitting that again made a long line cost the square
 * of its length (a 100 MB line in 64 KiB chunks searched ~80 GB).
 */
export class LineSplitter {
  #pieces: string[] = [];
  #pending = 0;
  #overlong = false;
  #scanned = 0;
  readonly #maxChars: number;

  constructor(maxChars = LINE_CHARS_MAX) {
    this.#maxChars = maxChars;
  }

  /** Characters searched for line breaks so far: the input's length, once each. */
  get scanned(): number {
    return this.#scanned;
  }

  /** The lines `text` ends (without their `\n`, OVERLONG_LINE for one past the limit); the rest waits for the next chunk. */
  push(text: string): Array<string | typeof OVERLONG_LINE> {
    const lines: Array<string | typeof OVERLONG_LINE> = [];
    let from = 0;
    for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', from)) {
      this.#keep(text.slice(from, at));
      lines.push(this.#take());
      from = at + 1;
    }
    if (from < text.length) this.#keep(from === 0 ? text : text.slice(from));
    this.#scanned += text.length;
    return lines;
  }

  /** The text after the last line break (empty when none), taken. */
  rest(): string | typeof OVERLONG_LINE {
    return this.#take();
  }

  #keep(piece: string): void {
    if (this.#overlong) return;
    if (this.#pending + piece.length > this.#maxChars) {
      this.#overlong = true;
      this.#pieces = [];
      this.#pending = 0;
      return;
    }
    this.#pieces.push(piece);
    this.#pending += piece.length;
  }

  #take(): string | typeof OVERLONG_LINE {
    const line = this.#overlong ? OVERLONG_LINE : this.#pieces.length === 1 ? (this.#pieces[0] ?? '') : this.#pieces.join('');
    this.#pieces = [];
    this.#pending = 0;
    this.#overlong = false;
    return line;
  }
}
