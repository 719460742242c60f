// Goal: truncateToBytes keeps fitting values intact and cuts the rest on a character boundary, marker included, within the limit.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { truncateToBytes, truncationMarker } from '../src/field-limits.js';

const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/** Strings rich in 1-, 2-, 3- and 4-byte characters, so cuts land inside characters often. */
const unicodeString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.string({ unit: fc.constantFrom('a', 'é', 'ß', '€', '中', '𝄞', '😀', '\u0301'), maxLength: 400 }),
);

describe('truncateToBytes', () => {
  it('returns a value that fits unchanged', () => {
    expect(truncateToBytes('hello', 5)).toBe('hello');
    expect(truncateToBytes('€€', 6)).toBe('€€');
    expect(truncateToBytes('', 0)).toBe('');
  });

  it('cuts an ASCII value to exactly the limit, marker included', () => {
    const marker = truncationMarker(100);
    expect(marker).toBe('…[truncated by auditlake: 100 bytes]');
    const out = truncateToBytes('a'.repeat(100), 60);
    expect(out).toBe('a'.repeat(60 - utf8Bytes(marker)) + marker);
    expect(utf8Bytes(out)).toBe(60);
  });

  it('steps back over a character that would be split', () => {
    // 20 × '€' = 60 bytes; with a 50-byte limit and a 37-byte marker the budget is 13 bytes: four '€' (12 bytes).
    const marker = truncationMarker(60);
    expect(utf8Bytes(marker)).toBe(37);
    expect(truncateToBytes('€'.repeat(20), 50)).toBe('€€€€' + marker);
    // A 4-byte character straddling the budget is dropped whole.
    expect(truncateToBytes('ab😀😀😀😀😀😀😀😀😀😀', 37 + 4)).toBe('ab' + truncationMarker(42));
  });

  it('property: fits within the limit, keeps a whole-character prefix, drops no more than needed', () => {
    fc.assert(
      fc.property(unicodeString, fc.integer({ min: 0, max: 1000 }), (value, permille) => {
        const originalBytes = utf8Bytes(value);
        const marker = truncationMarker(originalBytes);
        // Limits range from "only the marker fits" up to "everything fits".
        const limit = utf8Bytes(marker) + Math.floor((originalBytes * permille) / 1000);
        const out = truncateToBytes(value, limit);
        expect(utf8Bytes(out)).toBeLessThanOrEqual(limit);
        if (originalBytes <= limit) {
          expect(out).toBe(value);
          return;
        }
        expect(out.endsWith(marker)).toBe(true);
        const kept = out.slice(0, out.length - marker.length);
        expect(value.startsWith(kept)).toBe(true);
        // No character was split: re-encoding the kept prefix gives the same bytes as the original's prefix.
        expect(Buffer.from(value, 'utf8').subarray(0, utf8Bytes(kept)).toString('utf8')).toBe(kept);
        expect(kept.includes('\uFFFD') && !value.includes('\uFFFD')).toBe(false);
        // Maximal: the next character would not have fit.
        const next = String.fromCodePoint(value.codePointAt(kept.length)!);
        expect(utf8Bytes(kept) + utf8Bytes(next)).toBeGreaterThan(limit - utf8Bytes(marker));
      }),
      { numRuns: 200 },
    );
  });

  it('property: any value whose UTF-8 size is within the limit is returned unchanged', () => {
    fc.assert(
      fc.property(unicodeString, fc.nat({ max: 64 }), (value, slack) => {
        expect(truncateToBytes(value, utf8Bytes(value) + slack)).toBe(value);
      }),
      { numRuns: 200 },
    );
  });
});
