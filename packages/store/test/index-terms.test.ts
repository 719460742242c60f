// Goal: the indexed fields read from a stored event's bytes (by the scanner, never a parse) are exactly those a full JSON parse gives, for any field values.
import { storedEventJson, encodeEvent, type AuditEvent } from '@auditlake/model';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { termsFromJson } from '../src/index-writer.js';

const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.constantFrom('', '"', '\\', '\\"', ',"query":"x"', '\u2028', 'ä"ö\\\\"'));

describe('termsFromJson', () => {
  it('property: equals a full parse of the stored JSON, as text and as bytes', () => {
    fc.assert(
      fc.property(
        fc.record({ eventId: text.filter((s) => s.length > 0), userId: text, source: text, action: text, resource: text, decision: fc.constantFrom<'' | 'ALLOW' | 'DENY'>('', 'ALLOW', 'DENY'), tables: fc.array(text, { maxLength: 4 }), query: text, details: text, timestamp: fc.nat() }),
        (event: AuditEvent) => {
          const json = storedEventJson(encodeEvent(event), 5, 6, 7);
          const expected = { userId: event.userId, source: event.source, action: event.action, decision: event.decision, tables: event.tables };
          expect(termsFromJson(json)).toEqual(expected);
          expect(termsFromJson(Buffer.from(json))).toEqual(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('reads another member order by a full parse, and refuses an event without the indexed fields', () => {
    expect(termsFromJson('{"tables":["t"],"userId":"u","source":"s","action":"a","decision":"","query":""}')).toEqual({ userId: 'u', source: 's', action: 'a', decision: '', tables: ['t'] });
    expect(() => termsFromJson('{"eventId":"e","query":""}')).toThrow(TypeError);
  });
});
