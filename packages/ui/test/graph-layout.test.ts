// Goal: the graph puts users, engines and tables in their columns, sizes them by events, and is the same picture every time.
import { STATS_EDGES_MAX } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { ENGINE_PALETTE, engineColor, KNOWN_ENGINE_COLORS } from '../src/engine-colors.js';
import { GRAPH_LINKS_MAX, layoutGraph, STATS_LINKS_SENT, type GraphStats } from '../src/graph-layout.js';

const stats: GraphStats = {
  userEngine: [{ user: 'ana', engine: 'trino', count: 5 }, { user: 'bo', engine: 'spark', count: 1 }],
  engineTable: [{ engine: 'trino', table: 's.orders', count: 4 }, { engine: 'spark', table: 's.orders', count: 1 }],
  topUsers: [{ name: 'ana', count: 5 }, { name: 'bo', count: 1 }],
  topEngines: [{ name: 'trino', count: 5 }, { name: 'spark', count: 1 }],
  topTables: [{ name: 's.orders', count: 5 }],
};
const NO_TOPS = { topUsers: [], topEngines: [], topTables: [] };

describe('layoutGraph', () => {
  it('lays users left, engines centre, tables right, sized by events, inside the box', () => {
    const layout = layoutGraph(stats, 600);
    const x = (id: string) => layout.nodes.find((n) => n.id === id)!.x;
    expect(x('user:ana')).toBeLessThan(x('engine:trino'));
    expect(x('engine:trino')).toBeLessThan(x('table:s.orders'));
    expect(layout.nodes.find((n) => n.id === 'user:ana')!.radius).toBeGreaterThan(layout.nodes.find((n) => n.id === 'user:bo')!.radius);
    for (const n of layout.nodes) {
      expect(n.y - n.radius).toBeGreaterThanOrEqual(0);
      expect(n.y + n.radius).toBeLessThanOrEqual(layout.height);
    }
    expect(layout.links).toHaveLength(4);
    expect(layoutGraph(stats, 600).nodes.map((n) => [n.id, n.x, n.y])).toEqual(layout.nodes.map((n) => [n.id, n.x, n.y]));
  });

  it('draws only the heaviest links and says how many it left out', () => {
    const many = { ...NO_TOPS, userEngine: Array.from({ length: GRAPH_LINKS_MAX + 5 }, (_, i) => ({ user: `u${i}`, engine: 'trino', count: 1 })), engineTable: [] };
    const layout = layoutGraph(many, 420);
    expect(layout.links).toHaveLength(GRAPH_LINKS_MAX);
    expect(layout.hiddenLinks).toBe(5);
  });

  it('counts the events of each node from all the answer holds, not from the links drawn', () => {
    // trino's heaviest links are drawn; its 5 lightest, and ana's second engine, are not.
    const userEngine = [
      ...Array.from({ length: GRAPH_LINKS_MAX }, (_, i) => ({ user: i === 0 ? 'ana' : `u${i}`, engine: 'trino', count: 100 - i })),
      ...Array.from({ length: 5 }, (_, i) => ({ user: `v${i}`, engine: 'trino', count: 2 })),
      { user: 'ana', engine: 'flink', count: 1 },
    ];
    // spark has no user link at all and two table links: it ran 7 events.
    const engineTable = [
      { engine: 'spark', table: 's.orders', count: 4 },
      { engine: 'spark', table: 's.items', count: 3 },
    ];
    const layout = layoutGraph({ userEngine, engineTable, topUsers: [{ name: 'ana', count: 101 }], topEngines: [{ name: 'spark', count: 7 }], topTables: [] }, 600);
    const node = (id: string) => layout.nodes.find((n) => n.id === id);
    expect(node('user:ana')).toMatchObject({ count: 101, atLeast: false });
    expect(node('engine:spark')).toMatchObject({ count: 7, atLeast: false });
    // Not in a top list: the sum of all its links the API sent, drawn or not.
    const trinoEvents = userEngine.filter((e) => e.engine === 'trino').reduce((n, e) => n + e.count, 0);
    expect(node('engine:trino')).toMatchObject({ count: trinoEvents, atLeast: false });
    expect(node('table:s.items')).toMatchObject({ count: 3, atLeast: false });
    expect(node('engine:flink')).toBeUndefined();
  });

  it('says a count is a lower bound when the API cut the links that sum it', () => {
    const full = Array.from({ length: STATS_LINKS_SENT }, (_, i) => ({ user: `u${i}`, engine: 'trino', count: 1 }));
    const layout = layoutGraph({ ...NO_TOPS, topEngines: [{ name: 'trino', count: 400 }], userEngine: full, engineTable: [{ engine: 'trino', table: 't', count: 3 }] }, 600);
    expect(layout.nodes.find((n) => n.id === 'user:u0')).toMatchObject({ count: 1, atLeast: true });
    expect(layout.nodes.find((n) => n.id === 'engine:trino')).toMatchObject({ count: 400, atLeast: false });
    expect(layout.nodes.find((n) => n.id === 'table:t')).toMatchObject({ count: 3, atLeast: false });
    // An engine whose user links were all cut off, in no top list: at least its heaviest table link.
    const spark = layoutGraph({ ...NO_TOPS, userEngine: full, engineTable: [{ engine: 'spark', table: 's.orders', count: 4 }, { engine: 'spark', table: 's.items', count: 3 }] }, 600);
    expect(spark.nodes.find((n) => n.id === 'engine:spark')).toMatchObject({ count: 4, atLeast: true });
    expect(STATS_LINKS_SENT).toBe(STATS_EDGES_MAX);
  });

  it('colours known engines fixed and every other one the same each time', () => {
    expect(engineColor('Trino')).toBe(KNOWN_ENGINE_COLORS.get('trino'));
    expect(engineColor('auditlake')).toBe(KNOWN_ENGINE_COLORS.get('auditlake'));
    expect(engineColor('hive')).toBe(engineColor('HIVE'));
    expect([...KNOWN_ENGINE_COLORS.values()]).not.toContain(engineColor('hive'));
  });

  it('gives engines named like the properties of Object a palette colour too', () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) expect(ENGINE_PALETTE).toContain(engineColor(name));
  });
});
