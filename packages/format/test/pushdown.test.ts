// Goal: reads fetch only what they need — a one-day read skips the other days' row groups by their ts statistics, a column read skips other columns' chunks — and still return exactly the matching events.
import { isAuditError } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { bytesSource, countingSource } from '../src/byte-source.js';
import { FOOTER_FETCH_BYTES, parquetFileStats, readAuditParquet } from '../src/parquet-reader.js';
import { encodeAuditParquet } from '../src/parquet-writer.js';
import { buildEvents, DAY_MS, expectedTiered, ORIGIN_MS, testSeed } from './events.js';

const seed = testSeed();
console.log(`pushdown seed=${seed} (replay with FORMAT_TEST_SEED=${seed})`);

const DAYS = 8;
const PER_DAY = 1_500;
// Days are filled one after another, so with one row group per day's worth of rows each group
// covers (about) one day; the generator adds up to 2 ms of jitter, hence "about".
const events = buildEvents(seed, { count: DAYS * PER_DAY, spanMs: DAYS * DAY_MS });
const bytes = encodeAuditParquet(events, { rowGroupSize: PER_DAY });
const expected = expectedTiered(events);

function inRange(fromMs: number, toMs: number) {
  return expected.filter((e) => e.timestamp >= fromMs && e.timestamp <= toMs);
}

describe('row group pushdown', () => {
  it('the file has one row group per day with disjoint, ascending ts bounds', async () => {
    const stats = await parquetFileStats(bytesSource(bytes));
    expect(stats.rows).toBe(DAYS * PER_DAY);
    expect(stats.rowGroups).toHaveLength(DAYS);
    for (let i = 1; i < stats.rowGroups.length; i++) {
      expect(stats.rowGroups[i]?.tsMin).toBeGreaterThan(stats.rowGroups[i - 1]?.tsMax ?? Infinity);
    }
  });

  it('a one-day read fetches far fewer bytes than the file and returns only that day', async () => {
    const fromMs = ORIGIN_MS + 3 * DAY_MS;
    const toMs = fromMs + DAY_MS - 1;
    const source = countingSource(bytesSource(bytes));
    const got = await readAuditParquet(source, { fromMs, toMs });
    expect(got).toEqual(inRange(fromMs, toMs));
    expect(got.length).toBeGreaterThan(PER_DAY * 0.9);
    // One day of eight, plus the footer and at most a neighbouring group at the day's edge.
    console.log(`one-day read: ${source.fetchedBytes} of ${bytes.byteLength} bytes in ${source.fetchCount} fetches`);
    expect(source.fetchedBytes).toBeLessThan(bytes.byteLength / 3);
  });

  it('bounds are inclusive on both ends', async () => {
    const first = expected[100]?.timestamp as number;
    const last = expected[2_000]?.timestamp as number;
    const got = await readAuditParquet(bytesSource(bytes), { fromMs: first, toMs: last });
    expect(got).toEqual(inRange(first, last));
    expect(got[0]?.timestamp).toBe(first);
    expect(got.at(-1)?.timestamp).toBe(last);
    const single = await readAuditParquet(bytesSource(bytes), { fromMs: first, toMs: first });
    expect(single).toEqual(inRange(first, first));
    expect(single.length).toBeGreaterThanOrEqual(1);
  });

  it('a range outside the file fetches only the footer and returns nothing', async () => {
    const source = countingSource(bytesSource(bytes));
    expect(await readAuditParquet(source, { toMs: ORIGIN_MS - 1 })).toEqual([]);
    expect(source.fetchCount).toBe(1);
    expect(source.fetchedBytes).toBeLessThanOrEqual(FOOTER_FETCH_BYTES);
    expect(await readAuditParquet(bytesSource(bytes), { fromMs: 10, toMs: 5 })).toEqual([]);
  });
});

describe('column pushdown', () => {
  it('reading two columns fetches fewer bytes than reading all, and returns just their fields', async () => {
    const all = countingSource(bytesSource(bytes));
    await readAuditParquet(all);
    const some = countingSource(bytesSource(bytes));
    const got = await readAuditParquet(some, { columns: ['event_id', 'decision'] });
    console.log(`column read: ${some.fetchedBytes} vs full read ${all.fetchedBytes} bytes`);
    expect(some.fetchedBytes).toBeLessThan(all.fetchedBytes / 2);
    expect(got).toEqual(expected.map((e) => ({ eventId: e.eventId, decision: e.decision })));
  });

  it('a column read with a time range also reads ts, to filter on it', async () => {
    const fromMs = ORIGIN_MS + DAY_MS;
    const toMs = ORIGIN_MS + 2 * DAY_MS - 1;
    const got = await readAuditParquet(bytesSource(bytes), { fromMs, toMs, columns: ['user_id'] });
    expect(got).toEqual(inRange(fromMs, toMs).map((e) => ({ userId: e.userId, timestamp: e.timestamp })));
  });

  it('refuses an unknown column with TypeError and a non-Parquet object with AUDIT_TABLE_INVALID', async () => {
    await expect(readAuditParquet(bytesSource(bytes), { columns: ['nope' as 'ts'] })).rejects.toThrow(TypeError);
    await expect(readAuditParquet(bytesSource(bytes), { fromMs: Number.NaN })).rejects.toThrow(TypeError);
    const err: unknown = await readAuditParquet(bytesSource(new TextEncoder().encode('not a parquet file'))).catch((e: unknown) => e);
    expect(isAuditError(err, 'AUDIT_TABLE_INVALID')).toBe(true);
  });
});
