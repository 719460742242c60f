// Goal: the standby reads a replicated entry's key fields from its two ends exactly as a full
// parse would, and falls back to the parse (or refuses) whenever the entry is laid out otherwise.
import fc from 'fast-check';
import { encodeEvent, storedEventJson, type AuditEvent } from '@auditlake/model';
import { describe, expect, it, vi } from 'vitest';
import { readReplicatedEntry } from '../src/replicated-entry.js';

const event = (eventId: string, overrides: Partial<AuditEvent> = {}): AuditEvent => ({
  eventId,
  userId: 'u',
  source: 'trino',
  action: 'data:Select',
  resource: '',
  decision: 'DENY',
  tables: ['t'],
  query: 'SELECT 1',
  details: '',
  timestamp: 1_700_000_000_000,
  ...overrides,
});

function stored(e: AuditEvent, ingestTs: number, seq: number, term: number): Buffer {
  return Buffer.from(storedEventJson(encodeEvent(e), ingestTs, seq, term), 'utf8');
}

/** What a full parse says the key fields are. */
function parsed(bytes: Buffer) {
  const e = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  return { eventId: e['eventId'], timestamp: e['timestamp'], seq: e['seq'], ingestTs: e['ingestTs'], term: e['term'] };
}

describe('readReplicatedEntry', () => {
  it('agrees with a full parse for any stored event, and keeps the bytes it was given', () => {
    // Strings that imitate the tail (`,"seq":5}`) or hold escapes, in every text field.
    const text = fc.oneof(fc.string(), fc.constantFrom(',"seq":5}', '","term":1}', '\\"', '{"eventId":"x"', '\u2028'));
    // Numbers of every width up to MAX_SAFE_INTEGER: the tail's digits are read one by one.
    const count = fc.oneof(fc.nat(), fc.maxSafeNat());
    fc.assert(
      fc.property(text, text, text, count, count, count, count, (eventId, query, details, ts, ingestTs, seq, term) => {
        const bytes = stored(event(eventId === '' ? 'id' : eventId, { query, details, timestamp: ts }), ingestTs, seq, term);
        const entry = readReplicatedEntry(bytes);
        expect({ eventId: entry.eventId, timestamp: entry.timestamp, seq: entry.seq, ingestTs: entry.ingestTs, term: entry.term }).toEqual(parsed(bytes));
        expect(Buffer.from(entry.bytes).equals(bytes)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('reads a plain entry from its ends without parsing it', () => {
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const entry = readReplicatedEntry(stored(event('0190a1b2-0000-7000-8000-000000000001'), 1_700_000_000_500, 9_007_199_254_740_991, 0));
      expect(entry).toMatchObject({ eventId: '0190a1b2-0000-7000-8000-000000000001', timestamp: 1_700_000_000_000, ingestTs: 1_700_000_000_500, seq: 9_007_199_254_740_991, term: 0 });
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
  });

  it('reads a chained entry from its ends too, past its fixed-size chain fields', () => {
    const chained = (e: AuditEvent, seq: number) =>
      Buffer.from(storedEventJson(encodeEvent(e), 5, seq, 2).slice(0, -1) + `,"recordHash":"${'a'.repeat(64)}","chainHash":"${'b'.repeat(64)}","fieldCheck":"${'c'.repeat(56)}"}`);
    const parse = vi.spyOn(JSON, 'parse');
    try {
      expect(readReplicatedEntry(chained(event('chained-1'), 77))).toMatchObject({ eventId: 'chained-1', timestamp: 1_700_000_000_000, ingestTs: 5, seq: 77, term: 2 });
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
    // Salted (content format v3): the record's salt follows the chain fields, a key or the salts an erasure kept.
    for (const salt of ['AAECAwQFBgcICQoLDA0ODw', `.${'A'.repeat(16)}.${'B'.repeat(16)}..${'_-'.repeat(8)}`, '....']) {
      const salted = Buffer.from(chained(event('salted-1'), 79).toString('utf8').slice(0, -1) + `,"salt":"${salt}"}`);
      const spy = vi.spyOn(JSON, 'parse');
      try {
        expect(readReplicatedEntry(salted)).toMatchObject({ eventId: 'salted-1', timestamp: 1_700_000_000_000, ingestTs: 5, seq: 79, term: 2 });
        expect(spy).not.toHaveBeenCalled();
      } finally {
        spy.mockRestore();
      }
    }
    // A chain field of another length is not the fixed layout: parsed in full, still right.
    const odd = Buffer.from(chained(event('odd'), 78).toString('utf8').replace('"fieldCheck":"c', '"fieldCheck":"'));
    expect(readReplicatedEntry(odd)).toMatchObject({ eventId: 'odd', seq: 78 });
  });

  it('parses in full an eventId with escapes, and an entry laid out otherwise', () => {
    expect(readReplicatedEntry(stored(event('a"b\\c'), 1, 2, 3))).toMatchObject({ eventId: 'a"b\\c', seq: 2, term: 3 });
    const reordered = Buffer.from(JSON.stringify({ seq: 4, eventId: 'x', term: 1, ingestTs: 2, timestamp: 3, userId: 'u' }));
    expect(readReplicatedEntry(reordered)).toMatchObject({ eventId: 'x', seq: 4, term: 1, ingestTs: 2, timestamp: 3 });
  });

  it('refuses entries that are not stored events, naming what is wrong', () => {
    const good = stored(event('e'), 1, 2, 3).toString('utf8');
    const bad = [
      '{"eventId":', // cut short
      good.slice(0, -1), // no closing brace
      good.replace(',"seq":2', ',"seq":-2'), // a negative seq
      good.replace(',"term":3', ',"term":1.5'), // a fraction where an integer belongs
      good.replace(',"seq":2', ',"seq":99999999999999999'), // beyond a safe integer
      good.replace(',"seq":2', ',"seq":9007199254740992'), // 2^53: sixteen digits, one past the largest safe integer
      good.replace(',"timestamp":1700000000000', ''), // no event time
      '[1,2]',
    ];
    for (const text of bad) expect(() => readReplicatedEntry(Buffer.from(text)), text).toThrow(/replicated entry is not/);
  });
});
