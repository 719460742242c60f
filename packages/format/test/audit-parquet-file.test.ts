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
