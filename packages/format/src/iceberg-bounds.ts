/**
 * Iceberg's binary single-value serialization (spec Appendix D), used for the
 * `lower_bounds`/`upper_bounds` of data files and the partition summaries of manifest lists,
 * and the string ordering and truncation that make string bounds true bounds.
 */

const INT_MIN = -(2 ** 31);
const INT_MAX = 2 ** 31 - 1;
const LONG_MIN = -(2n ** 63n);
const LONG_MAX = 2n ** 63n - 1n;

/**
 * Code points kept in a truncated string bound: Java's default metrics mode
 * `truncate(16)` (`write.metadata.metrics.default`), so our manifests look like Java's.
 */
export const STRING_BOUND_CODE_POINTS_MAX = 16;

/** `int` or `date` (days since 1970-01-01): 4 bytes little-endian two's complement. */
export function encodeIntBound(value: number): Uint8Array {
  if (!Number.isInteger(value) || value < INT_MIN || value > INT_MAX) {
    throw new TypeError(`an int bound must be a 32-bit integer, got ${value}`);
  }
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setInt32(0, value, true);
  return bytes;
}

/** `long`: 8 bytes little-endian two's complement. Accepts a safe integer or a bigint. */
export function encodeLongBound(value: number | bigint): Uint8Array {
  if (typeof value === 'number' && !Number.isSafeInteger(value)) {
    throw new TypeError(`a long bound must be a safe integer or a bigint, got ${value}`);
  }
  const big = BigInt(value);
  if (big < LONG_MIN || big > LONG_MAX) throw new TypeError(`a long bound must fit 64 bits, got ${big}`);
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigInt64(0, big, true);
  return bytes;
}

/**
 * `timestamptz` (and `timestamp`): microseconds since 1970-01-01 UTC as a long, 8 bytes
 * little-endian. The same bytes as {@link encodeLongBound}; a separate name so call sites say
 * which unit they hold.
 */
export function encodeTimestamptzBound(micros: bigint): Uint8Array {
  return encodeLongBound(micros);
}

/**
 * `string`: the UTF-8 bytes, no length prefix. A lone surrogate becomes U+FFFD, as in every
 * UTF-8 encoder (the Parquet writer included), so compute bounds over {@link wellFormed} values.
 */
export function encodeStringBound(value: string): Uint8Array {
  return new TextEncoder().encode(value);
}

/**
 * `value` with each lone surrogate replaced by U+FFFD: the string its UTF-8 bytes (as any
 * encoder writes them) decode back to. Bounds must be computed over these stored values.
 */
export function wellFormed(value: string): string {
  return value.replace(/[\uD800-\uDFFF]/gu, '\uFFFD');
}

/** Reads an `int`/`date` bound. Throws TypeError unless it is exactly 4 bytes. */
export function decodeIntBound(bytes: Uint8Array): number {
  checkLength(bytes, 4, 'int');
  return new DataView(bytes.buffer, bytes.byteOffset, 4).getInt32(0, true);
}

/** Reads a `long`/`timestamp`/`timestamptz` bound. Throws TypeError unless it is exactly 8 bytes. */
export function decodeLongBound(bytes: Uint8Array): bigint {
  checkLength(bytes, 8, 'long');
  return new DataView(bytes.buffer, bytes.byteOffset, 8).getBigInt64(0, true);
}

/** Reads a `string` bound (UTF-8, invalid sequences rejected with TypeError). */
export function decodeStringBound(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (err) {
    throw new TypeError('a string bound must be valid UTF-8', { cause: err });
  }
}

function checkLength(bytes: Uint8Array, length: number, type: string): void {
  if (bytes.byteLength !== length) {
    throw new TypeError(`an ${type} bound is ${length} bytes, got ${bytes.byteLength}`);
  }
}

/**
 * Orders strings by Unicode code point, which is the order of their UTF-8 bytes and the order
 * Java's bounds comparator uses. JS `<` compares UTF-16 code units instead and puts U+FFFF
 * after U+1F600; a bound computed with it would not be a bound (rows silently skipped).
 */
export function compareCodePoints(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.codePointAt(i) as number;
    const cb = b.codePointAt(j) as number;
    if (ca !== cb) return ca < cb ? -1 : 1;
    i += ca > 0xffff ? 2 : 1;
    j += cb > 0xffff ? 2 : 1;
  }
  const aDone = i >= a.length;
  const bDone = j >= b.length;
  return aDone === bDone ? 0 : aDone ? -1 : 1;
}

/**
 * A lower bound for `value` of at most `codePointsMax` code points: its prefix, which sorts
 * at or before it.
 */
export function truncateLowerBound(value: string, codePointsMax = STRING_BOUND_CODE_POINTS_MAX): string {
  checkCodePointsMax(codePointsMax);
  const codePoints = Array.from(value);
  return codePoints.length <= codePointsMax ? value : codePoints.slice(0, codePointsMax).join('');
}

/**
 * An upper bound for `value` of at most `codePointsMax` code points: the value itself when short
 * enough, else its prefix with the last code point incremented (carrying left past U+10FFFF and
 * skipping the surrogate range), which sorts after every string with that prefix. Undefined when
 * no such string exists (every prefix code point is U+10FFFF): then the bound must be omitted.
 */
export function truncateUpperBound(value: string, codePointsMax = STRING_BOUND_CODE_POINTS_MAX): string | undefined {
  checkCodePointsMax(codePointsMax);
  const codePoints = Array.from(value, (char) => char.codePointAt(0) as number);
  if (codePoints.length <= codePointsMax) return value;
  const prefix = codePoints.slice(0, codePointsMax);
  for (let k = prefix.length - 1; k >= 0; k--) {
    const next = nextCodePoint(prefix[k] as number);
    if (next !== undefined) return String.fromCodePoint(...prefix.slice(0, k), next);
  }
  return undefined;
}

/** The next Unicode scalar value after `codePoint`, skipping surrogates; undefined after U+10FFFF. */
function nextCodePoint(codePoint: number): number | undefined {
  const next = codePoint + 1;
  if (next >= 0xd800 && next <= 0xdfff) return 0xe000;
  return next > 0x10ffff ? undefined : next;
}

function checkCodePointsMax(codePointsMax: number): void {
  if (!Number.isSafeInteger(codePointsMax) || codePointsMax < 1) {
    throw new TypeError(`codePointsMax must be a positive integer, got ${codePointsMax}`);
  }
}
