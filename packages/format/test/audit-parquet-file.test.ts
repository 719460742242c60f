// Goal: an opened file reads its footer once (or not at all when it comes from the cache), reads single row groups exactly, and the footer cache keeps the most recently used footers within its bound.
import { describe, expect, it } from 'vitest';
import { AuditParquetFile } from '../src/audit-parquet-file.js';
import { bytesSource, countingSource } from '../src/byte-source.js';
import { ParquetFooterCache } from '../src/footer-cache.js';
import { readAuditParquet } from '../src/parquet-reader.js';
import { encodeAuditParquet } from '../src/parquet-writer.js';
import { buildEvents, DAY_MS, expectedTiered, testSeed } from './events.js';

const seed = testSeed();
console.log(`audit-parquet-file seed=${seed} (replay with FORMAT_TEST_SEED=${seed})`);
const events = buildEvents(seed, { count: 1_000, spanMs: DAY_MS });
const bytes = encodeAuditParquet(events, { rowGroupSize: 300 });
const expected = expectedTiered(events);

describe('AuditParquetFile', () => {
  it('spans its row groups and reads one group exactly, with or without a time range', async () => {
    const file = await AuditParquetFile.open(bytesSource(bytes));
    expect(file.rowGroups.map((g) => [g.index, g.rowStart, g.rowEnd])).toEqual([[0, 0, 300], [1, 300, 600], [2, 600, 900], [3, 900, 1000]]);
    expect(await file.read({ rowGroups: [2] })).toEqual(expected.slice(600, 900));
    const group = file.rowGroups[1]!;
    const fromMs = expected[350]!.timestamp;
    expect(await file.read({ rowGroups: [1], fromMs, toMs: group.tsMax! })).toEqual(expected.slice(300, 600).filter((e) => e.timestamp >= fromMs));
    expect(await file.read({ rowGroups: [1, 3] })).toEqual([...expected.slice(300, 600), ...expected.slice(900)]);
    await expect(readAuditParquet(bytesSource(bytes), { rowGroups: [-1] })).rejects.toThrow(TypeError);
  });

  it('opened with a cached footer, fetches nothing to open', async () => {
    const first = await AuditParquetFile.open(bytesSource(bytes));
    const counting = countingSource(bytesSource(bytes));
    const again = await AuditParquetFile.open(counting, first.footer);
    expect(counting.fetchCount).toBe(0);
    expect(await again.read({ rowGroups: [0] })).toEqual(expected.slice(0, 300));
  });
});

describe('AuditParquetFile.readNewest', () => {
  it('returns every row at or above the group\'s count-th newest in range, ties included, as a full read would', async () => {
    // Coarse times (many ties): 3,000 rows over 40 distinct ts values, in one group.
    const tied = buildEvents(seed + 1, { count: 3_000, spanMs: DAY_MS }).map((e, i) => ({ ...e, timestamp: e.timestamp - (e.timestamp % 3_600_000) + (i % 2) }));
    const file = await AuditParquetFile.open(bytesSource(encodeAuditParquet(tied, { rowGroupSize: 3_000 })));
    const all = await file.read({ rowGroups: [0] });
    for (const count of [1, 7, 200, 2_999, 3_000, 5_000]) {
      for (const [fromMs, toMs] of [[undefined, undefined], [all[100]!.timestamp, all[2_000]!.timestamp]] as const) {
        const inRange = all.filter((e) => (fromMs === undefined || e.timestamp >= fromMs) && (toMs === undefined || e.timestamp <= toMs));
        const threshold = inRange.map((e) => e.timestamp).sort((a, b) => b - a)[Math.min(count, inRange.length) - 1]!;
        const got = await file.readNewest(0, { ...(fromMs !== undefined ? { fromMs, toMs } : {}), count });
        const expectedRows = count >= inRange.length ? inRange : inRange.filter((e) => e.timestamp >= threshold);
        expect(got, `count ${count} from ${fromMs}`).toEqual(expectedRows);
      }
    }
  });

  it('reads the tail of a sorted group only: its page index shows many pages per text column', async () => {
    const many = buildEvents(seed + 2, { count: 10_000, spanMs: DAY_MS });
    const counting = countingSource(bytesSource(encodeAuditParquet(many)));
    const file = await AuditParquetFile.open(counting);
    const query = file.footer.row_groups[0]!.columns.find((c) => c.meta_data?.path_in_schema[0] === 'query')!;
    // More than one page (hyparquet-writer writes an offset index only then).
    expect(query.offset_index_length).toBeGreaterThan(0);
    const newest = await file.readNewest(0, { count: 50 });
    expect(newest).toEqual(expectedTiered(many).slice(-newest.length));
    expect(newest.length).toBeGreaterThanOrEqual(50);
  });
});

describe('ParquetFooterCache', () => {
  it('drops the least recently used footer beyond its bound', async () => {
    const footer = (await AuditParquetFile.open(bytesSource(bytes))).footer;
    const cache = new ParquetFooterCache(2);
    cache.set('a', footer);
    cache.set('b', footer);
    expect(cache.get('a')).toBe(footer); // a is now the most recent
    cache.set('c', footer);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(footer);
    expect(cache.get('c')).toBe(footer);
    expect(cache.size).toBe(2);
    expect(() => new ParquetFooterCache(0)).toThrow(TypeError);
  });
});
