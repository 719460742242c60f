// Goal: an event read for a search page from its stored text reads, field by field and as JSON, exactly as the parsed text does, whatever its values hold; text not laid out as the store writes it is refused (the caller parses it).
import { toEventOutput, type StoredEvent } from '@auditlake/model';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { storedJsonOf, storedOutputJsonOf } from '../src/index.js';
import { StoredEventText } from '../src/stored-event-text.js';

const FIELDS = ['eventId', 'userId', 'source', 'action', 'resource', 'decision', 'tables', 'query', 'details', 'redacted', 'sourceId', 'sourceSeq', 'timestamp', 'ingestTs', 'seq', 'term', 'recordHash', 'chainHash', 'fieldCheck', 'erased', 'salt'] as const;

const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('"', '\\', ',"timestamp":1', ',"seq":2,"term":3}', ',"userId":"x"', 'ü€😀', '\u0000\n'));
const hex = fc.stringMatching(/^[0-9a-f]{0,8}$/);

/** Stored events as the store writes them: the event's members in order, then its place, then the chain. */
const storedArb = fc.record(
  {
    eventId: fc.oneof(fc.uuid(), text),
    userId: text,
    source: text,
    action: text,
    resource: text,
    decision: fc.constantFrom<'' | 'ALLOW' | 'DENY'>('', 'ALLOW', 'DENY'),
    tables: fc.array(text, { maxLength: 3 }),
    query: text,
    details: text,
    redacted: fc.integer({ min: 1, max: 5 }),
    sourceId: text,
    sourceSeq: fc.integer({ min: 0, max: 1e12 }),
    erased: fc.dictionary(fc.constantFrom('query', 'details', 'userId', 'timestamp', 'seq'), hex),
    timestamp: fc.integer({ min: 0, max: 4e12 }),
    ingestTs: fc.integer({ min: 0, max: 4e12 }),
    seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    term: fc.integer({ min: 0, max: 1000 }),
    chain: fc.oneof(
      fc.record({ recordHash: hex, chainHash: hex, fieldCheck: hex }),
      // As the store writes them: two SHA-256 digests and a 56-digit field check.
      fc.record({ recordHash: fc.stringMatching(/^[0-9a-f]{64}$/), chainHash: fc.stringMatching(/^[0-9a-f]{64}$/), fieldCheck: fc.stringMatching(/^[0-9a-f]{56}$/) }),
      // With the record's salt after them (content format v3): a key, or the salts an erasure kept.
      fc.record({
        recordHash: fc.stringMatching(/^[0-9a-f]{64}$/),
        chainHash: fc.stringMatching(/^[0-9a-f]{64}$/),
        fieldCheck: fc.stringMatching(/^[0-9a-f]{56}$/),
        salt: fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{21}[AQgw]$/), fc.stringMatching(/^([A-Za-z0-9_-]{16})?(\.([A-Za-z0-9_-]{16})?){4}$/)),
      }),
    ),
  },
  { requiredKeys: ['eventId', 'userId', 'source', 'action', 'resource', 'decision', 'tables', 'query', 'details', 'timestamp', 'ingestTs', 'seq', 'term'] },
);

function storedText(spec: Record<string, unknown> & { chain?: Record<string, string> }): string {
  const { chain, ...event } = spec;
  return JSON.stringify({ ...event, ...(chain ?? {}) });
}

describe('StoredEventText', () => {
  it('property: every field, JSON.stringify and the API output read as the parsed text does', () => {
    fc.assert(
      fc.property(storedArb, (spec) => {
        const json = storedText(spec);
        const parsed = JSON.parse(json) as StoredEvent;
        const event = StoredEventText.of(json);
        expect(event, json).toBeDefined();
        const read = (event as StoredEventText).asStoredEvent();
        for (const field of FIELDS) expect(read[field], field).toEqual(parsed[field]);
        expect(JSON.stringify(read)).toBe(json);
        expect(toEventOutput(read)).toEqual(toEventOutput(parsed));
        expect(storedJsonOf(read)).toBe(json);
        // The API's JSON is cut from the text unless it keeps erased fields' hashes.
        expect(storedOutputJsonOf(read)).toBe(spec.erased === undefined ? JSON.stringify(toEventOutput(parsed)) : undefined);
      }),
      { numRuns: 500 },
    );
  });

  it('reads the order fields and userId without parsing the text', () => {
    const json = JSON.stringify({ eventId: 'e1', userId: 'a"b', source: 's', timestamp: 5, ingestTs: 6, seq: 7, term: 1 });
    const parse = JSON.parse;
    let parses = 0;
    JSON.parse = ((...args: Parameters<typeof JSON.parse>): unknown => {
      parses++;
      return parse(...args) as unknown;
    }) as typeof JSON.parse;
    try {
      const event = StoredEventText.of(json) as StoredEventText;
      expect([event.eventId, event.userId, event.timestamp, event.ingestTs, event.seq]).toEqual(['e1', 'a"b', 5, 6, 7]);
      // userId held an escape: read with one parse of that string only.
      expect(parses).toBe(1);
      expect(event.asStoredEvent().source).toBe('s');
      expect(event.asStoredEvent().term).toBe(1);
      expect(parses).toBe(2);
    } finally {
      JSON.parse = parse;
    }
  });

  it('refuses text not laid out as the store writes it', () => {
    const refused = [
      '{"userId":"u","eventId":"e","timestamp":1,"ingestTs":2,"seq":3,"term":4}',
      '{"eventId":"e","userId":"u","ingestTs":2,"timestamp":1,"seq":3,"term":4}',
      '{"eventId":"e","userId":"u","timestamp":1,"ingestTs":2,"term":4,"seq":3}',
      '{"eventId":"e","userId":"u","timestamp":-1,"ingestTs":2,"seq":3,"term":4}',
      '{"eventId":"e","userId":"u","timestamp":1.5,"ingestTs":2,"seq":3,"term":4}',
      '{"eventId":"e","userId":"u","timestamp":1,"ingestTs":2,"seq":,"term":4}',
      '{"eventId":"e","timestamp":1,"ingestTs":2,"seq":3,"term":4}',
      '{"eventId":"e","userId":"u","timestamp":99999999999999999,"ingestTs":2,"seq":3,"term":4}',
    ];
    for (const json of refused) expect(StoredEventText.of(json), json).toBeUndefined();
  });
});
