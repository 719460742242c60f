// Goal: the LevelDB key codec is fixed-width, round-trips, and its byte order equals numeric (ts, seq) order.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeUint,
  encodeUint,
  idKey,
  parseSeqFromSeqKey,
  PREFIX,
  prefixEnd,
  seqKey,
  timeKey,
  timeKeySuffix,
  timeLowerBound,
  timeUpperBoundInclusive,
} from '../src/event-keys.js';
import { DAY_LEDGER_PREFIX } from '../src/day-ledger.js';
import { INDEX_PREFIX } from '../src/index-keys.js';
import { LEGACY_SOURCE_LEDGER_PREFIX, SOURCE_RANGE_PREFIX } from '../src/source-ledger-keys.js';

const MAX = Number.MAX_SAFE_INTEGER;

/** Key fields biased to the edges (0, small, around powers of 16, near MAX_SAFE_INTEGER). */
const keyField = fc.oneof(
  fc.nat({ max: 300 }),
  fc.integer({ min: 0, max: 52 }).chain((bits) => fc.integer({ min: 0, max: 2 ** bits })),
  fc.integer({ min: MAX - 300, max: MAX }),
  fc.maxSafeNat(),
);

const sign = (n: number): number => (n < 0 ? -1 : n > 0 ? 1 : 0);
const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
/** LevelDB compares bytes; the keys are ASCII, so compare their UTF-8 bytes to be literal about it. */
const compareBytes = (a: string, b: string): number => sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));

describe('encodeUint / decodeUint', () => {
  it('encodes fixed-width lower-case hex', () => {
    expect(encodeUint(0)).toBe('0000000000000000');
    expect(encodeUint(255)).toBe('00000000000000ff');
    expect(encodeUint(MAX)).toBe('001fffffffffffff');
  });

  it.each([[-1], [-0.5], [1.5], [NaN], [Infinity], [-Infinity], [MAX + 1], [2 ** 60]])('refuses %d with a TypeError', (n) => {
    expect(() => encodeUint(n)).toThrow(TypeError);
  });

  it('property: decodeUint(encodeUint(n)) === n up to MAX_SAFE_INTEGER, always 16 characters', () => {
    fc.assert(
      fc.property(keyField, (n) => {
        const hex = encodeUint(n);
        expect(hex).toMatch(/^[0-9a-f]{16}$/);
        // Built in 24-bit parts for speed: still exactly the number's hex, zero-padded.
        expect(hex).toBe(n.toString(16).padStart(16, '0'));
        expect(decodeUint(hex)).toBe(n);
      }),
      { numRuns: 200 },
    );
    expect(decodeUint(encodeUint(MAX))).toBe(MAX);
    expect(decodeUint(encodeUint(0))).toBe(0);
  });

  it('property: byte order of encoded numbers equals numeric order', () => {
    fc.assert(
      fc.property(keyField, keyField, (a, b) => {
        expect(compareBytes(encodeUint(a), encodeUint(b))).toBe(sign(a - b));
      }),
      { numRuns: 200 },
    );
  });
});

describe('time keys', () => {
  it('property: byte order of timeKey(ts, seq) equals numeric (ts, seq) order', () => {
    fc.assert(
      fc.property(keyField, keyField, keyField, keyField, (tsA, seqA, tsB, seqB) => {
        const numeric = tsA !== tsB ? sign(tsA - tsB) : sign(seqA - seqB);
        expect(compareBytes(timeKey(tsA, seqA), timeKey(tsB, seqB))).toBe(numeric);
        expect(compareStrings(timeKey(tsA, seqA), timeKey(tsB, seqB))).toBe(numeric);
      }),
      { numRuns: 200 },
    );
  });

  it('property: sorting keys sorts the pairs', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(keyField, keyField), { maxLength: 50 }), (pairs) => {
        const byKey = [...pairs].sort((x, y) => compareBytes(timeKey(...x), timeKey(...y)));
        const byNumber = [...pairs].sort((x, y) => (x[0] !== y[0] ? sign(x[0] - y[0]) : sign(x[1] - y[1])));
        expect(byKey).toEqual(byNumber);
      }),
      { numRuns: 200 },
    );
  });

  it('property: a ts range [lower, upper) holds exactly the keys of that ts, and sits inside the prefix range', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX - 1 }), keyField, (ts, seq) => {
        const key = timeKey(ts, seq);
        expect(key >= timeLowerBound(ts)).toBe(true);
        expect(key < timeUpperBoundInclusive(ts)).toBe(true);
        expect(timeKey(ts + 1, 0) >= timeUpperBoundInclusive(ts)).toBe(true);
        expect(timeKey(ts - 1, MAX) < timeLowerBound(ts)).toBe(true);
        expect(key >= PREFIX.time && key < prefixEnd(PREFIX.time)).toBe(true);
        expect(key).toBe(PREFIX.time + timeKeySuffix(ts, seq));
      }),
      { numRuns: 200 },
    );
  });

  it('bounds the largest accepted event time: to=MAX_SAFE_INTEGER is a valid inclusive search bound', () => {
    // Validation accepts ts up to MAX_SAFE_INTEGER and search accepts it as `to`, so the range must exist.
    const upper = timeUpperBoundInclusive(MAX);
    expect(timeKey(MAX, MAX) < upper).toBe(true);
    expect(upper <= prefixEnd(PREFIX.time)).toBe(true);
    expect(timeLowerBound(MAX) <= timeKey(MAX, 0)).toBe(true);
  });

  it('has the documented layout', () => {
    expect(timeKey(1, 2)).toBe('t!00000000000000010000000000000002');
    expect(prefixEnd('t!')).toBe('t"');
  });
});

describe('seq and id keys', () => {
  it('property: seq keys round-trip and order like seq numbers', () => {
    fc.assert(
      fc.property(keyField, keyField, (a, b) => {
        expect(parseSeqFromSeqKey(seqKey(a))).toBe(a);
        expect(compareBytes(seqKey(a), seqKey(b))).toBe(sign(a - b));
        expect(seqKey(a) >= PREFIX.seq && seqKey(a) < prefixEnd(PREFIX.seq)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('keeps the key families apart', () => {
    expect(seqKey(7)).toBe('s!0000000000000007');
    expect(idKey('abc')).toBe('i!abc');
    // Also the families kept by their own modules: a new family must not reuse any of them.
    const prefixes = [...Object.values(PREFIX), INDEX_PREFIX, SOURCE_RANGE_PREFIX, LEGACY_SOURCE_LEDGER_PREFIX, DAY_LEDGER_PREFIX];
    expect(new Set(prefixes).size).toBe(prefixes.length);
    for (const p of prefixes) for (const q of prefixes) if (p !== q) expect(q.startsWith(p)).toBe(false);
  });
});
