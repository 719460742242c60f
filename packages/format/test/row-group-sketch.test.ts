// Goal: every row group's footer sketch admits every filter one of its rows matches (user, engine, table, decision, action kind, q of any length, case or script), rules out most groups without a match, stays a few KiB per group, and files without a (trustworthy) sketch are never pruned.
import { compileFilter, type SearchFilter, type StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { toRow } from '../src/audit-columns.js';
import { bytesSource } from '../src/byte-source.js';
import { readAuditParquet, readAuditParquetFooter, type ParquetFooter } from '../src/parquet-reader.js';
import { encodeAuditParquet } from '../src/parquet-writer.js';
import { ROW_GROUP_SKETCH_KEY, RowGroupSketch, rowGroupSketches, sketchProbe, type SketchFilter } from '../src/row-group-sketch.js';
import { ORIGIN_MS, seededRandom, testSeed } from './events.js';

/**
 * Pieces of text chosen to stress case folding: İ and the Kelvin sign lower-case to other
 * lengths or to ASCII, Σ has two lower cases, ß has none, plus CJK, an emoji (a surrogate
 * pair) and plain words in mixed case.
 */
const PIECES = ['Select', 'FROM', 'hive', 'Sales', 'orders', 'İstanbul', 'KELVIN', '\u212Aelvin', 'ΟΔΟΣ', 'straße', '監査ログ', '😀🔒', 'WHERE', 'dt', '=', "'x'", 'ab', 'Zz9', '_', '.'];
const USERS = ['alice', 'Bob', 'carol@example.com', 'svc-etl', 'İlkay', '監査'];
const ENGINES = ['trino', 'Spark', 'FLINK'];
const ACTIONS = ['data:Select', 'data:Write', 'ddl:Create'];
const TABLES = ['hive.sales.orders', 'ice.ops.監査', 'Hive.Sales.Secret', 'x', 'db.ΟΔΟΣ.t'];

function pick<T>(random: () => number, list: readonly T[]): T {
  return list[Math.floor(random() * list.length)] as T;
}

function phrase(random: () => number, words: number): string {
  return Array.from({ length: words }, () => pick(random, PIECES)).join(random() < 0.5 ? ' ' : '');
}

export function randomEvents(random: () => number, count: number, idPrefix = 'e'): StoredEvent[] {
  return Array.from({ length: count }, (_, i) => ({
    eventId: `${idPrefix}${i}`,
    userId: pick(random, USERS),
    source: pick(random, ENGINES),
    action: pick(random, ACTIONS),
    resource: random() < 0.3 ? '' : phrase(random, 2),
    decision: pick(random, ['ALLOW', 'DENY', ''] as const),
    tables: Array.from({ length: Math.floor(random() * 3) }, () => pick(random, TABLES)),
    query: phrase(random, 1 + Math.floor(random() * 6)),
    details: random() < 0.5 ? '' : phrase(random, 2),
    timestamp: ORIGIN_MS + Math.floor(random() * 1_000_000),
    ingestTs: ORIGIN_MS + 2_000_000 + i,
    seq: i + 1,
    term: 1,
  }));
}

/** A random filter with one to three of the sketch's predicates, its needles drawn partly from the events. */
function randomFilter(random: () => number, events: readonly StoredEvent[]): SearchFilter {
  const source = pick(random, events);
  const filter: SearchFilter = { action: 'all', limit: 1000 };
  const field = pick(random, [source.query, source.details, source.resource, source.userId, source.action, ...source.tables]);
  const start = Math.floor(random() * field.length);
  const substring = field.slice(start, start + 1 + Math.floor(random() * 6));
  for (let n = 1 + Math.floor(random() * 3); n > 0; n--) {
    switch (Math.floor(random() * 6)) {
      case 0:
        filter.user = random() < 0.8 ? source.userId : pick(random, [...USERS, 'nobody']);
        break;
      case 1:
        filter.engine = (random() < 0.8 ? source.source : 'presto').toLowerCase();
        break;
      case 2: {
        const table = source.tables[0] ?? pick(random, TABLES);
        const from = Math.floor(random() * table.length);
        filter.table = random() < 0.8 ? table.slice(from, from + 1 + Math.floor(random() * 8)) : 'no.such.table';
        break;
      }
      case 3:
        filter.decision = random() < 0.8 ? source.decision : pick(random, ['ALLOW', 'DENY', ''] as const);
        break;
      case 4:
        filter.action = pick(random, ['read', 'write'] as const);
        break;
      default:
        // Lower-cased as the search parser does; sometimes not found anywhere.
        filter.q = (random() < 0.8 ? substring : phrase(random, 2) + 'qq').toLowerCase();
    }
  }
  return filter;
}

function sketchFilter(filter: SearchFilter): SketchFilter {
  return filter;
}

async function footerOf(bytes: Uint8Array): Promise<ParquetFooter> {
  return readAuditParquetFooter(bytesSource(bytes));
}

describe('row-group sketches', () => {
  it('admit every filter a row of the group matches, and rule out most groups without a match (randomized)', async () => {
    const seed = testSeed();
    const random = seededRandom(seed);
    let pruned = 0;
    let withoutMatch = 0;
    for (let round = 0; round < 8; round++) {
      const events = randomEvents(random, 200 + Math.floor(random() * 300));
      const rowGroupSize = 5 + Math.floor(random() * 40);
      const bytes = encodeAuditParquet(events, { rowGroupSize });
      const footer = await footerOf(bytes);
      const sketches = rowGroupSketches(footer);
      expect(sketches).toHaveLength(footer.row_groups.length);
      const rows = await readAuditParquet(bytesSource(bytes));
      for (let f = 0; f < 60; f++) {
        const filter = randomFilter(random, events);
        const matches = compileFilter(filter);
        const probe = sketchProbe(sketchFilter(filter));
        for (const [g, sketch] of sketches.entries()) {
          const groupRows = rows.slice(g * rowGroupSize, (g + 1) * rowGroupSize);
          const matched = groupRows.some((event) => matches(event));
          const admitted = probe === undefined || sketch!.mayMatch(probe);
          if (matched) expect(admitted, `seed ${seed}: group ${g} holds a match of ${JSON.stringify(filter)}`).toBe(true);
          else if (probe !== undefined) {
            withoutMatch++;
            if (!admitted) pruned++;
          }
        }
      }
    }
    // Random needles over a small vocabulary often share trigrams with a group; still most go.
    expect(pruned / withoutMatch, `seed ${seed}`).toBeGreaterThan(0.5);
  });

  it('are written as RowGroupSketch.of builds them from each row group\'s rows (the writer sketches from the distinct values it encodes)', async () => {
    const seed = testSeed();
    const random = seededRandom(seed);
    for (let round = 0; round < 4; round++) {
      const events = randomEvents(random, 100 + Math.floor(random() * 200));
      const rowGroupSize = 7 + Math.floor(random() * 60);
      const bytes = encodeAuditParquet(events, { rowGroupSize });
      const sketches = rowGroupSketches(await footerOf(bytes));
      const rows = (await readAuditParquet(bytesSource(bytes))).map(toRow);
      expect(sketches.length, `seed ${seed}`).toBe(Math.ceil(events.length / rowGroupSize));
      for (const [g, sketch] of sketches.entries()) {
        const expected = RowGroupSketch.of(rows.slice(g * rowGroupSize, (g + 1) * rowGroupSize));
        expect(sketch, `seed ${seed}: group ${g}`).toBeDefined();
        expect({ rows: sketch!.rows, decisions: [...sketch!.decisions], actions: [...sketch!.actions] }, `seed ${seed}: group ${g}`).toEqual({
          rows: expected.rows,
          decisions: [...expected.decisions],
          actions: [...expected.actions],
        });
        expect(Buffer.from(sketch!.bloom).equals(Buffer.from(expected.bloom)), `seed ${seed}: group ${g} bloom`).toBe(true);
      }
    }
  });

  it('admits every substring of every text value, in any case, and rules out needles that are nowhere', () => {
    const random = seededRandom(testSeed());
    const events = randomEvents(random, 300);
    const sketch = RowGroupSketch.of(events.map(toRow));
    for (const event of events) {
      for (const value of [event.query, event.details, event.resource, event.userId, event.action, ...event.tables]) {
        const lower = value.toLowerCase();
        for (let start = 0; start < lower.length; start++) {
          for (const length of [1, 2, 3, 4, 7]) {
            const q = lower.slice(start, start + length);
            const probe = sketchProbe({ action: 'all', q });
            if (probe !== undefined) expect(sketch.mayMatch(probe), `q=${JSON.stringify(q)}`).toBe(true);
          }
        }
      }
      for (const table of event.tables) {
        const probe = sketchProbe({ action: 'all', table });
        if (table.length < 3) expect(probe).toBeUndefined();
        else expect(sketch.mayMatch(probe!)).toBe(true);
      }
    }
    expect(sketch.mayMatch(sketchProbe({ action: 'all', q: 'no-such-text-7f3a9c' })!)).toBe(false);
    expect(sketch.mayMatch(sketchProbe({ action: 'all', user: 'no-such-user-7f3a9c' })!)).toBe(false);
    // Case-sensitive for tables, as the table filter is.
    expect(sketch.mayMatch(sketchProbe({ action: 'all', table: 'HIVE.SALES.ORDERS' })!)).toBe(false);
  });

  it('says nothing for filters it cannot answer: no predicate, or only q/table shorter than a trigram', () => {
    expect(sketchProbe({ action: 'all' })).toBeUndefined();
    expect(sketchProbe({ action: 'all', q: 'ab' })).toBeUndefined();
    expect(sketchProbe({ action: 'all', table: 'x' })).toBeUndefined();
    expect(sketchProbe({ action: 'all', q: '😀' })).toBeUndefined(); // two UTF-16 units
    expect(sketchProbe({ action: 'all', q: 'ab', decision: 'DENY' })).toBeDefined();
  });

  it('keeps decisions and action kinds exactly', () => {
    const events = randomEvents(seededRandom(1), 50).map((e) => ({ ...e, decision: 'DENY' as const, action: 'data:Select' }));
    const sketch = RowGroupSketch.of(events.map(toRow));
    expect(sketch.mayMatch(sketchProbe({ action: 'all', decision: 'DENY' })!)).toBe(true);
    expect(sketch.mayMatch(sketchProbe({ action: 'all', decision: 'ALLOW' })!)).toBe(false);
    expect(sketch.mayMatch(sketchProbe({ action: 'all', decision: '' })!)).toBe(false);
    expect(sketch.mayMatch(sketchProbe({ action: 'read' })!)).toBe(true);
    expect(sketch.mayMatch(sketchProbe({ action: 'write' })!)).toBe(false);
  });

  it('reads files without a sketch, or with one it cannot trust, as having none', async () => {
    const events = randomEvents(seededRandom(2), 40);
    const plain = await footerOf(encodeAuditParquet(events, { rowGroupSize: 10, rowGroupSketches: false }));
    expect(plain.key_value_metadata?.some((kv) => kv.key === ROW_GROUP_SKETCH_KEY) ?? false).toBe(false);
    expect(rowGroupSketches(plain)).toEqual([undefined, undefined, undefined, undefined]);

    const good = await footerOf(encodeAuditParquet(events, { rowGroupSize: 10 }));
    const value = good.key_value_metadata!.find((kv) => kv.key === ROW_GROUP_SKETCH_KEY)!.value!;
    const json = JSON.parse(value) as { version: number; groups: Array<{ rows: number; bloom: string }> };
    const variants = [
      'not json',
      JSON.stringify({ ...json, version: 2 }),
      JSON.stringify({ ...json, groups: json.groups.slice(1) }),
      JSON.stringify({ ...json, groups: json.groups.map((g, i) => (i === 0 ? { ...g, rows: g.rows + 1 } : g)) }),
      JSON.stringify({ ...json, groups: json.groups.map((g, i) => (i === 0 ? { ...g, bloom: 'AAA' } : g)) }),
      JSON.stringify({ ...json, groups: json.groups.map((g, i) => (i === 0 ? { ...g, decisions: ['MAYBE'] } : g)) }),
    ];
    for (const variant of variants) {
      const footer: ParquetFooter = { ...good, key_value_metadata: good.key_value_metadata!.map((kv) => (kv.key === ROW_GROUP_SKETCH_KEY ? { ...kv, value: variant } : kv)) };
      expect(rowGroupSketches(footer), variant.slice(0, 40)).toEqual([undefined, undefined, undefined, undefined]);
    }
    expect(rowGroupSketches(good).every((s) => s instanceof RowGroupSketch)).toBe(true);
  });

  it('costs about a byte per distinct item: a few KiB per row group, a few per cent of the file', async () => {
    const random = seededRandom(3);
    const events = randomEvents(random, 4000);
    const withSketch = encodeAuditParquet(events, { rowGroupSize: 1000 });
    const without = encodeAuditParquet(events, { rowGroupSize: 1000, rowGroupSketches: false });
    const sketches = rowGroupSketches(await footerOf(withSketch));
    for (const sketch of sketches) expect(sketch!.bloom.byteLength).toBeLessThanOrEqual(4096);
    // base64 in the footer: 4/3 of the filters' bytes, plus a little JSON per group.
    const bloomBytes = sketches.reduce((sum, s) => sum + s!.bloom.byteLength, 0);
    expect(withSketch.byteLength - without.byteLength).toBeLessThan(bloomBytes * 1.4 + 200 * sketches.length);
  });
});
