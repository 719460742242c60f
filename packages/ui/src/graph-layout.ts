import { forceCollide, forceLink, forceManyBody, forceSimulation, forceX, forceY, type SimulationLinkDatum, type SimulationNodeDatum } from 'd3-force';
import { scaleLinear, scalePoint, scaleSqrt } from 'd3-scale';
import type { AuditStats, NamedCount } from '@auditlake/model';

export type GraphNodeKind = 'user' | 'engine' | 'table';
export const GRAPH_KINDS: readonly GraphNodeKind[] = ['user', 'engine', 'table'];

export interface GraphNode extends SimulationNodeDatum {
  id: string;
  kind: GraphNodeKind;
  name: string;
  /** Its events in the window, whether or not its links are drawn. */
  count: number;
  /** `count` is a lower bound: the node is not in its top list and the API cut the link list that sums it. */
  atLeast: boolean;
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

/**
 * Links of each kind the stats API sends at most (the model's STATS_EDGES_MAX; a test holds them
 * equal). Not imported: the model's index would bring node-only modules into the page's bundle.
 */
export const STATS_LINKS_SENT = 150;

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
 * Each drawn node's events, from everything the stats answer holds, not from the links drawn:
 * its top list's count when it is in one (exact); else the sum of its links in the API's full
 * list (every event has one user → engine pair, and one engine → table pair per table), exact
 * unless the API cut that list at STATS_LINKS_SENT. An engine absent from the user links it
 * got has at least the events of its heaviest table link.
 */
function nodeCounts(stats: GraphStats, drawn: Map<string, { kind: GraphNodeKind; name: string }>): Map<string, { count: number; atLeast: boolean }> {
  const sums = new Map<string, number>();
  const add = (id: string, count: number) => sums.set(id, (sums.get(id) ?? 0) + count);
  for (const e of stats.userEngine) {
    add(nodeId('user', e.user), e.count);
    add(nodeId('engine', e.engine), e.count);
  }
  const heaviestTable = new Map<string, number>();
  for (const e of stats.engineTable) {
    add(nodeId('table', e.table), e.count);
    const engine = nodeId('engine', e.engine);
    heaviestTable.set(engine, Math.max(heaviestTable.get(engine) ?? 0, e.count));
  }
  const top = (kind: GraphNodeKind, list: readonly NamedCount[]) => new Map(list.map((n) => [nodeId(kind, n.name), n.count]));
  const tops = new Map([...top('user', stats.topUsers), ...top('engine', stats.topEngines), ...top('table', stats.topTables)]);
  const cut = { user: stats.userEngine.length >= STATS_LINKS_SENT, engine: stats.userEngine.length >= STATS_LINKS_SENT, table: stats.engineTable.length >= STATS_LINKS_SENT };
  const counts = new Map<string, { count: number; atLeast: boolean }>();
  for (const [id, { kind }] of drawn) {
    const exact = tops.get(id);
    if (exact !== undefined) counts.set(id, { count: exact, atLeast: false });
    else counts.set(id, { count: Math.max(sums.get(id) ?? 0, kind === 'engine' ? (heaviestTable.get(id) ?? 0) : 0), atLeast: cut[kind] });
  }
  return counts;
}

/** What the graph draws from a stats answer. */
export type GraphStats = Pick<AuditStats, 'userEngine' | 'engineTable' | 'topUsers' | 'topEngines' | 'topTables'>;

/**
 * Lays out user → engine → table as three columns (users left, engines centre, tables right)
 * with d3-force: links pull related nodes level, collision keeps labels apart. The nodes are
 * those of the heaviest links; each is sized by the square root of its events (all of them in
 * the window, drawn or not), a link's width is linear in its count. Deterministic for one input.
 */
export function layoutGraph(stats: GraphStats, width: number): GraphLayout {
  const userEngine = stats.userEngine.slice(0, GRAPH_LINKS_MAX);
  const engineTable = stats.engineTable.slice(0, GRAPH_LINKS_MAX);
  const hiddenLinks = stats.userEngine.length - userEngine.length + (stats.engineTable.length - engineTable.length);
  const drawn = new Map<string, { kind: GraphNodeKind; name: string }>();
  const draw = (kind: GraphNodeKind, name: string) => drawn.set(nodeId(kind, name), { kind, name });
  for (const e of userEngine) {
    draw('user', e.user);
    draw('engine', e.engine);
  }
  for (const e of engineTable) {
    draw('engine', e.engine);
    draw('table', e.table);
  }
  const nodeCount = nodeCounts(stats, drawn);
  const counts = new Map([...drawn].map(([id, n]) => [id, { ...n, ...nodeCount.get(id)! }]));
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
