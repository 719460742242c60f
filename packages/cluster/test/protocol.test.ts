import { encodeEvent, type AuditEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { FORWARD_CHARS_MAX, limitForwardBatch } from '../src/outbox-forwarder.js';
import { markTimeAssigned, newIdFlagsOf, newIdsOf, parseForwardedEvent } from '../src/protocol.js';

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

  it('re-encodes text that is an event but not character for character what encodeEvent writes', () => {
    const { json } = encodeEvent(event);
    const { userId, ...rest } = event;
    const reordered = JSON.stringify({ userId, ...rest });
    const longQuery = JSON.stringify({ ...event, query: 'x'.repeat(70 * 1024) });
    for (const sent of [json + ' ', json + '\r', ' ' + json, reordered, longQuery]) {
      const parsed = parseForwardedEvent(sent);
      expect(parsed.json).toBe(JSON.stringify(JSON.parse(parsed.json)));
      expect(parsed.json.startsWith('{"eventId":') && parsed.json.endsWith('}')).toBe(true);
    }
    expect(parseForwardedEvent(json + ' ').json).toBe(json);
    expect((JSON.parse(parseForwardedEvent(longQuery).json) as AuditEvent).query).toMatch(/…\[truncated by auditlake: 71680 bytes\]$/);
  });

  it('refuses text that is not an event at all', () => {
    expect(() => parseForwardedEvent('[1,2]')).toThrow(/not an audit event/);
    expect(() => parseForwardedEvent('{"userId":"x"}')).toThrow(/not an audit event/);
    expect(() => parseForwardedEvent('{"eventId":')).toThrow(SyntaxError);
    expect(() => parseForwardedEvent(JSON.stringify({ ...event, timestamp: undefined }))).toThrow(/no timestamp/);
    expect(() => parseForwardedEvent(JSON.stringify({ ...event, timestamp: -1 }))).toThrow(/forwarded event.timestamp must be a non-negative integer/);
  });
});

describe('limitForwardBatch', () => {
  const entry = (chars: number) => ({ json: 'x'.repeat(chars) });

  it('keeps the oldest entries that fit, in order, and always at least one', () => {
    const entries = [entry(40), entry(40), entry(40)];
    expect(limitForwardBatch(entries, 100)).toEqual(entries.slice(0, 2));
    expect(limitForwardBatch(entries, 120)).toEqual(entries);
    expect(limitForwardBatch([entry(500), entry(1)], 100)).toEqual([entry(500)]);
    expect(limitForwardBatch([], 100)).toEqual([]);
  });

  it('keeps a full batch of the largest events the node accepts under the leader body limit', () => {
    // 5,000 events with 14 KB queries measured 70.8 MB as one forward: over the 64 MiB limit.
    const big = Array.from({ length: 5000 }, () => entry(14 * 1024));
    const batch = limitForwardBatch(big, FORWARD_CHARS_MAX);
    expect(batch.length).toBeLessThan(5000);
    expect(batch.reduce((n, e) => n + e.json.length, 0) * 3).toBeLessThanOrEqual(64 * 1024 * 1024);
  });
});

describe('new-id flags of a forward', () => {
  it('flag exactly the entries read for the first time with ids assigned by the follower, and name only those ids to the leader', () => {
    const entries = [{ unsentNewId: true }, { unsentNewId: false }, { unsentNewId: true }];
    expect(newIdFlagsOf(entries)).toBe('101');
    expect(newIdFlagsOf([{ unsentNewId: false }])).toBeUndefined();
    const events = ['a', 'b', 'c'].map((eventId) => encodeEvent({ ...event, eventId }));
    expect([...newIdsOf(events, '101')]).toEqual(['a', 'c']);
    // No flags, or anything but '1', means every id is looked up.
    expect(newIdsOf(events, undefined).size).toBe(0);
    expect(newIdsOf(events, '0x?').size).toBe(0);
  });

  it('carry which events the follower gave its own time (bit 2), with or without a new id', () => {
    const entries = [{ unsentNewId: false, timeAssigned: true }, { unsentNewId: false, timeAssigned: false }, { unsentNewId: true, timeAssigned: true }];
    expect(newIdFlagsOf(entries)).toBe('203');
    const events = ['a', 'b', 'c'].map((eventId) => encodeEvent({ ...event, eventId }));
    expect([...newIdsOf(events, '203')]).toEqual(['c']);
    expect(markTimeAssigned(events, '203').map((e) => e.timeAssigned === true)).toEqual([true, false, true]);
    const unflagged = ['a', 'b'].map((eventId) => encodeEvent({ ...event, eventId }));
    expect(markTimeAssigned(unflagged, '4x').some((e) => e.timeAssigned === true)).toBe(false);
    expect(markTimeAssigned(unflagged, undefined).some((e) => e.timeAssigned === true)).toBe(false);
  });
});
