// Goal: a search answer's JSON is the same whether an event was parsed or read as stored text (cut from the text, or serialised through its fields when the text holds erased fields): same fields, same order, any characters.
import { toEventOutput, type StoredEvent } from '@auditlake/model';
import { StoredEventText } from '@auditlake/store';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventOutputJson, searchResponseBody, searchResponseJson } from '../src/search-response.js';

const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('"', '\\', ',"seq":2,"term":3}', ',"erased":{', 'ü€😀'));
const hex = fc.stringMatching(/^[0-9a-f]{0,8}$/);

/** A stored text as the store writes it (members in order, then its place, then maybe the chain). */
const storedArb = fc
  .record(
    {
      eventId: fc.oneof(fc.uuid(), text),
      userId: text,
      source: text,
      action: text,
      resource: text,
      decision: fc.constantFrom('', 'ALLOW', 'DENY'),
      tables: fc.array(text, { maxLength: 3 }),
      query: text,
      details: text,
      redacted: fc.integer({ min: 1, max: 5 }),
      sourceId: text,
      sourceSeq: fc.integer({ min: 0, max: 1e12 }),
      erased: fc.dictionary(fc.constantFrom('query', 'details', 'userId'), hex),
      timestamp: fc.integer({ min: 0, max: 4e12 }),
      ingestTs: fc.integer({ min: 0, max: 4e12 }),
      seq: fc.integer({ min: 1, max: 1e12 }),
      term: fc.integer({ min: 0, max: 100 }),
      chain: fc.record({ recordHash: hex, chainHash: hex, fieldCheck: hex }),
    },
    { requiredKeys: ['eventId', 'userId', 'source', 'action', 'resource', 'decision', 'tables', 'query', 'details', 'timestamp', 'ingestTs', 'seq', 'term'] },
  )
  .map(({ chain, ...event }) => JSON.stringify({ ...event, ...(chain ?? {}) }));

describe('search answer JSON', () => {
  it('property: a text event gives what serialising the parsed event gives', () => {
    fc.assert(
      fc.property(storedArb, (json) => {
        const event = StoredEventText.of(json);
        expect(event).toBeDefined();
        const read = (event as StoredEventText).asStoredEvent();
        const parsed = JSON.parse(json) as StoredEvent;
        expect(eventOutputJson(read)).toBe(JSON.stringify(toEventOutput(parsed)));
      }),
      { numRuns: 500 },
    );
  });

  it('composes the page as JSON.stringify would, text events and parsed ones alike', () => {
    const jsons = fc.sample(storedArb, { numRuns: 20, seed: 7 });
    const events = jsons.map((json, i) => (i % 2 === 0 ? (StoredEventText.of(json) as StoredEventText).asStoredEvent() : (JSON.parse(json) as StoredEvent)));
    const answer = searchResponseJson({ events, truncated: true, nextCursor: 'c' }, false);
    expect(JSON.parse(answer)).toEqual({ events: jsons.map((json) => toEventOutput(JSON.parse(json) as StoredEvent)), count: 20, truncated: true, nextCursor: 'c' });
    expect(answer).toBe(JSON.stringify({ events: jsons.map((json) => toEventOutput(JSON.parse(json) as StoredEvent)), count: 20, truncated: true, nextCursor: 'c' }));
    // What the route sends: the same text as UTF-8 (the values hold characters beyond ASCII).
    const body = searchResponseBody({ events, truncated: true, nextCursor: 'c' }, false);
    expect(body.toString('utf8')).toBe(answer);
    expect(body.equals(Buffer.from(answer, 'utf8'))).toBe(true);
    expect(body.length).toBeGreaterThan(answer.length);
  });
});
