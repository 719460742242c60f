import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeEvent, storedEventJson } from '../src/encoded-event.js';
import type { AuditEvent, StoredEvent } from '../src/event.js';

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
