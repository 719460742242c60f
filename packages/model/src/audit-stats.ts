import { READ_ACTION, SELF_SOURCE, type AuditEvent } from './event.js';

/** Entries in each top list (users, engines, tables). */
export const STATS_TOP_MAX = 10;
/** Edges of each kind in the graph, the heaviest first: more would not be readable anyway. */
export const STATS_EDGES_MAX = 150;
/** Histogram buckets at most; the bucket width is the smallest step that fits the window. */
export const STATS_BUCKETS_MAX = 60;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Bucket widths a reader recognises at a glance, smallest first. */
const BUCKET_STEPS_MS = [MINUTE, 5 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 7 * DAY, 30 * DAY, 365 * DAY];

export interface NamedCount {
  name: string;
  count: number;
}

export interface HistogramBucket {
  /** Start of the bucket, epoch ms (a multiple of `bucketMs`). */
  startMs: number;
  allow: number;
  deny: number;
  /** Events without a decision. */
  none: number;
}

/** `GET /admin/audit/stats`: what the Overview draws, over the same window a search would return. */
export interface AuditStats {
  counts: {
    events: number;
    users: number;
    engines: number;
    tables: number;
    /** Engines' reads (`data:Select`). */
    reads: number;
    /** Engines' other events. auditlake's own records (refusals, settings changes, checkpoints, maintenance runs, erasures) are neither reads nor writes. */
    writes: number;
    allow: number;
    deny: number;
  };
  /** More events match than the window's `limit`: the figures cover the newest `limit`. */
  truncated: boolean;
  limit: number;
  topUsers: NamedCount[];
  topEngines: NamedCount[];
  topTables: NamedCount[];
  /** user → engine, the heaviest first (at most STATS_EDGES_MAX). */
  userEngine: Array<{ user: string; engine: string; count: number }>;
  /** engine → table, the heaviest first (at most STATS_EDGES_MAX). */
  engineTable: Array<{ engine: string; table: string; count: number }>;
  histogram: { bucketMs: number; fromMs: number; toMs: number; buckets: HistogramBucket[] };
  /** Named when a tier could not be read (as in a search answer). */
  tierNote?: string;
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function heaviest<K>(map: Map<string, number>, max: number, split: (key: string, count: number) => K): K[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, max)
    .map(([key, count]) => split(key, count));
}

/** The smallest recognisable width that covers [fromMs, toMs] in at most STATS_BUCKETS_MAX buckets. */
export function histogramBucketMs(fromMs: number, toMs: number): number {
  const fits = (step: number) => Math.floor(toMs / step) - Math.floor(fromMs / step) < STATS_BUCKETS_MAX;
  // Beyond the largest step (events centuries apart), any width that fits.
  return BUCKET_STEPS_MS.find(fits) ?? Math.ceil((Math.max(0, toMs - fromMs) + 1) / (STATS_BUCKETS_MAX - 1));
}

/** Engine names as the filters compare them (case-insensitively). */
function engineOf(event: AuditEvent): string {
  return event.source.toLowerCase();
}

export interface SummaryWindow {
  fromMs?: number;
  toMs?: number;
  /** The node's clock: a window open at its end ("last hour") runs up to now. */
  nowMs: number;
  limit: number;
  truncated: boolean;
}

/**
 * Aggregates a window's events (the page a search with the same filters returns) into the
 * Overview's counters, top lists, graph edges and ALLOW/DENY histogram. Engines are lower-cased
 * so `Trino` and `trino` are one node, as the engine filter treats them.
 */
export function summarizeEvents(events: readonly AuditEvent[], window: SummaryWindow): AuditStats {
  const users = new Map<string, number>();
  const engines = new Map<string, number>();
  const tables = new Map<string, number>();
  const userEngine = new Map<string, number>();
  const engineTable = new Map<string, number>();
  let reads = 0;
  let writes = 0;
  let allow = 0;
  let deny = 0;
  let oldestMs = Number.POSITIVE_INFINITY;
  let newestMs = Number.NEGATIVE_INFINITY;
  for (const event of events) {
    const engine = engineOf(event);
    bump(users, event.userId);
    bump(engines, engine);
    // JSON-encoded pairs: no separator can collide with a character inside a name.
    bump(userEngine, JSON.stringify([event.userId, engine]));
    for (const table of new Set(event.tables)) {
      bump(tables, table);
      bump(engineTable, JSON.stringify([engine, table]));
    }
    // auditlake's own records (what the node did or refused) are no engine's reads or writes.
    if (event.source !== SELF_SOURCE) {
      if (event.action === READ_ACTION) reads++;
      else writes++;
    }
    if (event.decision === 'ALLOW') allow++;
    else if (event.decision === 'DENY') deny++;
    oldestMs = Math.min(oldestMs, event.timestamp);
    newestMs = Math.max(newestMs, event.timestamp);
  }
  const toMs = window.toMs ?? (window.fromMs !== undefined ? Math.max(window.nowMs, Number.isFinite(newestMs) ? newestMs : 0) : Number.isFinite(newestMs) ? newestMs : window.nowMs);
  const fromMs = window.fromMs ?? (Number.isFinite(oldestMs) ? Math.min(oldestMs, toMs) : toMs - HOUR);
  const bucketMs = histogramBucketMs(fromMs, toMs);
  const firstBucket = Math.floor(fromMs / bucketMs);
  const buckets: HistogramBucket[] = [];
  for (let b = firstBucket; b <= Math.floor(toMs / bucketMs); b++) buckets.push({ startMs: b * bucketMs, allow: 0, deny: 0, none: 0 });
  for (const event of events) {
    const bucket = buckets[Math.floor(event.timestamp / bucketMs) - firstBucket];
    // An event outside the drawn window (only possible without from/to bounds) is not drawn.
    if (bucket === undefined) continue;
    if (event.decision === 'ALLOW') bucket.allow++;
    else if (event.decision === 'DENY') bucket.deny++;
    else bucket.none++;
  }
  const pair = (key: string) => JSON.parse(key) as [string, string];
  return {
    counts: { events: events.length, users: users.size, engines: engines.size, tables: tables.size, reads, writes, allow, deny },
    truncated: window.truncated,
    limit: window.limit,
    topUsers: heaviest(users, STATS_TOP_MAX, (name, count) => ({ name, count })),
    topEngines: heaviest(engines, STATS_TOP_MAX, (name, count) => ({ name, count })),
    topTables: heaviest(tables, STATS_TOP_MAX, (name, count) => ({ name, count })),
    userEngine: heaviest(userEngine, STATS_EDGES_MAX, (key, count) => {
      const [user, engine] = pair(key);
      return { user, engine, count };
    }),
    engineTable: heaviest(engineTable, STATS_EDGES_MAX, (key, count) => {
      const [engine, table] = pair(key);
      return { engine, table, count };
    }),
    histogram: { bucketMs, fromMs, toMs, buckets },
  };
}
