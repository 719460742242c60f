// Goal: "Load older" continues the very window its first page was asked for, so a relative range ("Last hour") skips no event however late the click.
import type { EventOutput } from '@auditlake/model';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { QueryParams, SearchAnswer } from '../src/api.js';
import { firstPage, olderPage } from '../src/search-results.js';
import { windowBounds } from '../src/time-range.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 1, 10);

function event(eventId: string, timestamp: number): EventOutput {
  return { eventId, timestamp, userId: 'edge', source: 'trino', action: 'data:Select', decision: 'ALLOW', resource: '', tables: [], query: '', details: '' } as unknown as EventOutput;
}

/** A log of events one minute apart, answered newest first, `limit` a page, from/to and cursor as the API takes them. */
function fakeApi(events: EventOutput[]) {
  const asked: QueryParams[] = [];
  const search = async (params: QueryParams): Promise<SearchAnswer> => {
    asked.push(params);
    const before = params['cursor'] === undefined ? Infinity : Number(params['cursor']);
    const from = params['from'] === undefined ? -Infinity : Number(params['from']);
    const matching = events.filter((e) => e.timestamp >= from && e.timestamp < before).sort((a, b) => b.timestamp - a.timestamp);
    const page = matching.slice(0, Number(params['limit']));
    const truncated = matching.length > page.length;
    return { events: page, count: page.length, truncated, ...(truncated ? { nextCursor: String(page.at(-1)!.timestamp) } : {}) };
  };
  return { api: { search }, asked };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('olderPage', () => {
  it('asks the same from/to as the first page, with the cursor, however much later it is called', async () => {
    vi.useFakeTimers({ now: T0 });
    // 100 events in the last minutes, 20 just inside the hour: the second page holds those.
    const events = [...Array.from({ length: 100 }, (_, i) => event(`recent-${i}`, T0 - 1000 - i)), ...Array.from({ length: 20 }, (_, i) => event(`old-${i}`, T0 - HOUR + 25_000 - i))];
    const { api, asked } = fakeApi(events);
    const bounds = windowBounds({ range: '1h', from: '', to: '' }, Date.now());
    if ('error' in bounds) throw new Error(bounds.error);
    const first = await firstPage(api, { user: 'edge', from: bounds.fromMs, to: bounds.toMs, limit: 100 });
    expect(first).toMatchObject({ truncated: true, stale: false });
    expect(first.events).toHaveLength(100);

    // 35 s later the last hour starts after those 20 events; the window asked for does not.
    vi.setSystemTime(T0 + 35_000);
    const both = await olderPage(api, first);
    expect(asked[1]).toEqual({ ...asked[0], cursor: first.nextCursor });
    expect(both.events.map((e) => e.eventId)).toEqual(events.map((e) => e.eventId));
    expect(both).toMatchObject({ truncated: false, nextCursor: undefined, query: first.query });
  });

  it('keeps a tier note the older page does not repeat', async () => {
    const search = async (): Promise<SearchAnswer> => ({ events: [event('x', T0)], count: 1, truncated: false });
    const first = { query: { limit: 1 }, events: [event('y', T0 + 1)], truncated: true, nextCursor: 'c', tierNote: 'tier unreadable', stale: false };
    expect(await olderPage({ search }, first)).toMatchObject({ tierNote: 'tier unreadable', truncated: false });
  });
});
