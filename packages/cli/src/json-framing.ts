/** Most lines one JSON record may span, and its largest size: a record beyond them is reported, not buffered. */
export const JSON_RECORD_LINES_MAX = 10_000;
export const JSON_RECORD_BYTES_MAX = 4 * 1024 * 1024;

/** One piece of a JSON log: a record's text, a line that is not JSON, or a record that is broken. */
export type JsonPiece =
  | { kind: 'record'; line: number; endLine: number; text: string }
  | { kind: 'text'; line: number; text: string }
  | { kind: 'broken'; line: number; reason: string };

/**
 * Splits a JSON log into records: one object per line (NDJSON) or objects spread over several
 * lines (pretty-printed, as documentation and some exporters show them), also inside a JSON
 * array, pretty-printed or compact (`[{…},{…}]` on one line: each element is a record). Lines outside any object come out as `text` (a banner,
 * a plain log line); the caller decides whether that is an error. A record cut short is
 * noticed when a new object starts at the beginning of a line while the last one is still
 * open (pretty-printed members are indented), so one truncated line costs one record only.
 */
export class JsonFraming {
  #lines: string[] = [];
  #line = 0;
  #bytes = 0;
  #depth = 0;
  #inString = false;
  #escaped = false;
  /**
   * A record past the limits was reported broken and its lines are being passed over until it
   * closes: read as lines outside any record, a pretty-printed record of 15,000 lines gave 5,000
   * refusals of its single lines (review).
   */
  #discarding = false;

  /** Feeds the next line (without its newline); returns what it completes. */
  push(text: string, lineNumber: number): JsonPiece[] {
    if (this.#discarding) {
      // A record starting at the line's start ends the one passed over (cut short, as below).
      if (text.startsWith('{')) {
        this.#discarding = false;
        this.#reset();
      } else {
        const end = this.#scan(text, 0);
        if (end === -1) return [];
        this.#discarding = false;
        this.#reset();
        // What follows its closing brace on this line is read as outside any record.
        return this.push(text.slice(end + 1), lineNumber);
      }
    }
    const pieces: JsonPiece[] = [];
    if (this.#lines.length > 0 && text.startsWith('{')) {
      pieces.push(this.#broken('the record ends before its closing brace (the next record starts on a new line)'));
    }
    let from = 0;
    if (this.#lines.length === 0) {
      // Outside a record a line may open, separate or close a JSON array: `[`, `,`, `]`, `[{…`.
      const trimmed = text.trim();
      if (trimmed === '' || trimmed === '[' || trimmed === ']' || trimmed === ',' || trimmed === '],') return pieces;
      from = /^[\s[,]*/.exec(text)![0].length;
      if (text[from] !== '{') {
        pieces.push({ kind: 'text', line: lineNumber, text });
        return pieces;
      }
      this.#line = lineNumber;
    }
    // One line may close a record and hold more of them: a compact array `[{…},{…}]`.
    for (;;) {
      const end = this.#scan(text, from);
      const part = end === -1 ? text.slice(from) : text.slice(from, end + 1);
      this.#lines.push(part);
      this.#bytes += part.length + 1;
      if (end === -1) {
        if (this.#lines.length >= JSON_RECORD_LINES_MAX || this.#bytes > JSON_RECORD_BYTES_MAX) {
          const depth = this.#depth;
          const inString = this.#inString;
          const escaped = this.#escaped;
          pieces.push(this.#broken(`the record is longer than ${JSON_RECORD_LINES_MAX} lines or ${JSON_RECORD_BYTES_MAX} bytes`));
          // Its lines are passed over until it closes (the scan goes on where it was).
          this.#discarding = true;
          this.#depth = depth;
          this.#inString = inString;
          this.#escaped = escaped;
        }
        return pieces;
      }
      const record: JsonPiece = { kind: 'record', line: this.#line, endLine: lineNumber, text: this.#lines.join('\n') };
      this.#reset();
      const rest = text.slice(end + 1);
      const next = /^\s*,\s*(?=\{)/.exec(rest);
      if (next !== null) {
        pieces.push(record);
        from = end + 1 + next[0].length;
        this.#line = lineNumber;
        continue;
      }
      // What may follow a record on its line: nothing, a comma, or the array's end (and a comma).
      // Trimmed first: two \s* runs around an optional group backtracked quadratically, a line
      // of 60,000 spaces after a record held an import ~5 s.
      const tail = rest.trim();
      if (tail === '' || tail === ',' || /^\]\s*,?$/.test(tail)) pieces.push(record);
      else pieces.push({ kind: 'broken', line: record.line, reason: `unexpected text after the record's closing brace: ${tail.slice(0, 40)}` });
      return pieces;
    }
  }

  /** A record is open (or being passed over): the last line pushed did not close it. */
  get open(): boolean {
    return this.#lines.length > 0 || this.#discarding;
  }

  /** At the end of the input: a record still open is broken. */
  end(): JsonPiece[] {
    return this.cut('the input ends before the record’s closing brace');
  }

  /** A record still open is broken, for `reason` (a line of it that could not be read). */
  cut(reason: string): JsonPiece[] {
    if (this.#discarding) {
      // Reported already, when it passed the limits.
      this.#discarding = false;
      this.#reset();
      return [];
    }
    return this.#lines.length > 0 ? [this.#broken(reason)] : [];
  }

  /** Index in `text` of the brace closing the open record, or -1 if it stays open. */
  #scan(text: string, from: number): number {
    for (let i = from; i < text.length; i++) {
      const c = text[i];
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (c === '\\') this.#escaped = true;
        else if (c === '"') this.#inString = false;
      } else if (c === '"') {
        this.#inString = true;
      } else if (c === '{' || c === '[') {
        this.#depth++;
      } else if (c === '}' || c === ']') {
        this.#depth--;
        if (this.#depth === 0) return i;
      }
    }
    return -1;
  }

  #broken(reason: string): JsonPiece {
    const piece: JsonPiece = { kind: 'broken', line: this.#line, reason };
    this.#reset();
    return piece;
  }

  #reset(): void {
    this.#lines = [];
    this.#bytes = 0;
    this.#depth = 0;
    this.#inString = false;
    this.#escaped = false;
  }
}

/**
 * JSON text with integer literals a double cannot hold exactly turned into strings, so parsing
 * keeps every digit (LAS writes BIGINT ids as numbers). Strings and other numbers are left alone.
 */
export function quoteUnsafeIntegers(text: string): string {
  if (!/\d{16}/.test(text)) return text;
  let out = '';
  let copied = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      continue;
    }
    if ((c === '-' || (c >= '0' && c <= '9')) && !/[\w.]/.test(text[i - 1] ?? ' ')) {
      let end = i + 1;
      while (end < text.length && /[0-9]/.test(text[end] as string)) end++;
      const isInteger = !/[.eE]/.test(text[end] ?? '');
      const literal = text.slice(i, end);
      // Quoted only when parsing would change it: a double holds some large integers exactly.
      if (isInteger && String(Number(literal)) !== literal) {
        out += text.slice(copied, i) + `"${literal}"`;
        copied = end;
      }
      i = end - 1;
    }
  }
  return copied === 0 ? text : out + text.slice(copied);
}
