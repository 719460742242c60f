// Goal: a stored salt is taken as a record's key K exactly when it is the canonical base64url
// text of 16 bytes, and the field salts derived from it are SHA-512(K) cut in five — checked
// against the obvious form (Buffer's base64url, a regular expression) for any text.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newSaltKey, saltsOfKey } from '../src/record-salt.js';

/** The obvious form: a key's text is 22 base64url characters that decode to 16 bytes and encode back to themselves. */
function referenceSalts(text: string): string[] | undefined {
  if (!/^[A-Za-z0-9_-]{22}$/.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  if (bytes.length !== 16 || bytes.toString('base64url') !== text) return undefined;
  const derived = createHash('sha512').update(bytes).digest();
  return [0, 1, 2, 3, 4].map((i) => derived.subarray(i * 12, i * 12 + 12).toString('base64url'));
}

describe('a record key as stored', () => {
  it('gives the salts the obvious form gives, for any 16 bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (bytes) => {
        const text = Buffer.from(bytes).toString('base64url');
        expect(saltsOfKey(text)).toEqual(referenceSalts(text));
        expect(saltsOfKey(text)).toHaveLength(5);
      }),
      { numRuns: 500 },
    );
    const key = newSaltKey();
    expect(saltsOfKey(key)).toEqual(referenceSalts(key));
  });

  it('is refused exactly where the obvious form refuses it: other lengths, other characters, bits past the 16 bytes', () => {
    const alphabet = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_', '+', '/', '=', '.', ' ', 'é', '\u0141', '\uD83D'];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...alphabet), { minLength: 20, maxLength: 24 }), (chars) => {
        const text = chars.join('');
        expect(saltsOfKey(text)).toEqual(referenceSalts(text));
      }),
      { numRuns: 3000 },
    );
    // Every possible last character of a key: only A, Q, g and w carry no bits past the 16 bytes.
    const head = newSaltKey().slice(0, 21);
    const taken = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'].filter((c) => saltsOfKey(head + c) !== undefined);
    expect(taken).toEqual(['A', 'Q', 'g', 'w']);
  });
});
