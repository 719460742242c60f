// Goal: the graph puts users, engines and tables in their columns, sizes them by events, and is the same picture every time.
import { describe, expect, it } from 'vitest';
import { engineColor, KNOWN_ENGINE_COLORS } from '../src/engine-colors.js';
import { GRAPH_LINKS_MAX, layoutGraph } from '../src/graph-layout.js';

const stats = {
  userEngine: [{ user: 'ana', engine: 'trino', count: 5 }, { user: 'bo', engine: 'spark', count: 1 }],
  engineTable: [{ engine: 'trino', table: 's.orders', count: 4 }, { engine: 'spark', table: 's.orders', count: 1 }],
};

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
    const many = { userEngine: Array.from({ length: GRAPH_LINKS_MAX + 5 }, (_, i) => ({ user: `u${i}`, engine: 'trino', count: 1 })), engineTable: [] };
    const layout = layoutGraph(many, 420);
    expect(layout.links).toHaveLength(GRAPH_LINKS_MAX);
    expect(layout.hiddenLinks).toBe(5);
  });

  it('colours known engines fixed and every other one the same each time', () => {
    expect(engineColor('Trino')).toBe(KNOWN_ENGINE_COLORS['trino']);
    expect(engineColor('auditlake')).toBe(KNOWN_ENGINE_COLORS['auditlake']);
    expect(engineColor('hive')).toBe(engineColor('HIVE'));
    expect(Object.values(KNOWN_ENGINE_COLORS)).not.toContain(engineColor('hive'));
  });
});
