import { describe, expect, it } from 'vitest';
import { decodeForwardRequest, decodePullResponse, encodeForwardRequest, encodePullResponse } from '../src/peer-wire.js';

// An event whose text holds every character JSON must escape, a newline among them: the
// line framing must carry it unchanged.
const tricky = JSON.stringify({ eventId: 'e\n1', query: 'SELECT 1;\n-- "quoted"\r\n\t\u2028 ünïcode', seq: 1 });

describe('peer wire (NDJSON)', () => {
  it('carries a pull answer with its entries as the exact stored bytes', () => {
    const entries = [tricky, '{"eventId":"b","seq":2}'].map((text) => Buffer.from(text, 'utf8'));
    const response = { term: 3, nodeId: 'n1', entries, lastSeq: 2, metaHash: 'h', meta: { settings: { a: '1' } } };
    const body = Buffer.concat(encodePullResponse(response));
    expect(body.toString('utf8').split('\n')).toHaveLength(3);
    const decoded = decodePullResponse(body);
    expect(decoded.entries.map((e) => Buffer.from(e).toString('utf8'))).toEqual([tricky, '{"eventId":"b","seq":2}']);
    expect({ ...decoded, entries: [] }).toEqual({ ...response, entries: [] });
  });

  it('carries a pull answer without entries, and refuses an empty one', () => {
    const response = { term: 1, nodeId: 'n0', entries: [], lastSeq: 0, metaHash: 'h', divergedFrom: 7 };
    expect(decodePullResponse(Buffer.concat(encodePullResponse(response)))).toEqual(response);
    expect(() => decodePullResponse(Buffer.alloc(0))).toThrow(/empty message/);
    // An older node's one-object JSON answer is refused, not read as "no entries".
    expect(() => decodePullResponse(Buffer.from(JSON.stringify({ ...response, entries: [{ eventId: 'x' }] })))).toThrow(/older auditlake/);
  });

  it('carries a forward request and refuses one without its header fields', () => {
    const request = { nodeId: 'n2', term: 4, events: [tricky] };
    expect(decodeForwardRequest(encodeForwardRequest(request))).toEqual(request);
    expect(() => decodeForwardRequest(Buffer.from('{"term":4}\n{}'))).toThrow(/needs nodeId and term/);
    expect(() => decodeForwardRequest(Buffer.from('[1]'))).toThrow(/first line must be a JSON object/);
    expect(() => decodeForwardRequest(Buffer.alloc(0))).toThrow(/empty message/);
  });

  it('carries the new-id flags of a forward, one per event, and refuses flags that do not match the events', () => {
    const request = { nodeId: 'n2', term: 4, events: [tricky, '{"eventId":"b"}'], newIdFlags: '10' };
    expect(decodeForwardRequest(encodeForwardRequest(request))).toEqual(request);
    const header = (flags: unknown) => Buffer.from(`${JSON.stringify({ nodeId: 'n2', term: 4, newIdFlags: flags })}\n{"eventId":"a"}`);
    expect(() => decodeForwardRequest(header('10'))).toThrow(/newIdFlags must be a string with one character per event/);
    expect(() => decodeForwardRequest(header(1))).toThrow(/newIdFlags must be a string/);
  });
});
