/**
 * Parses a JSON request body given as UTF-8 bytes, without ever decoding it into one string
 * of 128 KiB or more when it is a large array.
 *
 * Why: V8 puts a string of 128 KiB or more in its large-object space, in freshly mapped
 * memory, and on this kind of VM writing such a string cost about 5 ns per byte against
 * 0.15 ns below the limit (page faults). A body of 500 events is about 230 KB: decoding it
 * whole cost about 2.3 µs per event, a tenth of the node's ingest budget. So a large array
 * is cut at element boundaries into pieces of about 64 KiB, each parsed on its own.
 *
 * A cut is a `},` found by byte search, which could also sit inside a string; a piece is
 * taken only if `[` + its bytes + `]` parses, which can only happen when the cut is between
 * two elements of the top-level array (inside a string, the added `]` leaves the string
 * unterminated; inside a nested value, it leaves a bracket unclosed), and a piece after a cut
 * must hold an element (the comma needs one after it). Any piece that does not parse so sends
 * the whole body to JSON.parse, which then either succeeds (the cut was inside a
 * string) or fails with its usual message. So the result, and every error, is JSON.parse's.
 */
const PIECE_BYTES = 64 * 1024;
const OPEN_BRACKET = 0x5b;
const CUT_MARK = Buffer.from('},');

export function parseJsonBody(bytes: Uint8Array): unknown {
  const body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return (body.length > 2 * PIECE_BYTES ? parseArrayInPieces(body) : undefined) ?? JSON.parse(body.toString('utf8'));
}

/** The array's elements, or undefined when the body is not an array that cuts cleanly. */
function parseArrayInPieces(body: Buffer): unknown[] | undefined {
  let open = 0;
  while (open < body.length && isJsonWhitespace(body[open] as number)) open++;
  if (body[open] !== OPEN_BRACKET) return undefined;
  const elements: unknown[] = [];
  // `from` is where a piece's elements start: right after the `[`, or after a cut's comma.
  for (let from = open + 1; ; ) {
    const cut = from + PIECE_BYTES < body.length ? body.indexOf(CUT_MARK, from + PIECE_BYTES) : -1;
    // The last piece keeps the body's own closing bracket (and anything after it).
    const text = cut === -1 ? '[' + body.toString('utf8', from) : '[' + body.toString('utf8', from, cut + 1) + ']';
    let piece: unknown;
    try {
      piece = JSON.parse(text);
    } catch {
      return undefined;
    }
    // After a cut's comma an element must follow: `[…},]` (a trailing comma, which JSON.parse
    // refuses) left only the body's `]` for the last piece, which parsed as `[]` (review: such a
    // body over 128 KiB was accepted).
    if ((piece as unknown[]).length === 0 && from > open + 1) return undefined;
    for (const element of piece as unknown[]) elements.push(element);
    if (cut === -1) return elements;
    from = cut + CUT_MARK.length;
  }
}

/**
 * Deepest nesting of arrays and objects an ingest body may have. An event is an object of
 * strings and numbers with one array (`tables`), three levels in a batch; unknown fields, which
 * are ignored, may add a few. JSON.parse spends ~700 ns a level: a body of 8 MiB of `[` cost
 * ~3 s of a parse thread, against ~35 ms for 5 MB of real events.
 */
export const JSON_DEPTH_MAX = 64;

/**
 * Opening brackets a body may hold before its depth is measured. Nesting needs one a level, so
 * a body with fewer nests at most this deep and parses in at most ~70 ms (what 5–8 MB of real
 * events cost), however deep it nests: it is not refused. Counting them is native searches only
 * (~0.2 µs an event), while measuring the depth reads every byte in JavaScript (strings may hold
 * any bracket, ~0.7 µs an event), paid only past this count.
 */
const BRACKETS_UNMEASURED_MAX = 100_000;

const OPEN_BRACE = 0x7b;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * True when `bytes` (JSON text, or not) holds BRACKETS_UNMEASURED_MAX or more opening brackets
 * and nests arrays and objects deeper than `max` outside its strings.
 */
export function nestsDeeperThan(bytes: Uint8Array, max: number): boolean {
  const body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let brackets = 0;
  for (const open of [OPEN_BRACKET, OPEN_BRACE]) {
    for (let i = body.indexOf(open); i !== -1 && brackets < BRACKETS_UNMEASURED_MAX; i = body.indexOf(open, i + 1)) brackets++;
  }
  if (brackets < BRACKETS_UNMEASURED_MAX) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i] as number;
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_BRACKET || byte === CLOSE_BRACE) depth--;
  }
  return false;
}

function isJsonWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}
