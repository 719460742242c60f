import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeEvent, storedEventJson, storedToOutputJson } from '../src/encoded-event.js';
import { toEventOutput, type AuditEvent, type StoredEvent } from '../src/event.js';

const event: AuditEvent = {
  eventId: 'e-1',
  userId: 'ana',
  source: 'trino',
  action: 'data:Select',
  resource: 'hive.s.t',
  decision: 'ALLOW',
  tables: ['hive.s.t'],
  query: 'SELECT "x"\n FROM t -- ünï',
  details: '',
  timestamp: 1_700_000_000_000,
};

describe('encoded events', () => {
  it('composes exactly the JSON JSON.stringify gives for the stored event', () => {
    const stored: StoredEvent = { ...event, ingestTs: 1_700_000_000_123, seq: 42, term: 3 };
    expect(storedEventJson(encodeEvent(event), 1_700_000_000_123, 42, 3)).toBe(JSON.stringify(stored));
  });

  it('drops fields that are not part of an audit event, so they cannot reach the store', () => {
    const withExtra = { ...event, seq: 9, ingestTs: 1, evil: true } as AuditEvent;
    expect(JSON.parse(encodeEvent(withExtra).json)).toEqual(event);
  });

  it('round-trips any strings through the composed JSON', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.array(fc.string()), fc.nat(), fc.nat(), (query, details, tables, seq, term) => {
        const e = { ...event, query, details, tables };
        expect(JSON.parse(storedEventJson(encodeEvent(e), 5, seq, term))).toEqual({ ...e, ingestTs: 5, seq, term });
      }),
    );
  });
});

describe('encoded events with a masked-value count', () => {
  it('keep redacted before timestamp, so the stored text still ends with timestamp, ingestTs, seq and term', () => {
    const redacted: AuditEvent = { ...event, query: 'password=***', redacted: 1 };
    const json = storedEventJson(encodeEvent(redacted), 7, 8, 9);
    expect(json.endsWith(',"redacted":1,"timestamp":1700000000000,"ingestTs":7,"seq":8,"term":9}')).toBe(true);
    expect(JSON.parse(json)).toEqual({ ...redacted, ingestTs: 7, seq: 8, term: 9 });
  });
});

describe('the API JSON of a stored event, cut from its stored text', () => {
  const anyEvent = fc.record({
    eventId: fc.string({ minLength: 1 }),
    userId: fc.string(),
    source: fc.string(),
    action: fc.string(),
    resource: fc.string(),
    decision: fc.constantFrom('ALLOW' as const, 'DENY' as const, '' as const),
    tables: fc.array(fc.string()),
    // Text that looks like the members being cut, to tempt a search that is not anchored.
    query: fc.oneof(fc.string(), fc.constantFrom(',"seq":1,"term":2}', ',"ingestTs":5', '"seq":', '\u0000')),
    details: fc.string({ unit: 'binary' }),
    redacted: fc.option(fc.nat({ max: 5 }), { nil: undefined }),
    timestamp: fc.nat(),
  });

  it('is exactly what serialising the parsed event for the API gives, for any event', () => {
    fc.assert(
      fc.property(anyEvent, fc.nat(), fc.nat(), fc.nat(), (raw, ingestTs, seq, term) => {
        const e = (raw.redacted === undefined ? { ...raw, redacted: undefined } : raw) as AuditEvent;
        const stored = storedEventJson(encodeEvent(e), ingestTs, seq, term);
        expect(storedToOutputJson(stored)).toBe(JSON.stringify(toEventOutput(JSON.parse(stored) as StoredEvent)));
      }),
      { numRuns: 500 },
    );
  });

  it('is refused for text that does not end as a stored event does (the caller serialises instead)', () => {
    expect(storedToOutputJson('{"eventId":"a","timestamp":1,"ingestTs":2}')).toBeUndefined();
    expect(storedToOutputJson('{"eventId":"a","timestamp":1,"seq":3,"term":4}')).toBeUndefined();
    expect(storedToOutputJson('{"eventId":"a","ingestTs":2,"seq":3,"term":4,"extra":1}')).toBeUndefined();
    expect(storedToOutputJson('{"eventId":"a","ingestTs":2,"seq":"3","term":4}')).toBeUndefined();
    expect(storedToOutputJson('{"eventId":"a","timestamp":1,"ingestTs":2,"seq":3,"term":4}')).toBe('{"eventId":"a","timestamp":1,"ingestTs":2}');
  });

  it('refuses every tail that is not exactly seq, term, the optional chain members and the closing brace', () => {
    const head = '{"eventId":"a","timestamp":1,"ingestTs":2';
    const refused = [
      ',"seq":,"term":4}',
      ',"seq":3,"term":}',
      ',"seq":3,"term":4',
      ',"seq":3,"term":4}}',
      ',"seq":3,"term":4} ',
      ',"seq":3,"term":4,"recordHash":"ab"}',
      ',"seq":3,"term":4,"recordHash":"ab","chainHash":"cd"}',
      ',"seq":3,"term":4,"recordHash":"ab","chainHash":"cd","fieldCheck":"0f}',
      ',"seq":3,"term":4,"recordHash":"ab","chainHash":"cd","fieldCheck":"0g"}',
      ',"seq":3,"term":4,"chainHash":"cd","recordHash":"ab","fieldCheck":"0f"}',
      ',"seq":-3,"term":4}',
      ',"seq":3.5,"term":4}',
    ];
    for (const tail of refused) expect(storedToOutputJson(head + tail), tail).toBeUndefined();
    expect(storedToOutputJson(`${head},"seq":3,"term":4,"recordHash":"","chainHash":"","fieldCheck":""}`)).toBe(`${head}}`);
    // ingestTs must be the last member before seq, with digits only.
    expect(storedToOutputJson('{"eventId":"a","ingestTs":2,"timestamp":1,"seq":3,"term":4}')).toBeUndefined();
    expect(storedToOutputJson('{"eventId":"a","ingestTs":,"seq":3,"term":4}')).toBeUndefined();
    expect(storedToOutputJson('{"eventId":"a","ingestTs":2x,"seq":3,"term":4}')).toBeUndefined();
  });

  it('drops the record chain members a store may keep after term, and refuses text with an erased-fields member', () => {
    const chain = ',"recordHash":"ab01","chainHash":"cd23","fieldCheck":"0f0f"}';
    expect(storedToOutputJson(`{"eventId":"a","timestamp":1,"ingestTs":2,"seq":3,"term":4${chain}`)).toBe('{"eventId":"a","timestamp":1,"ingestTs":2}');
    expect(storedToOutputJson(`{"eventId":"a","timestamp":1,"ingestTs":2,"seq":3,"term":4,"recordHash":"AB","chainHash":"cd","fieldCheck":"0f"}`)).toBeUndefined();
    expect(storedToOutputJson(`{"eventId":"a","details":"","erased":{"query":"ab"},"timestamp":1,"ingestTs":2,"seq":3,"term":4${chain}`)).toBeUndefined();
    // Text that only looks like the member, inside a value, is escaped and does not count.
    const looksErased = JSON.stringify({ eventId: 'a', details: ',"erased":{', timestamp: 1, ingestTs: 2, seq: 3, term: 4 });
    expect(storedToOutputJson(looksErased)).toBe(JSON.stringify({ eventId: 'a', details: ',"erased":{', timestamp: 1, ingestTs: 2 }));
  });
});
