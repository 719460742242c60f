import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { JSON_DEPTH_MAX, nestsDeeperThan, parseJsonBody } from '../src/json-body.js';

/** What JSON.parse makes of the same text: the value, or the exact error message. */
function reference(text: string): { value: unknown } | { error: string } {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

function ours(text: string): { value: unknown } | { error: string } {
  try {
    return { value: parseJsonBody(Buffer.from(text, 'utf8')) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

// Strings built to hold the cut mark `},` and brackets, so a byte search finds false cuts.
const trickyString = fc.oneof(
  fc.string(),
  fc.constantFrom('},', '"},{"', '}, {', '\\"},', ']', '[', 'x"},{"y', 'ü},ß', '\u2028},'),
  fc.string({ unit: fc.constantFrom('}', ',', '{', '"', '\\', ']', '[', 'a', 'é') }),
);
const event = fc.record({
  userId: trickyString,
  query: trickyString,
  // Nested values (not valid events, but valid JSON): a cut inside them must not be taken.
  details: fc.oneof(trickyString, fc.record({ inner: fc.array(fc.record({ k: trickyString }), { maxLength: 3 }) })),
  pad: fc.string({ minLength: 200, maxLength: 2000 }),
});

describe('parseJsonBody', () => {
  it('gives JSON.parse’s value for large arrays whose strings hold false cut marks', () => {
    fc.assert(
      fc.property(fc.array(event, { minLength: 100, maxLength: 400 }), fc.constantFrom('', ' ', '\n  '), (events, space) => {
        const text = JSON.stringify(events, null, space === '' ? undefined : space);
        expect(Buffer.byteLength(text)).toBeGreaterThan(0);
        expect(ours(text)).toEqual(reference(text));
      }),
      { numRuns: 40 },
    );
  });

  it('cuts a large body into pieces and still returns every element in order', () => {
    // 2,000 events of ~300 bytes: about 600 KB, so at least 8 pieces of 64 KiB.
    const events = Array.from({ length: 2000 }, (_, i) => ({ i, query: `SELECT ${i} FROM t WHERE s = '},{' -- ${'x'.repeat(250)}` }));
    const text = JSON.stringify(events);
    expect(Buffer.byteLength(text)).toBeGreaterThan(8 * 64 * 1024);
    const parse = vi.spyOn(JSON, 'parse');
    try {
      expect(parseJsonBody(Buffer.from(text))).toEqual(events);
      // The point of the pieces: no string handed to JSON.parse reaches 128 KiB.
      const lengths = parse.mock.calls.map(([piece]) => piece.length);
      expect(lengths.length).toBeGreaterThanOrEqual(8);
      expect(Math.max(...lengths)).toBeLessThan(128 * 1024);
    } finally {
      parse.mockRestore();
    }
  });

  it('refuses a large malformed body with JSON.parse’s own message', () => {
    const valid = JSON.stringify(Array.from({ length: 2000 }, (_, i) => ({ i, pad: 'y'.repeat(200) })));
    const between = valid.indexOf('},{', 100_000) + 1;
    const malformed = [
      valid.slice(0, -1), // no closing bracket
      valid + ' trailing', // content after the array
      valid.slice(0, between) + '}' + valid.slice(between), // a stray brace between two elements
      valid.replace('"i":1500', '"i":15 00'), // a broken number late in the body
      valid.slice(0, 200_000) + '"' + valid.slice(200_000), // an unterminated string
      valid.slice(0, -1) + ',]', // a trailing comma: the last cut left only `]`, which parsed as []
      valid.slice(0, -1) + ', \n ]', // the same with whitespace
      // A review's body: one large element after a small one, and a trailing comma (the only cut past 64 KiB).
      JSON.stringify([{ i: 0 }, { i: 1, details: 'd'.repeat(140_000) }]).slice(0, -1) + ',]',
    ];
    for (const text of malformed) {
      const expected = reference(text);
      expect(expected).toHaveProperty('error');
      expect(ours(text)).toEqual(expected);
    }
  });

  it('parses small bodies, lone objects and non-arrays as JSON.parse does', () => {
    for (const text of ['{"a":1}', '[]', '[1,2]', '"x"', '  [ {"a":"},"} ]  ', 'nul', '']) {
      expect(ours(text)).toEqual(reference(text));
    }
    const bigObject = JSON.stringify({ list: Array.from({ length: 3000 }, (_, i) => ({ i, pad: 'z'.repeat(100) })) });
    expect(ours(bigObject)).toEqual(reference(bigObject));
  });

  describe('nesting depth', () => {
    /** `count` values nested `depth` deep each, in one top-level array (so depth + 1 in all). */
    const nested = (depth: number, count: number, open = '[', close = ']') => `[${Array.from({ length: count }, () => open.repeat(depth) + close.repeat(depth)).join(',')}]`;

    it('measures nesting outside strings only, once a body holds enough brackets to matter', () => {
      // Deep, with brackets enough to be measured: refused past the limit, whichever brackets.
      expect(nestsDeeperThan(Buffer.from(nested(200_000, 1)), JSON_DEPTH_MAX)).toBe(true);
      expect(nestsDeeperThan(Buffer.from(nested(70, 2_000, '{"a":', '}')), JSON_DEPTH_MAX)).toBe(true);
      // Many brackets, none deeper than the limit (the top-level array is one more level).
      expect(nestsDeeperThan(Buffer.from(nested(JSON_DEPTH_MAX - 1, 2_000)), JSON_DEPTH_MAX)).toBe(false);
      expect(nestsDeeperThan(Buffer.from(nested(JSON_DEPTH_MAX, 2_000)), JSON_DEPTH_MAX)).toBe(true);
      // Brackets inside strings, escaped quotes included, are text: no depth.
      const quoted = JSON.stringify(Array.from({ length: 1_000 }, () => ({ details: '\\"' + '[{'.repeat(200) + '"' })));
      expect(nestsDeeperThan(Buffer.from(quoted), JSON_DEPTH_MAX)).toBe(false);
      expect(JSON.parse(quoted)).toHaveLength(1_000);
      // Too few brackets to be measured: never refused (parsing them costs what a valid body does).
      expect(nestsDeeperThan(Buffer.from(nested(10_000, 1)), JSON_DEPTH_MAX)).toBe(false);
    });
  });
});
