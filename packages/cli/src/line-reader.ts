import { isUtf8 } from 'node:buffer';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { invalidUtf8Offset } from '@auditlake/model';
import type { InputFile } from './input-files.js';

const GZIP_MAGIC = [0x1f, 0x8b];

/** Where a line holds bytes that are not UTF-8: the first such byte, counted from 0. */
export interface InvalidUtf8 {
  /** In the input (the uncompressed bytes of a gzip file). */
  inputByte: number;
  /** In the line. */
  lineByte: number;
  /** The input is gzip-compressed: `inputByte` counts its bytes once gunzipped. */
  gunzipped?: true;
}

/** A line of input: its number (from 1) and its text without the line break. */
export interface Line {
  number: number;
  /**
   * Empty for a line longer than LINE_CHARS_MAX. For a line with `invalidUtf8`, its text with
   * U+FFFD for the bad bytes: enough to see where a JSON record ends, never to be imported.
   */
  text: string;
  /** The line was longer than LINE_CHARS_MAX: not kept, only counted. */
  overlong?: true;
  /** The line holds bytes that are not valid UTF-8: it is to be refused, not imported. */
  invalidUtf8?: InvalidUtf8;
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

const NEWLINE = 0x0a;

function lineOf(number: number, text: string | typeof OVERLONG_LINE, invalidUtf8: InvalidUtf8 | undefined): Line {
  const line: Line = text === OVERLONG_LINE ? { number, text: '', overlong: true } : { number, text: text.endsWith('\r') ? text.slice(0, -1) : text };
  if (invalidUtf8 !== undefined) line.invalidUtf8 = invalidUtf8;
  return line;
}

/**
 * How many bytes at the end of `bytes` are the start of a UTF-8 character that the next chunk
 * completes (0 when the last character is whole, or when the bytes are not UTF-8 there anyway).
 */
function unfinishedTail(bytes: Buffer): number {
  for (let back = 1; back <= 3 && back <= bytes.length; back++) {
    const byte = bytes[bytes.length - back] as number;
    if ((byte & 0xc0) === 0x80) continue;
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}

/**
 * The lines of a file or of standard input, gzip-compressed or not (told by the first two
 * bytes, not the name). `onBytes` hears how many bytes of the input itself (compressed, when
 * it is) have been read, for progress. `\n` and `\r\n` end lines; a leading byte-order mark
 * (U+FEFF) is not part of the first line. A last line without a break counts on standard input
 * and in a gzip file (both complete when they end); in a plain file it may be a line its writer
 * is still writing, so it is not yielded but handed to `onUnterminated`.
 *
 * Bytes are checked, not decoded leniently: a line holding bytes that are not UTF-8 comes with
 * `invalidUtf8`, for the caller to refuse. Decoded with U+FFFD in their place, a Latin-1 `José`
 * and `Josè` became one text, one eventId, and the second record was dropped as a duplicate
 * without a word (review). A character split between two read chunks is held back until the
 * next one completes it; at the end of the input it is a bad byte like any other.
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
  /** Where the bytes not yet split start in the input, and where the current line starts. */
  let offset = 0;
  let lineStart = 0;
  /** The first bad byte of the current line, when it has one. */
  let invalid: InvalidUtf8 | undefined;
  /** The line text completes goes with `invalid`; any more are whole lines of the same text, checked. */
  const linesOf = (text: string): Line[] =>
    splitter.push(decoded(text)).map((line, i) => {
      const bad = i === 0 ? invalid : undefined;
      invalid = undefined;
      return lineOf(++number, line, bad);
    });
  /** Splits `bytes`, which end on a character boundary (or are bad there), into lines. */
  const split = (bytes: Buffer): Line[] => {
    // The common case: all UTF-8, checked natively, decoded at once.
    if (isUtf8(bytes)) {
      const lines = linesOf(bytes.toString('utf8'));
      const lastBreak = bytes.lastIndexOf(NEWLINE);
      if (lastBreak !== -1) lineStart = offset + lastBreak + 1;
      offset += bytes.length;
      return lines;
    }
    // Line by line (a line break is never part of a longer UTF-8 character), to tell which hold bad bytes.
    const lines: Line[] = [];
    for (let from = 0; from < bytes.length; ) {
      const at = bytes.indexOf(NEWLINE, from);
      const end = at === -1 ? bytes.length : at;
      const segment = bytes.subarray(from, end);
      const bad = invalidUtf8Offset(segment);
      if (bad !== -1 && invalid === undefined) invalid = { inputByte: offset + from + bad, lineByte: offset + from + bad - lineStart, ...(isGzip ? { gunzipped: true as const } : {}) };
      lines.push(...linesOf(segment.toString('utf8') + (at === -1 ? '' : '\n')));
      if (at === -1) break;
      lineStart = offset + at + 1;
      from = at + 1;
    }
    offset += bytes.length;
    return lines;
  };
  let held: Buffer = Buffer.alloc(0);
  try {
    for await (const chunk of content) {
      const bytes = held.length === 0 ? chunk : Buffer.concat([held, chunk]);
      const tail = unfinishedTail(bytes);
      held = bytes.subarray(bytes.length - tail);
      yield* split(tail === 0 ? bytes : bytes.subarray(0, bytes.length - tail));
    }
    // A character the input ends in the middle of: bad bytes.
    if (held.length > 0) yield* split(held);
    const pending = splitter.rest();
    if (pending !== '' || invalid !== undefined) {
      const last = lineOf(++number, pending, invalid);
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
