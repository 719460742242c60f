// Goal: a page collected from the store's batches is exactly what the one-event-at-a-time stream gives: newest first (time, ingest time, eventId), cut at max, reading no further than needed.
import type { StoredEvent } from '@auditlake/model';
import { newestFirst } from '@auditlake/model';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newestFirstPage, newestFirstStream } from '../src/index.js';

function ev(eventId: string, timestamp: number, ingestTs: number, seq: number): StoredEvent {
  return { eventId, userId: 'u', source: 's', action: 'a', resource: '', decision: '', tables: [], query: '', details: '', timestamp, ingestTs, seq, term: 0 };
}

/** As the store yields: event time descending, then seq descending. */
function byTimeThenSeq(events: StoredEvent[]): StoredEvent[] {
  return [...events].sort((a, b) => b.timestamp - a.timestamp || b.seq - a.seq);
}

/** `events` in batches of the given sizes (cycled), as native reads return them. */
async function* inBatches(events: StoredEvent[], sizes: number[]): AsyncGenerator<StoredEvent[]> {
  for (let at = 0, i = 0; at < events.length; i++) {
    const size = sizes[i % sizes.length] as number;
    yield events.slice(at, at + size);
    at += size;
  }
}

async function* oneByOne(events: StoredEvent[]): AsyncGenerator<StoredEvent> {
  yield* events;
}

describe('newestFirstPage', () => {
  it('reorders each run of one event time by ingest time, then eventId, and stops at max', async () => {
    const events = byTimeThenSeq([ev('a', 10, 5, 1), ev('c', 10, 5, 2), ev('b', 10, 6, 3), ev('z', 9, 9, 4)]);
    expect((await newestFirstPage(inBatches(events, [2]), 10)).map((e) => e.eventId)).toEqual(['b', 'c', 'a', 'z']);
    expect((await newestFirstPage(inBatches(events, [3]), 2)).map((e) => e.eventId)).toEqual(['b', 'c']);
    expect(await newestFirstPage(inBatches(events, [1]), 0)).toEqual([]);
  });

  it('equals sorting everything and taking the first max, and the stream, for any input and any batching', async () => {
    const event = fc.record({ timestamp: fc.integer({ min: 0, max: 4 }), ingestTs: fc.integer({ min: 0, max: 3 }) });
    await fc.assert(
      fc.asyncProperty(fc.array(event, { maxLength: 80 }), fc.integer({ min: 1, max: 20 }), fc.array(fc.integer({ min: 1, max: 30 }), { minLength: 1, maxLength: 5 }), async (raw, max, sizes) => {
        const events = byTimeThenSeq(raw.map((e, i) => ev(`id${(i * 37) % 61}-${i}`, e.timestamp, e.ingestTs, i + 1)));
        const got = (await newestFirstPage(inBatches(events, sizes), max)).map((e) => e.eventId);
        expect(got).toEqual([...events].sort(newestFirst).slice(0, max).map((e) => e.eventId));
        const streamed: string[] = [];
        for await (const e of newestFirstStream(oneByOne(events), max)) streamed.push(e.eventId);
        expect(got).toEqual(streamed);
      }),
      { numRuns: 400 },
    );
  });

  it('reads no batch after the one that completes the page, and closes the source', async () => {
    let batchesRead = 0;
    let closed = false;
    async function* source(perBatch: number) {
      batchesRead = 0;
      closed = false;
      try {
        for (let b = 0; b < 100; b++) {
          batchesRead++;
          // Runs of three events at one event time.
          yield Array.from({ length: perBatch }, (_, j) => {
            const i = b * perBatch + j;
            return ev(`e${i}`, 1000 - Math.floor(i / 3), 1, i);
          });
        }
      } finally {
        closed = true;
      }
    }
    expect(await newestFirstPage(source(5), 4)).toHaveLength(4);
    // The page's 4th event is in the second run (events 3-5), whole by the second batch's first event.
    expect(batchesRead).toBe(2);
    expect(closed).toBe(true);
    // A page of exactly one run ends at the first event of the next: the 4th of one-event batches.
    expect((await newestFirstPage(source(1), 3)).map((e) => e.eventId)).toEqual(['e2', 'e1', 'e0']);
    expect(batchesRead).toBe(4);
    expect(closed).toBe(true);
  });

  it('keeps the page exact when one event time holds far more than the page (bounded memory)', async () => {
    // 1,000 events at one time, in batches: only the newest max by ingest time and eventId rank.
    const events = byTimeThenSeq(Array.from({ length: 1000 }, (_, i) => ev(`id${String((i * 7919) % 1000).padStart(4, '0')}`, 50, i % 13, i + 1)));
    const got = await newestFirstPage(inBatches(events, [64]), 10);
    expect(got.map((e) => e.eventId)).toEqual([...events].sort(newestFirst).slice(0, 10).map((e) => e.eventId));
  });

  it('refuses a source that is not by event time descending, and a bad max', async () => {
    await expect(newestFirstPage(inBatches([], [1]), -1)).rejects.toThrow(TypeError);
    await expect(newestFirstPage(inBatches([ev('a', 1, 1, 1), ev('b', 2, 1, 2)], [1]), 5)).rejects.toThrow(/not by event time descending/);
    await expect(newestFirstPage(inBatches([ev('a', 1, 1, 1), ev('b', 2, 1, 2)], [2]), 5)).rejects.toThrow(/not by event time descending/);
  });
});
