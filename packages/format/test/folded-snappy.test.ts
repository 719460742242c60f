// Goal: the folding Snappy decoder gives exactly hyparquet's output with 'A'..'Z' lower-cased, on real pages (long literals, overlapping and long copies) and refuses malformed input.
import { snappyUncompress } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { foldedCopy, snappyUncompressFolded, snappyUncompressedLength } from '../src/folded-snappy.js';
import { snappyCompress } from 'hyparquet-writer/src/snappy.js';

function asciiLower(bytes: Uint8Array): Uint8Array {
  return bytes.map((b) => (b >= 0x41 && b <= 0x5a ? b | 0x20 : b));
}

function roundTrip(plain: Uint8Array): void {
  const compressed = snappyCompress(plain);
  const expected = new Uint8Array(plain.length);
  snappyUncompress(compressed, expected);
  expect(Buffer.from(expected).equals(plain)).toBe(true);
  const { length } = snappyUncompressedLength(compressed);
  expect(length).toBe(plain.length);
  expect(Buffer.from(snappyUncompressFolded(compressed, new Uint8Array(length))).equals(asciiLower(plain))).toBe(true);
}

describe('snappyUncompressFolded', () => {
  it('decodes short, repetitive and long inputs to the lower-cased original', () => {
    const text = new TextEncoder();
    roundTrip(new Uint8Array(0));
    roundTrip(text.encode('A'));
    roundTrip(text.encode('SELECT Id FROM Orders WHERE Region = \'EU\' — héllo İ K ÄÖÜ'));
    roundTrip(text.encode('AbC'.repeat(10_000))); // overlapping copies (offset < length)
    const random = new Uint8Array(200_000);
    let x = 12345;
    for (let i = 0; i < random.length; i++) {
      x = (x * 1103515245 + 12345) >>> 0;
      random[i] = x >>> 24;
    }
    roundTrip(random); // long literals, all byte values
    const mixed = new Uint8Array(300_000);
    for (let i = 0; i < mixed.length; i++) mixed[i] = i % 1000 < 500 ? (random[i % 7919] as number) : (random[(i * 31) % 100] as number);
    roundTrip(mixed); // long copies at large offsets
  });

  it('refuses a wrong output length, truncated input and a copy before the start', () => {
    const compressed = snappyCompress(new TextEncoder().encode('hello hello hello hello'));
    expect(() => snappyUncompressFolded(compressed, new Uint8Array(5))).toThrow();
    expect(() => snappyUncompressFolded(compressed.subarray(0, compressed.length - 3), new Uint8Array(23))).toThrow();
    // preamble 4, then a 1-byte-offset copy of 4 bytes at offset 1 with nothing written yet
    expect(() => snappyUncompressFolded(Uint8Array.of(4, 0x01, 0x01), new Uint8Array(4))).toThrow();
  });

  it('foldedCopy leaves its input alone', () => {
    const input = new TextEncoder().encode('MiXeD');
    expect(new TextDecoder().decode(foldedCopy(input))).toBe('mixed');
    expect(new TextDecoder().decode(input)).toBe('MiXeD');
  });
});
