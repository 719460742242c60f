// Goal: the Overview's figures (counters, top lists, graph edges, ALLOW/DENY histogram) are exact sums over the window's events.
import { describe, expect, it } from 'vitest';
import { histogramBucketMs, STATS_BUCKETS_MAX, summarizeEvents } from '../src/audit-stats.js';
import type { AuditEvent } from '../src/event.js';

const T0 = Date.UTC(2026, 10, 1, 10);
const MIN = 60_000;

function ev(userId: string, source: string, tables: string[], action: string, decision: AuditEvent['decision'], timestamp: number): AuditEvent {
  return { eventId: `${userId}${timestamp}`, userId, source, action, resource: '', decision, tables, query: '', details: '', timestamp };
}

describe('summarizeEvents', () => {
  const events = [
    ev('ana', 'trino', ['s.orders'], 'data:Select', 'ALLOW', T0),
    ev('ana', 'Trino', ['s.orders', 's.items'], 'data:Select', 'ALLOW', T0 + 5 * MIN),
    ev('bo', 'spark', ['s.orders'], 'data:Insert', 'DENY', T0 + 20 * MIN),
    ev('bo', 'trino', [], 'auth:Authenticate', '', T0 + 59 * MIN),
  ];

  it('counts events, distinct users, engines (case-insensitive) and tables, reads and writes, decisions', () => {
    const stats = summarizeEvents(events, { fromMs: T0, toMs: T0 + 60 * MIN - 1, nowMs: T0 + 2 * 60 * MIN, limit: 400, truncated: false });
    expect(stats.counts).toEqual({ events: 4, users: 2, engines: 2, tables: 2, reads: 2, writes: 2, allow: 2, deny: 1 });
    expect(stats.topUsers).toEqual([{ name: 'ana', count: 2 }, { name: 'bo', count: 2 }]);
    expect(stats.topEngines).toEqual([{ name: 'trino', count: 3 }, { name: 'spark', count: 1 }]);
    expect(stats.topTables).toEqual([{ name: 's.orders', count: 3 }, { name: 's.items', count: 1 }]);
    expect(stats.userEngine).toEqual([
      { user: 'ana', engine: 'trino', count: 2 },
      { user: 'bo', engine: 'spark', count: 1 },
      { user: 'bo', engine: 'trino', count: 1 },
    ]);
    expect(stats.engineTable).toEqual([
      { engine: 'trino', table: 's.orders', count: 2 },
      { engine: 'spark', table: 's.orders', count: 1 },
      { engine: 'trino', table: 's.items', count: 1 },
    ]);
    expect(stats).toMatchObject({ limit: 400, truncated: false });
  });

  it('counts the own records of auditlake (refusals, settings changes, checkpoints) as neither reads nor writes', () => {
    const own = [
      ev('anonymous', 'auditlake', [], 'auth:Authenticate', 'DENY', T0 + MIN),
      ev('admin', 'auditlake', [], 'audit:UpdateSettings', 'ALLOW', T0 + 2 * MIN),
      ev('auditlake', 'auditlake', [], 'integrity:Checkpoint', '', T0 + 3 * MIN),
    ];
    const stats = summarizeEvents([...events, ...own], { fromMs: T0, toMs: T0 + 60 * MIN - 1, nowMs: T0, limit: 400, truncated: false });
    expect(stats.counts).toMatchObject({ events: 7, reads: 2, writes: 2, allow: 3, deny: 2 });
  });

  it('draws the window in recognisable buckets with ALLOW, DENY and no-decision stacked', () => {
    const stats = summarizeEvents(events, { fromMs: T0, toMs: T0 + 60 * MIN - 1, nowMs: T0, limit: 400, truncated: false });
    // An hour: a bucket a minute.
    expect(stats.histogram.bucketMs).toBe(MIN);
    expect(stats.histogram.buckets).toHaveLength(60);
    expect(stats.histogram.buckets[0]).toEqual({ startMs: T0, allow: 1, deny: 0, none: 0 });
    expect(stats.histogram.buckets[5]).toEqual({ startMs: T0 + 5 * MIN, allow: 1, deny: 0, none: 0 });
    expect(stats.histogram.buckets[20]).toEqual({ startMs: T0 + 20 * MIN, allow: 0, deny: 1, none: 0 });
    expect(stats.histogram.buckets[59]).toEqual({ startMs: T0 + 59 * MIN, allow: 0, deny: 0, none: 1 });
    // A day: 30-minute buckets.
    expect(summarizeEvents(events, { fromMs: T0, toMs: T0 + 24 * 60 * MIN - 1, nowMs: T0, limit: 400, truncated: false }).histogram.bucketMs).toBe(30 * MIN);
    const total = stats.histogram.buckets.reduce((n, b) => n + b.allow + b.deny + b.none, 0);
    expect(total).toBe(4);
  });

  it('without bounds spans the events; with only from, runs to now', () => {
    expect(summarizeEvents(events, { nowMs: T0 + 1000 * MIN, limit: 4, truncated: true }).histogram).toMatchObject({ fromMs: T0, toMs: T0 + 59 * MIN });
    expect(summarizeEvents(events, { fromMs: T0, nowMs: T0 + 120 * MIN, limit: 4, truncated: true }).histogram).toMatchObject({ fromMs: T0, toMs: T0 + 120 * MIN });
    const empty = summarizeEvents([], { nowMs: T0, limit: 400, truncated: false });
    expect(empty.counts.events).toBe(0);
    expect(empty.histogram.buckets.length).toBeGreaterThan(0);
  });

  it('never draws more than the bucket maximum, however wide the window', () => {
    for (const span of [0, 1, MIN, 3_600_000, 86_400_000 * 30, 86_400_000 * 365 * 80, Number.MAX_SAFE_INTEGER - 1]) {
      const bucketMs = histogramBucketMs(0, span);
      expect(Math.floor(span / bucketMs) + 1).toBeLessThanOrEqual(STATS_BUCKETS_MAX);
    }
  });
});
