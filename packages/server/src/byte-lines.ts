/**
 * Newline-framed messages handled as bytes, a line at a time. Joining or splitting the text
 * of a whole message would make one string of up to megabytes, and V8 writes strings of
 * 128 KiB or more slowly (see json-body.ts); each line on its own stays small.
 */
const NEWLINE = Buffer.from('\n');
const NEWLINE_BYTE = 0x0a;

/** The lines as one buffer, separated by newlines (none of them may hold one). */
export function joinLines(lines: readonly Uint8Array[]): Buffer {
  return Buffer.concat(lineRuns(lines));
}

/**
 * The lines separated by newlines, as the fewest slices whose concatenation is joinLines':
 * lines that already sit one newline apart in the same memory (a leader's log tail keeps its
 * entries so) become one slice of it, so a message of thousands of lines can be sent as a
 * handful of buffers instead of being copied into one.
 */
export function lineRuns(lines: readonly Uint8Array[]): Uint8Array[] {
  const runs: Uint8Array[] = [];
  // The current run: its first line, and where it ends in that line's memory.
  let first: Uint8Array | undefined;
  let end = 0;
  let memory: Uint8Array | undefined;
  const closeRun = (run: Uint8Array) => runs.push(end === run.byteOffset + run.byteLength ? run : new Uint8Array(run.buffer, run.byteOffset, end - run.byteOffset));
  for (const line of lines) {
    if (first !== undefined && line.buffer === first.buffer && line.byteOffset === end + 1 && (memory ??= new Uint8Array(first.buffer))[end] === NEWLINE_BYTE) {
      end = line.byteOffset + line.byteLength;
      continue;
    }
    if (first !== undefined) {
      closeRun(first);
      runs.push(NEWLINE);
    }
    first = line;
    end = line.byteOffset + line.byteLength;
    memory = undefined;
  }
  if (first !== undefined) closeRun(first);
  return runs;
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
