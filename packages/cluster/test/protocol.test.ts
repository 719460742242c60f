import { encodeEvent, type AuditEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { parseForwardedEvent } from '../src/protocol.js';

const event: AuditEvent = {
  eventId: 'e1',
  userId: 'ana',
  source: 'trino',
  action: 'data:Select',
  resource: 'r',
  decision: 'DENY',
  tables: ['a.b.c'],
  query: 'SELECT 1',
  details: '',
  timestamp: 1_700_000_000_000,
};

describe('parseForwardedEvent', () => {
  it('keeps the text of an exact event as it was sent', () => {
    const { json } = encodeEvent(event);
    expect(parseForwardedEvent(json)).toEqual({ eventId: 'e1', timestamp: event.timestamp, json });
  });

  it('rebuilds anything else to the event shape, dropping fields that are not an event', () => {
    const sent = JSON.stringify({ ...event, seq: 99, term: 7, extra: { a: 1 } });
    const parsed = parseForwardedEvent(sent);
    expect(parsed.json).not.toBe(sent);
    expect(JSON.parse(parsed.json)).toEqual(event);
  });

  it('validates again what is not exactly an event, and refuses it when invalid', () => {
    expect(() => parseForwardedEvent(JSON.stringify({ ...event, tables: 'a.b.c' }))).toThrow(/forwarded event.tables must be an array/);
    expect(JSON.parse(parseForwardedEvent(JSON.stringify({ ...event, decision: 'allow', extra: 1 })).json)).toEqual({ ...event, decision: 'ALLOW' });
  });

  it('refuses text that is not an event at all', () => {
    expect(() => parseForwardedEvent('[1,2]')).toThrow(/not an audit event/);
    expect(() => parseForwardedEvent('{"userId":"x"}')).toThrow(/not an audit event/);
    expect(() => parseForwardedEvent('{"eventId":')).toThrow(SyntaxError);
  });
});
