// Goal: a tier file encoded on two threads (some columns here, the rest packed, sent over and encoded elsewhere, then assembled) is byte for byte the file encodeAuditParquet writes, and that is byte for byte hyparquet-writer's own parquetWriteBuffer of the same columns: for random events (non-ASCII text, nulls), one or several row groups, any split of the columns; DuckDB reads every row of it back.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AUDIT_COLUMNS, toRow } from '../src/audit-columns.js';
import { compressTierPage, TIER_PAGE_CODEC } from '../src/page-codec.js';
import { auditParquetSchema } from '../src/parquet-schema.js';
import { auditColumnSources, auditRows, encodeAuditParquet, PAGE_SIZE_BYTES, PARQUET_CREATED_BY, SKETCHED_COLUMNS, STATISTICS_STRING_BYTES_MAX, tierFileKvMetadata } from '../src/parquet-writer.js';
import { encodePackedColumns, SECOND_THREAD_COLUMNS, splitAuditParquet, type SplitAuditParquetOptions } from '../src/split-parquet-encode.js';
import { buildEvents, expectedTiered, seededRandom, testSeed } from './events.js';

/** The columns that can go to another thread: byte arrays and INT64 columns with no nulls, but not those the sketch is built from. */
const PACKABLE = AUDIT_COLUMNS.filter((c) => (c.icebergType === 'string' || c.required) && !SKETCHED_COLUMNS.includes(c.name)).map((c) => c.name as string);

/** Encodes on "two threads": the packed columns and their chunks cross by structured clone, as between workers. */
function encodeSplit(events: Parameters<typeof splitAuditParquet>[0], options: SplitAuditParquetOptions): Uint8Array {
  const split = splitAuditParquet(events, options);
  const sent = structuredClone(split.second);
  split.encodeFirst();
  return split.assemble(structuredClone(encodePackedColumns(sent, split.rowGroupSize)));
}

const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

describe('a tier file encoded on two threads', () => {
  const seed = testSeed();

  it(`is byte-identical to encodeAuditParquet for random events, one or several row groups, any split of the columns (seed ${seed})`, () => {
    const random = seededRandom(seed);
    for (const [count, rowGroupSize] of [[1, 10_000], [7, 3], [2_500, 1_000], [3_001, 10_000], [1_200, 1_199]] as const) {
      const events = buildEvents(seed + count, { count });
      const kvMetadata = { 'auditlake.firstSeq': String(count) };
      const whole = encodeAuditParquet(events, { rowGroupSize, kvMetadata });
      const splits = [SECOND_THREAD_COLUMNS, ['query'], PACKABLE, PACKABLE.filter(() => random() < 0.5)];
      for (const secondColumns of splits) {
        const twoThreads = encodeSplit(events, { rowGroupSize, kvMetadata, secondColumns });
        expect(same(twoThreads, whole), `${count} events, groups of ${rowGroupSize}, second thread ${secondColumns.join(',')}`).toBe(true);
      }
      // Rows the caller built already (a worker builds them part by part) give the same file.
      expect(same(encodeSplit(events, { rowGroupSize, kvMetadata, rows: events.map(toRow) }), whole)).toBe(true);
      // Without sketches too (files as writers before them wrote).
      expect(same(encodeSplit(events, { rowGroupSize, rowGroupSketches: false }), encodeAuditParquet(events, { rowGroupSize, rowGroupSketches: false }))).toBe(true);
    }
  });

  it(`encodeAuditParquet (column chunks assembled) writes exactly hyparquet-writer's parquetWriteBuffer of the same columns (seed ${seed})`, () => {
    for (const [count, rowGroupSize] of [[3_001, 1_000], [500, 10_000]] as const) {
      const events = buildEvents(seed + count, { count });
      const { columns, sketches } = auditColumnSources(auditRows(events), rowGroupSize, true);
      const kvMetadata = tierFileKvMetadata({ a: 'b' }, sketches);
      const reference = parquetWriteBuffer({
        schema: auditParquetSchema(),
        columnData: columns,
        codec: TIER_PAGE_CODEC,
        compressors: { [TIER_PAGE_CODEC]: compressTierPage },
        statistics: true,
        statisticsTruncateLength: STATISTICS_STRING_BYTES_MAX,
        rowGroupSize,
        pageSize: PAGE_SIZE_BYTES,
        createdBy: PARQUET_CREATED_BY,
        ...(kvMetadata !== undefined ? { kvMetadata } : {}),
      });
      expect(same(encodeAuditParquet(events, { rowGroupSize, kvMetadata: { a: 'b' } }), new Uint8Array(reference))).toBe(true);
    }
  });

  it('refuses a column that cannot be packed (an optional INT64 with nulls is not a BigInt64Array) or that the sketches are built from', () => {
    expect(() => splitAuditParquet(buildEvents(seed, { count: 3 }), { secondColumns: ['seq'] })).toThrow(TypeError);
    expect(() => splitAuditParquet(buildEvents(seed, { count: 3 }), { secondColumns: ['query', 'user_id'] })).toThrow(/user_id cannot be encoded on the second/);
  });

  it(`is read back whole by DuckDB, every row and value (seed ${seed})`, async () => {
    const events = buildEvents(seed, { count: 2_500 });
    const dir = mkdtempSync(join(tmpdir(), 'auditlake-split-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'split.parquet');
    writeFileSync(file, encodeSplit(events, { rowGroupSize: 1_000 }));
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    onTestFinished(() => {
      connection.closeSync();
      instance.closeSync();
    });
    const rows = (await connection.runAndReadAll('SELECT event_id, user_id, source, action, resource, query, details, decision, ts FROM read_parquet($1)', [file])).getRowObjects();
    const expected = expectedTiered(events);
    expect(rows).toEqual(
      expected.map((e) => ({
        event_id: e.eventId,
        user_id: e.userId,
        source: e.source,
        action: e.action,
        resource: e.resource,
        query: e.query,
        details: e.details,
        decision: e.decision,
        ts: BigInt(e.timestamp),
      })),
    );
  });
});
