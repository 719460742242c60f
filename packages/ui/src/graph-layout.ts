import { forceCollide, forceLink, forceManyBody, forceSimulation, forceX, forceY, type SimulationLinkDatum, type SimulationNodeDatum } from 'd3-force';
import { scaleLinear, scalePoint, scaleSqrt } from 'd3-scale';
import type { AuditStats } from '@auditlake/model';

export type GraphNodeKind = 'user' | 'engine' | 'table';
export const GRAPH_KINDS: readonly GraphNodeKind[] = ['user', 'engine', 'table'];

export interface GraphNode extends SimulationNodeDatum {
  id: string;
  kind: GraphNodeKind;
  name: string;
  count: number;
  radius: number;
  x: number;
  y: number;
}

export interface GraphLink {
  source: GraphNode;
  target: GraphNode;
  count: number;
  width: number;
}

export interface GraphLayout {
  width: number;
  height: number;
  nodes: GraphNode[];
  links: GraphLink[];
  /** Links of each kind not drawn (only the heaviest are). */
  hiddenLinks: number;
}

/** Links of each kind drawn at most: beyond this a graph is a hairball, not an answer. */
export const GRAPH_LINKS_MAX = 60;

export function nodeId(kind: GraphNodeKind, name: string): string {
  return `${kind}:${name}`;
}

/** A small seeded generator, so the same window always gets the same picture. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/**
 * Lays out user → engine → table as three columns (users left, engines centre, tables right)
 * with d3-force: links pull related nodes level, collision keeps labels apart. Node size is the
 * square root of its events, link width linear in its count. Deterministic for one input.
 */
export function layoutGraph(stats: Pick<AuditStats, 'userEngine' | 'engineTable'>, width: number): GraphLayout {
  const userEngine = stats.userEngine.slice(0, GRAPH_LINKS_MAX);
  const engineTable = stats.engineTable.slice(0, GRAPH_LINKS_MAX);
  const hiddenLinks = stats.userEngine.length - userEngine.length + (stats.engineTable.length - engineTable.length);
  const counts = new Map<string, { kind: GraphNodeKind; name: string; count: number }>();
  const add = (kind: GraphNodeKind, name: string, count: number) => {
    const id = nodeId(kind, name);
    const node = counts.get(id) ?? { kind, name, count: 0 };
    node.count += count;
    counts.set(id, node);
  };
  for (const e of userEngine) {
    add('user', e.user, e.count);
    add('engine', e.engine, e.count);
  }
  // An engine's size is its events (from user edges); tables count their own.
  for (const e of engineTable) {
    add('table', e.table, e.count);
    if (!counts.has(nodeId('engine', e.engine))) add('engine', e.engine, e.count);
  }
  const maxCount = Math.max(1, ...[...counts.values()].map((n) => n.count));
  const radius = scaleSqrt().domain([0, maxCount]).range([4, 16]);
  const perColumn = Math.max(1, ...GRAPH_KINDS.map((k) => [...counts.values()].filter((n) => n.kind === k).length));
  // Room for the largest node and a label line between neighbours.
  const rowMin = 2 * radius(maxCount) + 10;
  const top = 34;
  const height = Math.max(220, top + perColumn * rowMin + 8);
  const column = scalePoint<GraphNodeKind>().domain(GRAPH_KINDS).range([0, width]).padding(0.6);
  const nodes: GraphNode[] = [...counts.entries()].map(([id, n], i) => ({
    id,
    ...n,
    radius: radius(n.count),
    x: column(n.kind) ?? width / 2,
    y: top + ((i * 37) % (height - top)),
  }));
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const maxLink = Math.max(1, ...userEngine.map((e) => e.count), ...engineTable.map((e) => e.count));
  const linkWidth = scaleLinear().domain([1, maxLink]).range([1, 6]).clamp(true);
  const links: GraphLink[] = [
    ...userEngine.map((e) => ({ source: byId.get(nodeId('user', e.user))!, target: byId.get(nodeId('engine', e.engine))!, count: e.count, width: linkWidth(e.count) })),
    ...engineTable.map((e) => ({ source: byId.get(nodeId('engine', e.engine))!, target: byId.get(nodeId('table', e.table))!, count: e.count, width: linkWidth(e.count) })),
  ];
  // The forces order each column so that linked nodes sit level (few crossings); the
  // columns then spread their nodes evenly in that order, so nothing overlaps.
  const simulation = forceSimulation<GraphNode>(nodes)
    .randomSource(seeded(nodes.length * 7919 + links.length))
    .force('link', forceLink<GraphNode, SimulationLinkDatum<GraphNode>>(links.map((l) => ({ source: l.source, target: l.target }))).strength(0.3))
    .force('column', forceX<GraphNode>((n) => column(n.kind) ?? width / 2).strength(1))
    .force('middle', forceY<GraphNode>(height / 2).strength(0.02))
    .force('charge', forceManyBody<GraphNode>().strength(-20))
    .force('collide', forceCollide<GraphNode>((n) => n.radius + 4))
    .stop();
  simulation.tick(200);
  for (const kind of GRAPH_KINDS) {
    const inColumn = nodes.filter((n) => n.kind === kind).sort((a, b) => a.y - b.y || (a.name < b.name ? -1 : 1));
    const step = (height - top - 8) / Math.max(1, inColumn.length);
    inColumn.forEach((n, i) => {
      n.x = column(kind) ?? width / 2;
      n.y = top + step * (i + 0.5);
    });
  }
  return { width, height, nodes, links, hiddenLinks };
}
