// Goal: the store's by-time stream comes out in the API's newest-first order (time, ingest time, eventId), cut at max, holding one bounded run.
import type { StoredEvent } from '@auditlake/model';
import { newestFirst } from '@auditlake/model';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newestFirstStream } from '../src/index.js';

function ev(eventId: string, timestamp: number, ingestTs: number, seq: number): StoredEvent {
  return { eventId, userId: 'u', source: 's', action: 'a', resource: '', decision: '', tables: [], query: '', details: '', timestamp, ingestTs, seq, term: 0 };
}

/** As the store yields: event time descending, then seq descending. */
async function* byTimeThenSeq(events: StoredEvent[]) {
  for (const e of [...events].sort((a, b) => b.timestamp - a.timestamp || b.seq - a.seq)) yield e;
}

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const e of source) out.push(e);
  return out;
}

describe('newestFirstStream', () => {
  it('reorders each run of one event time by ingest time, then eventId, and stops at max', async () => {
    const events = [ev('a', 10, 5, 1), ev('c', 10, 5, 2), ev('b', 10, 6, 3), ev('z', 9, 9, 4)];
    expect((await collect(newestFirstStream(byTimeThenSeq(events), 10))).map((e) => e.eventId)).toEqual(['b', 'c', 'a', 'z']);
    expect((await collect(newestFirstStream(byTimeThenSeq(events), 2))).map((e) => e.eventId)).toEqual(['b', 'c']);
    expect(await collect(newestFirstStream(byTimeThenSeq(events), 0))).toEqual([]);
  });

  it('equals sorting everything and taking the first max, for any input', async () => {
    const event = fc.record({ timestamp: fc.integer({ min: 0, max: 4 }), ingestTs: fc.integer({ min: 0, max: 3 }) });
    await fc.assert(
      fc.asyncProperty(fc.array(event, { maxLength: 60 }), fc.integer({ min: 1, max: 20 }), async (raw, max) => {
        const events = raw.map((e, i) => ev(`id${(i * 37) % 61}-${i}`, e.timestamp, e.ingestTs, i + 1));
        const got = await collect(newestFirstStream(byTimeThenSeq(events), max));
        expect(got.map((e) => e.eventId)).toEqual([...events].sort(newestFirst).slice(0, max).map((e) => e.eventId));
      }),
      { numRuns: 300 },
    );
  });

  it('reads no further than the run that completes the page, and closes the source', async () => {
    let read = 0;
    let closed = false;
    async function* source() {
      try {
        for (let i = 0; i < 1000; i++) {
          read++;
          yield ev(`e${i}`, 1000 - Math.floor(i / 3), 1, i);
        }
      } finally {
        closed = true;
      }
    }
    expect(await collect(newestFirstStream(source(), 4))).toHaveLength(4);
    // Runs of three: the page's 4th event is in the second run, read whole, plus the first of the third.
    expect(read).toBe(7);
    expect(closed).toBe(true);
  });

  it('refuses a source that is not by event time descending', async () => {
    await expect(collect(newestFirstStream(byTimeThenSeq([]), -1))).rejects.toThrow(TypeError);
    async function* rising() {
      yield ev('a', 1, 1, 1);
      yield ev('b', 2, 1, 2);
    }
    await expect(collect(newestFirstStream(rising(), 5))).rejects.toThrow(/not by event time descending/);
  });
});
