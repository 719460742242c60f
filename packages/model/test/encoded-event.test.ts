import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeEvent, storedEventJson, storedTail, storedToOutputJson } from '../src/encoded-event.js';
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

  const hex = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), maxLength: 64 });
  const digest = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 });
  // As the store writes them (two digests and a 56-digit field check) half the time, any lengths otherwise.
  const hexMembers = fc.oneof(fc.tuple(digest, digest, digest.map((d) => d.slice(0, 56))), fc.tuple(hex, hex, hex));
  // A record's salt (docs/integrity.md): a key K, or the field salts an erasure kept, or none (v2).
  const b64 = (length: number) => fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'), minLength: length, maxLength: length });
  const salt = fc.option(fc.oneof(b64(22), fc.array(fc.oneof(fc.constant(''), b64(16)), { minLength: 5, maxLength: 5 }).map((parts) => parts.join('.'))), { nil: undefined });
  const chainMembers = fc.option(
    fc.tuple(hexMembers, salt).map(([[record, chain, check], key]) => `,"recordHash":"${record}","chainHash":"${chain}","fieldCheck":"${check}"${key === undefined ? '' : `,"salt":"${key}"`}`),
    { nil: '' },
  );

  it('drops any record chain members after term, for any event', () => {
    fc.assert(
      fc.property(anyEvent, fc.nat(), fc.nat(), fc.nat(), chainMembers, (raw, ingestTs, seq, term, chain) => {
        const e = (raw.redacted === undefined ? { ...raw, redacted: undefined } : raw) as AuditEvent;
        const plain = storedEventJson(encodeEvent(e), ingestTs, seq, term);
        const stored = `${plain.slice(0, -1)}${chain}}`;
        expect(storedToOutputJson(stored)).toBe(JSON.stringify(toEventOutput(JSON.parse(plain) as StoredEvent)));
      }),
      { numRuns: 300 },
    );
  });

  it('finds the appended members from the end where the last occurrence of each is, for any stored event', () => {
    fc.assert(
      fc.property(anyEvent, fc.nat(), fc.nat(), fc.nat(), chainMembers, (raw, ingestTs, seq, term, chain) => {
        const e = (raw.redacted === undefined ? { ...raw, redacted: undefined } : raw) as AuditEvent;
        const plain = storedEventJson(encodeEvent(e), ingestTs, seq, term);
        const stored = `${plain.slice(0, -1)}${chain}}`;
        const seqAt = stored.lastIndexOf(',"seq":');
        const ingestTsAt = stored.lastIndexOf(',"ingestTs":', seqAt);
        expect(storedTail(stored)).toEqual({
          timestampAt: stored.lastIndexOf(',"timestamp":', ingestTsAt),
          ingestTsAt,
          seqAt,
          termAt: stored.lastIndexOf(',"term":'),
        });
      }),
      { numRuns: 300 },
    );
  });

  it('has no timestamp position when the member before ingestTs is not a timestamp', () => {
    const noTimestamp = '{"eventId":"a","details":"","ingestTs":2,"seq":3,"term":4}';
    expect(storedTail(noTimestamp)).toEqual({ timestampAt: -1, ingestTsAt: noTimestamp.indexOf(',"ingestTs"'), seqAt: noTimestamp.indexOf(',"seq"'), termAt: noTimestamp.indexOf(',"term"') });
    expect(storedTail('{"eventId":"a","timestamp":"1","ingestTs":2,"seq":3,"term":4}')?.timestampAt).toBe(-1);
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
    const [digest, check] = ['0'.repeat(64), '0'.repeat(56)];
    // Members of the stored lengths under another name.
    refused.push(`,"seq":3,"term":4,"recordHash":"${digest}","chainHash":"${digest}","fieldChecks":"${check.slice(1)}"}`);
    refused.push(`,"seq":3,"term":4,"recordHash":"${digest}","chainHsah":"${digest}","fieldCheck":"${check}"}`);
    expect(storedToOutputJson(`${head},"seq":3,"term":4,"recordHash":"${digest}","chainHash":"${digest}","fieldCheck":"${check}"}`)).toBe(`${head}}`);
    for (const tail of refused) expect(storedToOutputJson(head + tail), tail).toBeUndefined();
    // Their digits are not read at the stored lengths (they are never in the API's JSON, and the
    // verifier checks what they hold): the cut is the same.
    for (const [recordHash, chainHash] of [[`A${digest.slice(1)}`, digest], [digest, `${digest.slice(1)}g`]]) {
      expect(storedToOutputJson(`${head},"seq":3,"term":4,"recordHash":"${recordHash}","chainHash":"${chainHash}","fieldCheck":"${check}"}`)).toBe(`${head}}`);
    }
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
