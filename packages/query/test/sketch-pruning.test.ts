// Goal: pruning row groups by their footer sketch never changes an answer: for random events, filters (user, engine, table, decision, action kind, q of any length, case and script) and windows, the merged search returns exactly what a full scan returns — tiered only, local plus tiered, and over the files rewritten as compaction does — while it skips groups, and a q that matches nothing reads no data page once footers are cached.
import { bytesSource, countingSource, encodeAuditParquet, ParquetFooterCache, type CountingSource } from '@auditlake/format';
import { compileFilter, inTimeRange, newestFirst, seededRandom, type SearchFilter, type StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import type { TierFile, TierSource } from '@auditlake/lake';
import { mergedSearch, type MergedEvent } from '../src/index.js';

const T0 = Date.UTC(2026, 5, 1);
const DAY = 86_400_000;

/** QUERY_TEST_SEED replays a failure; else a fresh seed, named in every failure message. */
function testSeed(): number {
  const fromEnv = process.env['QUERY_TEST_SEED'];
  return fromEnv === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(fromEnv);
}


// Case folding's corners (İ, the Kelvin sign, Σ, ß), CJK, a surrogate pair, plain words.
const PIECES = ['Select', 'FROM', 'hive', 'Sales', 'orders', 'İstanbul', '\u212Aelvin', 'ΟΔΟΣ', 'straße', '監査ログ', '😀🔒', 'WHERE', 'dt', "'x'", 'Zz9', '_'];
const USERS = ['alice', 'Bob', 'carol@example.com', 'svc-etl', 'İlkay', '監査', 'rare-user'];
const ENGINES = ['trino', 'Spark', 'FLINK'];
const ACTIONS = ['data:Select', 'data:Write', 'ddl:Create'];
const TABLES = ['hive.sales.orders', 'ice.ops.監査', 'Hive.Sales.Secret', 'x', 'db.ΟΔΟΣ.t', 'rare.table'];

function pick<T>(random: () => number, list: readonly T[]): T {
  return list[Math.floor(random() * list.length)] as T;
}

function phrase(random: () => number, words: number): string {
  return Array.from({ length: words }, () => pick(random, PIECES)).join(random() < 0.5 ? ' ' : '');
}

/** Events over `days` days; rare users and tables only in a few, so groups without them exist. */
function randomEvents(random: () => number, count: number, days: number): StoredEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const rare = random() < 0.02;
    return {
      eventId: `e${i}`,
      userId: rare ? 'rare-user' : pick(random, USERS.slice(0, -1)),
      source: pick(random, ENGINES),
      action: pick(random, ACTIONS),
      resource: random() < 0.3 ? '' : phrase(random, 2),
      decision: random() < 0.1 ? 'DENY' : pick(random, ['ALLOW', ''] as const),
      tables: rare ? ['rare.table'] : Array.from({ length: Math.floor(random() * 3) }, () => pick(random, TABLES.slice(0, -1))),
      query: phrase(random, 1 + Math.floor(random() * 5)),
      details: random() < 0.5 ? '' : phrase(random, 2),
      // Whole seconds, so equal times (ties broken by ingest time, then id) happen.
      timestamp: T0 + Math.floor(random() * days * 86_400) * 1000,
      ingestTs: T0 + days * DAY + Math.floor(random() * 1000),
      seq: i + 1,
      term: 1,
    };
  });
}

function randomFilter(random: () => number, events: readonly StoredEvent[], days: number): SearchFilter {
  const source = pick(random, events);
  const filter: SearchFilter = { action: 'all', limit: 1 + Math.floor(random() * 40) };
  for (let n = 1 + Math.floor(random() * 2); n > 0; n--) {
    switch (Math.floor(random() * 6)) {
      case 0:
        filter.user = random() < 0.3 ? 'rare-user' : random() < 0.9 ? source.userId : 'nobody';
        break;
      case 1:
        filter.engine = pick(random, ENGINES).toLowerCase();
        break;
      case 2: {
        const table = random() < 0.3 ? 'rare.table' : (source.tables[0] ?? pick(random, TABLES));
        const from = Math.floor(random() * table.length);
        filter.table = random() < 0.9 ? table.slice(from, from + 1 + Math.floor(random() * 8)) : 'no.such.table';
        break;
      }
      case 3:
        filter.decision = pick(random, ['ALLOW', 'DENY', ''] as const);
        break;
      case 4:
        filter.action = pick(random, ['read', 'write'] as const);
        break;
      default: {
        const field = pick(random, [source.query, source.details, source.resource, source.userId, ...source.tables]);
        const start = Math.floor(random() * field.length);
        // 1..6 code units (shorter than a trigram included), lower-cased as the parser does.
        const q = random() < 0.8 ? field.slice(start, start + 1 + Math.floor(random() * 6)) : `${phrase(random, 1)}-nowhere`;
        filter.q = q.toLowerCase();
      }
    }
  }
  if (random() < 0.5) {
    const from = T0 + Math.floor(random() * days * DAY);
    filter.fromMs = from;
    filter.toMs = from + Math.floor(random() * 2 * DAY);
  }
  return filter;
}

/** A tier holding `files` (events per file), each encoded with the given row group size. */
function tier(files: StoredEvent[][], rowGroupSize: number, sketches: boolean, footers?: ParquetFooterCache): TierSource & { sources: CountingSource[] } {
  const encoded = files
    .filter((events) => events.length > 0)
    .map((events, i) => {
      const file: TierFile = { key: `f${i}`, eventDate: `d${i}`, rows: events.length, tsMin: Math.min(...events.map((e) => e.timestamp)), tsMax: Math.max(...events.map((e) => e.timestamp)) };
      return { file, bytes: encodeAuditParquet(events, { rowGroupSize, rowGroupSketches: sketches }) };
    });
  const sources: CountingSource[] = [];
  return {
    name: sketches ? 'sketched' : 'plain',
    sources,
    ...(footers ? { footers } : {}),
    listFiles: async () => encoded.map((f) => f.file),
    open: async (file) => {
      const source = countingSource(bytesSource(encoded.find((f) => f.file.key === file.key)!.bytes));
      sources.push(source);
      return source;
    },
  };
}

async function* local(events: readonly StoredEvent[]): AsyncIterable<StoredEvent> {
  for (const e of [...events].sort(newestFirst)) yield e;
}

/** What a full scan answers: every copy filtered exactly, local copies winning, newest first, cut to the limit. */
function fullScan(localEvents: readonly StoredEvent[], tiered: readonly StoredEvent[], filter: SearchFilter): string[] {
  const matches = compileFilter(filter);
  const byId = new Map<string, StoredEvent>();
  for (const e of tiered) byId.set(e.eventId, e);
  for (const e of localEvents) byId.set(e.eventId, e);
  return [...byId.values()]
    .filter((e) => inTimeRange(filter, e.timestamp) && matches(e))
    .sort(newestFirst)
    .slice(0, filter.limit)
    .map((e) => e.eventId);
}

const ids = (events: readonly MergedEvent[]) => events.map((e) => e.eventId);

/** Events split into one file per day of event time (as a sweep batch per day, or a compaction). */
function byDay(events: readonly StoredEvent[], days: number, files: number): StoredEvent[][] {
  const out: StoredEvent[][] = Array.from({ length: days * files }, () => []);
  for (const [i, e] of events.entries()) out[Math.floor((e.timestamp - T0) / DAY) * files + (i % files)]!.push(e);
  return out;
}

describe('row-group sketch pruning in the merged search', () => {
  it('answers exactly as a full scan: tiered only, local plus tiered, and after compaction (randomized)', async () => {
    const seed = testSeed();
    const random = seededRandom(seed);
    let pruned = 0;
    for (let round = 0; round < 5; round++) {
      const days = 2 + Math.floor(random() * 3);
      const events = randomEvents(random, 300 + Math.floor(random() * 400), days);
      const rowGroupSize = 5 + Math.floor(random() * 25);
      // Sweep batches: a few files per day; compaction: one file per day, bigger groups.
      const swept = byDay(events, days, 3);
      const compacted = byDay(events, days, 1);
      const sketched = tier(swept, rowGroupSize, true);
      const plain = tier(swept, rowGroupSize, false);
      const afterCompaction = tier(compacted, rowGroupSize * 3, true);
      // The newest third is also local (the same events: the local copy carries the seq).
      const cut = T0 + Math.floor(days * DAY * (2 / 3));
      const localEvents = events.filter((e) => e.timestamp >= cut);
      for (let f = 0; f < 20; f++) {
        const filter = randomFilter(random, events, days);
        const context = `seed ${seed}, round ${round}, filter ${JSON.stringify(filter)}`;
        const tieredOnly = fullScan([], events, filter);
        const search = async (t: TierSource, localPart: readonly StoredEvent[]) => {
          const result = await mergedSearch({ local: local(localPart.filter((e) => inTimeRange(filter, e.timestamp) && compileFilter(filter)(e))), tiers: [t], filter, localCompleteFromMs: undefined });
          expect(result.tierNote, context).toBeUndefined();
          pruned += result.groupsPruned;
          return result;
        };
        expect(ids((await search(sketched, [])).events), `tiered: ${context}`).toEqual(tieredOnly);
        expect(ids((await search(plain, [])).events), `tiered without sketches: ${context}`).toEqual(tieredOnly);
        expect(ids((await search(afterCompaction, [])).events), `compacted: ${context}`).toEqual(tieredOnly);
        const merged = await search(sketched, localEvents);
        expect(ids(merged.events), `merged: ${context}`).toEqual(fullScan(localEvents, events, filter));
        // An event with a local copy is shown as that copy (one seq: the local one carries erasures first).
        for (const e of merged.events) {
          const localCopy = localEvents.find((l) => l.eventId === e.eventId);
          if (localCopy !== undefined) expect(e, context).toEqual(localCopy);
        }
      }
    }
    expect(pruned, `seed ${seed}`).toBeGreaterThan(0);
  });

  it('reads no data page for a q that matches nothing once the footers are cached, nor for an absent user', async () => {
    const random = seededRandom(7);
    const events = randomEvents(random, 600, 3);
    const footers = new ParquetFooterCache(100);
    const t = tier(byDay(events, 3, 2), 20, true, footers);
    const everything = await mergedSearch({ local: local([]), tiers: [t], filter: { action: 'all', limit: 1000 }, localCompleteFromMs: undefined });
    expect(everything.events).toHaveLength(600);
    expect(footers.size).toBe(6);
    const fetched = () => t.sources.reduce((sum, s) => sum + s.fetchedBytes, 0);
    const groups = (await t.listFiles()).reduce((sum, f) => sum + Math.ceil(f.rows / 20), 0);
    for (const filter of [{ q: 'no-such-text-7f3a9c' }, { user: 'no-such-user' }, { table: 'no.such.table' }, { q: '監査ログ-nowhere' }]) {
      const before = fetched();
      const result = await mergedSearch({ local: local([]), tiers: [t], filter: { action: 'all', limit: 50, ...filter }, localCompleteFromMs: undefined });
      expect(result.events, JSON.stringify(filter)).toEqual([]);
      expect(result.groupsPruned, JSON.stringify(filter)).toBe(groups);
      expect(fetched() - before, JSON.stringify(filter)).toBe(0);
    }
    // The rare user is in few groups: the others are skipped, its events all found.
    const rare = await mergedSearch({ local: local([]), tiers: [t], filter: { action: 'all', limit: 1000, user: 'rare-user' }, localCompleteFromMs: undefined });
    expect(ids(rare.events)).toEqual(fullScan([], events, { action: 'all', limit: 1000, user: 'rare-user' }));
    expect(rare.groupsPruned).toBeGreaterThan(groups / 2);
  });
});
