import { isUtf8 } from 'node:buffer';

/**
 * The byte offset of the first byte sequence in `bytes` that is not well-formed UTF-8
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or -1 when it is all
 * well-formed. Decoding would silently turn such bytes into U+FFFD and so alter evidence; the
 * fast check runs on every body, the scan only on a refused one, to name where.
 */
export function invalidUtf8Offset(bytes: Uint8Array): number {
  if (isUtf8(bytes)) return -1;
  for (let i = 0; i < bytes.length; ) {
    const length = sequenceLength(bytes, i);
    if (length === 0) return i;
    i += length;
  }
  return -1;
}

/** The length of the well-formed sequence starting at `i`, or 0 when none starts there. */
function sequenceLength(bytes: Uint8Array, i: number): number {
  const b0 = bytes[i] as number;
  if (b0 < 0x80) return 1;
  const at = (k: number) => bytes[i + k] ?? -1;
  const tail = (k: number) => (at(k) & 0xc0) === 0x80 && at(k) !== -1;
  if (b0 >= 0xc2 && b0 <= 0xdf) return tail(1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const b1 = at(1);
    // E0 needs A0..BF (no overlong form), ED needs 80..9F (no surrogates).
    const low = b0 === 0xe0 ? 0xa0 : 0x80;
    const high = b0 === 0xed ? 0x9f : 0xbf;
    return b1 >= low && b1 <= high && tail(2) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const b1 = at(1);
    // F0 needs 90..BF (no overlong form), F4 needs 80..8F (nothing above U+10FFFF).
    const low = b0 === 0xf0 ? 0x90 : 0x80;
    const high = b0 === 0xf4 ? 0x8f : 0xbf;
    return b1 >= low && b1 <= high && tail(2) && tail(3) ? 4 : 0;
  }
  return 0;
}
