// Goal: bounds use Iceberg's binary single-value serialization byte for byte (hand-computed examples), strings order by code point, and truncated string bounds are always true bounds.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compareCodePoints,
  decodeIntBound,
  decodeLongBound,
  decodeStringBound,
  encodeIntBound,
  encodeLongBound,
  encodeStringBound,
  encodeTimestamptzBound,
  truncateLowerBound,
  truncateUpperBound,
  wellFormed,
} from '../src/index.js';

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

describe('binary single-value serialization (spec Appendix D)', () => {
  it('long: 8 bytes little-endian two’s complement', () => {
    expect(hex(encodeLongBound(42))).toBe('2a00000000000000');
    expect(hex(encodeLongBound(0))).toBe('0000000000000000');
    expect(hex(encodeLongBound(-1))).toBe('ffffffffffffffff');
    expect(hex(encodeLongBound(-2))).toBe('feffffffffffffff');
    // 1714564805123 ms = 0x0000018F3406B203
    expect(hex(encodeLongBound(1_714_564_805_123))).toBe('03b206348f010000');
    expect(hex(encodeLongBound(2n ** 63n - 1n))).toBe('ffffffffffffff7f');
    expect(hex(encodeLongBound(-(2n ** 63n)))).toBe('0000000000000080');
    expect(decodeLongBound(encodeLongBound(-86_400_001n))).toBe(-86_400_001n);
  });

  it('timestamptz: microseconds since the epoch as a long', () => {
    // 2024-05-01T12:00:00Z = 1714564800 s = 1714564800000000 µs = 0x0006176339D93000
    expect(hex(encodeTimestamptzBound(BigInt(Date.UTC(2024, 4, 1, 12)) * 1000n))).toBe('0030d93963170600');
    // One µs before the epoch.
    expect(hex(encodeTimestamptzBound(-1n))).toBe('ffffffffffffffff');
  });

  it('string: UTF-8 bytes without a length', () => {
    expect(hex(encodeStringBound('héllo'))).toBe('68c3a96c6c6f');
    expect(hex(encodeStringBound(''))).toBe('');
    expect(hex(encodeStringBound('監'))).toBe('e79ba3');
    expect(hex(encodeStringBound('😀'))).toBe('f09f9880');
    // A lone surrogate is stored as U+FFFD, like the Parquet writer does.
    expect(hex(encodeStringBound('a\uD800'))).toBe('61efbfbd');
    expect(wellFormed('a\uD800b\u{1F600}')).toBe('a\uFFFDb\u{1F600}');
    expect(decodeStringBound(encodeStringBound('héllo 😀'))).toBe('héllo 😀');
    expect(() => decodeStringBound(Uint8Array.of(0xff))).toThrow(TypeError);
  });

  it('int/date: 4 bytes little-endian (2024-05-01 = day 19844)', () => {
    expect(hex(encodeIntBound(19844))).toBe('844d0000');
    expect(hex(encodeIntBound(-1))).toBe('ffffffff');
    expect(decodeIntBound(encodeIntBound(-25567))).toBe(-25567);
  });

  it('refuses values the type cannot hold, and bytes of the wrong length', () => {
    expect(() => encodeLongBound(2 ** 53)).toThrow(TypeError);
    expect(() => encodeLongBound(1.5)).toThrow(TypeError);
    expect(() => encodeLongBound(2n ** 63n)).toThrow(TypeError);
    expect(() => encodeIntBound(2 ** 31)).toThrow(TypeError);
    expect(() => decodeLongBound(new Uint8Array(4))).toThrow(TypeError);
    expect(() => decodeIntBound(new Uint8Array(8))).toThrow(TypeError);
  });
});

/** Any string, with code points from every plane (JS-unsafe ordering included), well-formed. */
const text = fc.string({ unit: fc.oneof(fc.constantFrom('a', 'z', '\uFFFF', '\u{10FFFF}', '\u{1F600}', '\uE000', '\uD7FF'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })), maxLength: 30 });

describe('string ordering and truncation', () => {
  it('compareCodePoints orders like the UTF-8 bytes (not like JS <)', () => {
    expect(compareCodePoints('\uFFFF', '\u{1F600}')).toBe(-1);
    expect('\uFFFF' < '\u{1F600}').toBe(false);
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(Math.sign(compareCodePoints(a, b))).toBe(Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))));
      }),
      { numRuns: 2_000 },
    );
  });

  it('truncates like Java: a prefix for the lower bound, the incremented prefix for the upper bound', () => {
    const long = 'abcdefghijklmnopqrstuvwxyz';
    expect(truncateLowerBound(long)).toBe('abcdefghijklmnop');
    expect(truncateUpperBound(long)).toBe('abcdefghijklmnoq');
    expect(truncateUpperBound('short')).toBe('short');
    expect(truncateUpperBound('ab\u{10FFFF}\u{10FFFF}x', 4)).toBe('ac');
    expect(truncateUpperBound('a\uD7FFbc', 2)).toBe('a\uE000');
    expect(truncateUpperBound('\u{10FFFF}\u{10FFFF}\u{10FFFF}', 2)).toBeUndefined();
    // Code points, not UTF-16 units: an emoji is one.
    expect(truncateLowerBound('😀😀😀', 2)).toBe('😀😀');
  });

  it('truncated bounds of any set of strings are true bounds of at most N code points', () => {
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 20 }), fc.integer({ min: 1, max: 20 }), (values, n) => {
        const sorted = [...values].sort(compareCodePoints);
        const lower = truncateLowerBound(sorted[0] as string, n);
        const upper = truncateUpperBound(sorted.at(-1) as string, n);
        expect(Array.from(lower).length).toBeLessThanOrEqual(n);
        for (const value of values) {
          expect(compareCodePoints(lower, value)).toBeLessThanOrEqual(0);
          if (upper !== undefined) expect(compareCodePoints(upper, value)).toBeGreaterThanOrEqual(0);
        }
        if (upper !== undefined) expect(Array.from(upper).length).toBeLessThanOrEqual(n);
      }),
      { numRuns: 1_000 },
    );
  });
});
