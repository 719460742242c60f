// Goal: the local read of a search page stops once its events pass the page's characters, after the rest of that event time (so the page can be ordered), and closes the store's iterator; what it read is what a page can show.
import type { StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { sizeBoundedBatches } from '../src/audit-search.js';
import { eventOutputJson } from '../src/search-response.js';

function stored(eventId: string, timestamp: number, ingestTs = timestamp): StoredEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: 'x'.repeat(100), details: '', timestamp, ingestTs, seq: 1, term: 0 };
}

describe('sizeBoundedBatches', () => {
  it('stops after the event time at which the characters pass the bound, and closes its source', async () => {
    const times = [10, 9, 9, 9, 8, 7, 6];
    const events = times.map((ts, i) => stored(`e${i}`, ts));
    const each = eventOutputJson(events[0]!).length;
    let closed = false;
    let read = 0;
    async function* source(): AsyncGenerator<StoredEvent[]> {
      try {
        // Two events a batch, as the store hands them out.
        for (let i = 0; i < events.length; i += 2) {
          read += Math.min(2, events.length - i);
          yield events.slice(i, i + 2);
        }
      } finally {
        closed = true;
      }
    }
    const cut: { atMs?: number; ingestTs?: number } = {};
    const got: string[] = [];
    // Passed at the second event (ts 9): the rest of ts 9 follows, ts 8 does not.
    for await (const batch of sizeBoundedBatches(source(), each + 1, cut)) got.push(...batch.map((e) => e.eventId));
    expect(got).toEqual(['e0', 'e1', 'e2', 'e3']);
    expect(cut.atMs).toBe(9);
    expect(read).toBe(6);
    expect(closed).toBe(true);
  });

  it('cuts within one event time at an ingest time (a client may send every event with one time)', async () => {
    // One event time; ingest times descending along the store's order, two sharing 50.
    const events = [stored('a', 9, 60), stored('b', 9, 50), stored('c', 9, 50), stored('d', 9, 40), stored('e', 9, 30)];
    const each = eventOutputJson(events[0]!).length;
    const cut: { atMs?: number; ingestTs?: number } = {};
    const got: string[] = [];
    async function* source(): AsyncGenerator<StoredEvent[]> {
      yield events;
    }
    for await (const batch of sizeBoundedBatches(source(), each + 1, cut)) got.push(...batch.map((e) => e.eventId));
    expect(got).toEqual(['a', 'b', 'c']);
    expect(cut).toEqual({ atMs: 9, ingestTs: 50 });
  });

  it('passes everything through, uncut, when the events stay within the bound', async () => {
    const events = [stored('a', 3), stored('b', 2), stored('c', 1)];
    const cut: { atMs?: number; ingestTs?: number } = {};
    const got: string[] = [];
    async function* source(): AsyncGenerator<StoredEvent[]> {
      yield events;
    }
    for await (const batch of sizeBoundedBatches(source(), 1_000_000, cut)) got.push(...batch.map((e) => e.eventId));
    expect(got).toEqual(['a', 'b', 'c']);
    expect(cut.atMs).toBeUndefined();
  });
});
