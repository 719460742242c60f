/**
 * Snappy decompression that ASCII-lower-cases what it writes, for the free-text prefilter.
 *
 * Why not decompress, then fold: folding is a JavaScript loop over every byte, and for SQL
 * text most output bytes come from back references, which copy bytes already written — and so
 * already folded. Folding only the literals does a fraction of the work. The output is only
 * ever searched, never decoded into values.
 *
 * Format: https://github.com/google/snappy/blob/main/format_description.txt (a varint length
 * preamble, then literal and copy elements). Malformed input throws; the caller then takes the
 * exact path, which reports the file as unreadable if it really is.
 */

/** Copies at least this long go through the native `copyWithin` when they do not overlap. */
const NATIVE_COPY_BYTES_MIN = 32;

/** 'A'..'Z' → 'a'..'z'; every other byte unchanged (so multi-byte UTF-8 is untouched). */
function fold(byte: number): number {
  return byte >= 0x41 && byte <= 0x5a ? byte | 0x20 : byte;
}

/** Length the preamble announces, and where the elements start. */
export function snappyUncompressedLength(input: Uint8Array): { length: number; start: number } {
  let length = 0;
  let shift = 0;
  for (let pos = 0; pos < input.length && shift < 35; pos++) {
    const byte = input[pos] as number;
    length += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return { length, start: pos + 1 };
    shift += 7;
  }
  throw new Error('invalid snappy length preamble');
}

/**
 * Decompresses `input` into `output` (exactly the preamble's length), with 'A'..'Z' written
 * as 'a'..'z'. Returns `output`.
 */
export function snappyUncompressFolded(input: Uint8Array, output: Uint8Array): Uint8Array {
  const { length, start } = snappyUncompressedLength(input);
  if (length !== output.length) throw new Error(`snappy length ${length} does not match the page's ${output.length}`);
  const end = input.length;
  let pos = start;
  let out = 0;
  while (pos < end) {
    const tag = input[pos++] as number;
    const kind = tag & 0x3;
    if (kind === 0) {
      let len = (tag >>> 2) + 1;
      if (len > 60) {
        const bytes = len - 60;
        if (pos + bytes > end) throw new Error('snappy literal length past the input');
        len = 0;
        for (let i = bytes - 1; i >= 0; i--) len = len * 256 + (input[pos + i] as number);
        len += 1;
        pos += bytes;
      }
      if (pos + len > end || out + len > length) throw new Error('snappy literal past the input or output');
      for (let i = 0; i < len; i++) output[out + i] = fold(input[pos + i] as number);
      pos += len;
      out += len;
      continue;
    }
    let len: number;
    let offset: number;
    if (kind === 1) {
      len = ((tag >>> 2) & 0x7) + 4;
      offset = ((tag >>> 5) << 8) + (input[pos] as number);
      pos += 1;
    } else if (kind === 2) {
      len = (tag >>> 2) + 1;
      offset = (input[pos] as number) + ((input[pos + 1] as number) << 8);
      pos += 2;
    } else {
      len = (tag >>> 2) + 1;
      offset = (input[pos] as number) + ((input[pos + 1] as number) << 8) + ((input[pos + 2] as number) << 16) + (input[pos + 3] as number) * 0x1000000;
      pos += 4;
    }
    if (pos > end) throw new Error('snappy copy past the input');
    if (offset === 0 || offset > out || out + len > length) throw new Error(`snappy copy out of bounds (offset ${offset} at ${out})`);
    const from = out - offset;
    if (len >= NATIVE_COPY_BYTES_MIN && offset >= len) {
      output.copyWithin(out, from, from + len);
    } else {
      // Overlapping copies repeat the bytes just written: byte by byte, in order.
      for (let i = 0; i < len; i++) output[out + i] = output[from + i] as number;
    }
    out += len;
  }
  if (out !== length) throw new Error(`snappy output ended at ${out} of ${length} bytes`);
  return output;
}

/** An ASCII-lower-cased copy of `bytes` (for uncompressed pages; `bytes` is left as it is). */
export function foldedCopy(bytes: Uint8Array): Uint8Array {
  const copy = new Uint8Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) copy[i] = fold(bytes[i] as number);
  return copy;
}
