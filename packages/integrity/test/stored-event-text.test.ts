// Goal: the leader's way of reading hash inputs out of stored JSON (slices, no parse) gives the
// same canonical texts as the verifier's way (from values), for any event, so a tier copy and
// a local copy always hash alike.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalOfText, canonicalRecord, composeStoredEvent, readEventText, type RecordValues } from '../src/index.js';

const text = fc.string({ unit: 'binary', maxLength: 40 }).map((s) => s.toWellFormed());
const values: fc.Arbitrary<RecordValues & { redacted?: number | undefined }> = fc.record({
  seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  term: fc.nat(),
  ingestTs: fc.nat({ max: 8_640_000_000_000_000 }),
  timestamp: fc.nat({ max: 8_640_000_000_000_000 }),
  eventId: text.filter((s) => s.length > 0),
  userId: text,
  source: text,
  action: text,
  resource: text,
  decision: fc.constantFrom('', 'ALLOW', 'DENY'),
  tables: fc.array(text, { maxLength: 4 }),
  query: text,
  details: text,
  sourceId: fc.option(text, { nil: undefined }),
  sourceSeq: fc.option(fc.nat(), { nil: undefined }),
  // Not hashed (the masked text is): read past, whatever it holds.
  redacted: fc.option(fc.nat(), { nil: undefined }),
});

describe('readEventText', () => {
  it('reads from stored JSON exactly the canonical record the values give', () => {
    fc.assert(
      fc.property(values, (v) => {
        const read = readEventText(composeStoredEvent(v));
        expect(read).toBeDefined();
        expect(canonicalOfText(read!)).toEqual(canonicalRecord(v));
      }),
      { numRuns: 2000 },
    );
  });

  it('reads the chain fields and an erased map', () => {
    const v = { seq: 3, term: 2, ingestTs: 5, timestamp: 4, eventId: 'e', userId: 'u', source: 's', action: 'a', resource: '', decision: '', tables: ['a,b', 'c'], query: 'q', details: '' };
    const hashes = { recordHash: 'a'.repeat(64), chainHash: 'b'.repeat(64), fieldCheck: 'c'.repeat(56), erased: { query: 'd'.repeat(64) } };
    const read = readEventText(composeStoredEvent({ ...v, ...hashes }));
    expect(read).toMatchObject({ recordHash: 'a'.repeat(64), chainHash: 'b'.repeat(64), fieldCheck: 'c'.repeat(56), erased: { query: 'd'.repeat(64) }, seq: 3, term: 2 });
    expect(read?.texts.tables).toBe('a,b,c');
  });

  it('reads a salt (a key, or the salts an erasure kept) after the chain fields, into the canonical record', () => {
    const v = { seq: 3, term: 2, ingestTs: 5, timestamp: 4, eventId: 'e', userId: 'u', source: 's', action: 'a', resource: '', decision: '', tables: [], query: 'q', details: '' };
    const hashes = { recordHash: 'a'.repeat(64), chainHash: 'b'.repeat(64), fieldCheck: 'c'.repeat(56) };
    for (const salt of ['AAECAwQFBgcICQoLDA0ODw', `.${'A'.repeat(16)}.${'B'.repeat(16)}.${'C-'.repeat(8)}.`, '....']) {
      const stored = composeStoredEvent({ ...v, ...hashes, salt });
      expect(stored.endsWith(`,"fieldCheck":"${'c'.repeat(56)}","salt":"${salt}"}`)).toBe(true);
      const read = readEventText(stored);
      expect(read?.salt).toBe(salt);
      expect(canonicalOfText(read!)).toEqual(canonicalRecord({ ...v, salt }));
    }
    const stored = composeStoredEvent({ ...v, ...hashes, salt: 'AAECAwQFBgcICQoLDA0ODw' });
    expect(readEventText(stored.replace('"salt":"AAEC', '"salt":"A\\u0041EC'))).toBeUndefined();
  });

  it('refuses (undefined) JSON in any other layout, so callers parse it instead', () => {
    const stored = composeStoredEvent({ seq: 1, term: 0, ingestTs: 1, timestamp: 1, eventId: 'e', userId: 'u', source: 's', action: 'a', resource: '', decision: '', tables: [], query: '', details: '' });
    expect(readEventText(stored)).toBeDefined();
    for (const other of [
      stored.replace('"userId"', '"user"'),
      stored.replace('{', '{ '),
      stored.replace('"timestamp":1', '"timestamp":01'),
      stored.replace('"timestamp":1', '"timestamp":1.0'),
      stored + ' ',
      stored.replace('"tables":[]', '"tables":["x" ]'),
      stored.replace('"tables":[]', '"tables":"x"'),
    ]) {
      expect(readEventText(other), other).toBeUndefined();
    }
  });
});
