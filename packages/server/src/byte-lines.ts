/**
 * Newline-framed messages handled as bytes, a line at a time. Joining or splitting the text
 * of a whole message would make one string of up to megabytes, and V8 writes strings of
 * 128 KiB or more slowly (see json-body.ts); each line on its own stays small.
 */
const NEWLINE = Buffer.from('\n');
const NEWLINE_BYTE = 0x0a;

/** The lines as one buffer, separated by newlines (none of them may hold one). */
export function joinLines(lines: readonly Uint8Array[]): Buffer {
  const parts: Uint8Array[] = [];
  lines.forEach((line, i) => {
    if (i > 0) parts.push(NEWLINE);
    parts.push(line);
  });
  return Buffer.concat(parts);
}

/** Views into `body`, one per newline-separated line; a trailing newline adds no empty line. */
export function splitLines(body: Uint8Array): Buffer[] {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const lines: Buffer[] = [];
  for (let start = 0; start < bytes.length; ) {
    let end = bytes.indexOf(NEWLINE_BYTE, start);
    if (end === -1) end = bytes.length;
    lines.push(bytes.subarray(start, end));
    start = end + 1;
  }
  return lines;
}
