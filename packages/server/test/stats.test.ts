// Goal: GET /admin/audit/stats summarises exactly the window a search with the same parameters returns.
import { describe, expect, it } from 'vitest';
import { event, startTestNode } from './test-node.js';

const T0 = Date.UTC(2026, 10, 1, 10);
const MIN = 60_000;

describe('GET /admin/audit/stats', () => {
  it('counts, ranks, links and buckets the window, with the same filters and limit as a search', async () => {
    const t = await startTestNode();
    await t.ingest([
      event({ eventId: 's1', userId: 'ana', source: 'trino', tables: ['s.orders'], decision: 'ALLOW', ts: T0 }),
      event({ eventId: 's2', userId: 'ana', source: 'trino', tables: ['s.orders', 's.items'], decision: 'ALLOW', ts: T0 + MIN }),
      event({ eventId: 's3', userId: 'bo', source: 'spark', action: 'data:Insert', tables: ['s.orders'], decision: 'DENY', ts: T0 + 2 * MIN }),
    ]);
    const window = `from=${T0}&to=${T0 + 60 * MIN - 1}`;
    const res = await t.request(`/admin/audit/stats?${window}`);
    expect(res.status).toBe(200);
    const stats = (await res.json()) as Record<string, unknown> & { histogram: { bucketMs: number; buckets: Array<{ allow: number; deny: number }> } };
    expect(stats).toMatchObject({
      counts: { events: 3, users: 2, engines: 2, tables: 2, reads: 2, writes: 1, allow: 2, deny: 1 },
      truncated: false,
      limit: 200,
      topUsers: [{ name: 'ana', count: 2 }, { name: 'bo', count: 1 }],
      userEngine: [{ user: 'ana', engine: 'trino', count: 2 }, { user: 'bo', engine: 'spark', count: 1 }],
      engineTable: [{ engine: 'trino', table: 's.orders', count: 2 }, { engine: 'spark', table: 's.orders', count: 1 }, { engine: 'trino', table: 's.items', count: 1 }],
    });
    expect(stats.histogram.bucketMs).toBe(MIN);
    expect(stats.histogram.buckets.slice(0, 3).map((b) => [b.allow, b.deny])).toEqual([[1, 0], [1, 0], [0, 1]]);

    // The same filters as a search: only ana's, and the window is the newest `limit`.
    const ana = (await (await t.request(`/admin/audit/stats?${window}&user=ana`)).json()) as { counts: { events: number } };
    expect(ana.counts.events).toBe(2);
    const newest = (await (await t.request(`/admin/audit/stats?limit=1`)).json()) as { counts: { events: number; deny: number }; truncated: boolean };
    expect(newest).toMatchObject({ counts: { events: 1, deny: 1 }, truncated: true });
    const denied = (await (await t.request(`/admin/audit/stats?decision=DENY`)).json()) as { counts: { events: number } };
    expect(denied.counts.events).toBe(1);
  });

  it('refuses what a search refuses, and needs the admin role', async () => {
    const t = await startTestNode();
    const bad = await t.request('/admin/audit/stats?limit=9000');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/^parameter limit must be at most 5000/);
    expect((await t.request('/admin/audit/stats', { token: null })).status).toBe(401);
    expect((await t.request('/admin/audit/stats', { token: 'ingest-secret-for-tests' })).status).toBe(403);
  });
});
