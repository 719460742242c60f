// Goal: merging tiered files copies big row groups byte for byte and re-encodes runs of small
// ones, with every row exactly once and every column equal — checked by DuckDB (an independent
// reader, with filters that use statistics and Bloom filters) and by our own reader; offsets and
// offset indexes point at real pages; the Iceberg record computed from the footer equals the
// one computed from the rows; a schema mismatch is refused with its code; and no more than one
// output row group of rows is ever decoded at once.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { AuditErrorCode, type StoredEvent } from '@auditlake/model';
import { readOffsetIndex } from 'hyparquet';
import { parquetWriteBuffer, type ColumnSource } from 'hyparquet-writer';
import { AUDIT_COLUMNS, toRow } from '../src/audit-columns.js';
import { auditParquetSchema } from '../src/parquet-schema.js';
import { encodeRowGroupSketches, ROW_GROUP_SKETCH_KEY, RowGroupSketch as Sketch } from '../src/row-group-sketch.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesSource } from '../src/byte-source.js';
import { dataFileFromParquet, dataFileFromParquetFooter } from '../src/iceberg-data-file.js';
import { ParquetFileAssembler } from '../src/parquet-assembler.js';
import { COPY_ROW_GROUP_ROWS_MIN, mergeAuditParquetFiles, type MergeInput } from '../src/parquet-merge.js';
import { readAuditParquetFooter, readWholeAuditParquet, type ParquetFooter } from '../src/parquet-reader.js';
import { encodeAuditParquet, ROW_GROUP_SIZE_DEFAULT } from '../src/parquet-writer.js';
import { rowGroupSketches, type RowGroupSketch } from '../src/row-group-sketch.js';
import { buildEvents, ORIGIN_MS, testSeed } from './events.js';

const seed = testSeed();
console.log(`parquet-merge seed=${seed} (replay with FORMAT_TEST_SEED=${seed})`);

const HOUR_MS = 3_600_000;
const PRE_EVOLUTION_FIXTURE = new URL('./fixtures/three-events-before-sketch.parquet', import.meta.url);

/** Events of one day with unique ids per call (`tag`), some with long and 4-byte-character text. */
function events(tag: number, count: number, startMs: number): StoredEvent[] {
  return buildEvents(seed + tag, { count, startMs, spanMs: HOUR_MS }).map((event, i) => ({
    ...event,
    eventId: `${tag}-${event.eventId}`,
    // Long text: its statistics are truncated (a 64-byte prefix of 4-byte characters is exactly
    // 16 code points, where the footer alone cannot give the Iceberg bound).
    ...(i % 97 === 0 ? { details: '😀'.repeat(40 + (i % 5)) } : {}),
    ...(i % 89 === 0 ? { resource: `${'z'.repeat(70)}${i}` } : {}),
  }));
}

/**
 * A file as a writer before the schema evolution wrote it (the first 12 columns only), one row
 * group, with a valid row-group sketch: only its schema keeps it from being copied.
 */
function preEvolutionFile(list: readonly StoredEvent[]): Uint8Array {
  const rows = list.map(toRow).sort((a, b) => a.ts - b.ts);
  const columns = AUDIT_COLUMNS.filter((column) => !('evolved' in column));
  const columnData: ColumnSource[] = columns.map((column) => ({
    name: column.name,
    data: column.icebergType === 'string' ? rows.map((row) => row[column.name] as string) : BigInt64Array.from(rows, (row) => BigInt(row[column.name] as number | bigint)),
  }));
  const schema = auditParquetSchema().slice(0, columns.length + 1);
  schema[0] = { ...schema[0]!, num_children: columns.length };
  const buffer = parquetWriteBuffer({ schema, columnData, rowGroupSize: rows.length, kvMetadata: [{ key: ROW_GROUP_SKETCH_KEY, value: encodeRowGroupSketches([Sketch.of(rows)]) }] });
  return new Uint8Array(buffer);
}

async function footerOf(bytes: Uint8Array): Promise<ParquetFooter> {
  return readAuditParquetFooter(bytesSource(bytes), { exactStatistics: true });
}

const input = (bytes: Uint8Array, name: string): MergeInput => ({ bytes, name, expectedRows: 0 });

async function inputsOf(files: Uint8Array[]): Promise<MergeInput[]> {
  const out: MergeInput[] = [];
  for (const [i, bytes] of files.entries()) out.push({ ...input(bytes, `in-${i}`), expectedRows: Number((await footerOf(bytes)).num_rows) });
  return out;
}

let dir: string;
let instance: DuckDBInstance;
let connection: DuckDBConnection;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'auditlake-format-merge-'));
  instance = await DuckDBInstance.create(':memory:');
  connection = await instance.connect();
});

afterAll(() => {
  connection?.closeSync();
  instance?.closeSync();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

function save(name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

async function query(sql: string): Promise<Record<string, unknown>[]> {
  return (await connection.runAndReadAll(sql)).getRowObjects();
}

/** A DuckDB list of file paths. */
const files = (paths: readonly string[]) => `[${paths.map((path) => `'${path.replace(/'/g, "''")}'`).join(', ')}]`;

/** Every page location of every chunk's offset index starts a page inside its chunk, in order, covering the chunk's data pages exactly. */
function expectOffsetIndexesValid(bytes: Uint8Array, footer: ParquetFooter): number {
  let checked = 0;
  for (const group of footer.row_groups) {
    for (const chunk of group.columns) {
      const meta = chunk.meta_data!;
      const start = Number(meta.dictionary_page_offset ?? meta.data_page_offset);
      const end = start + Number(meta.total_compressed_size);
      if (chunk.offset_index_offset === undefined) continue;
      const at = Number(chunk.offset_index_offset);
      const index = readOffsetIndex({ view: new DataView(bytes.buffer, bytes.byteOffset + at, chunk.offset_index_length), offset: 0 });
      expect(index.page_locations[0]!.offset).toBe(meta.data_page_offset);
      let next = Number(meta.data_page_offset);
      for (const page of index.page_locations) {
        expect(Number(page.offset)).toBe(next);
        next += page.compressed_page_size;
      }
      expect(next).toBe(end);
      checked++;
    }
  }
  return checked;
}

describe('ParquetFileAssembler', () => {
  it('copying every row group of a file gives back the same file, byte for byte', async () => {
    const bytes = encodeAuditParquet(events(1, 12_000, ORIGIN_MS), { rowGroupSize: 5_000, kvMetadata: { 'iceberg.schema': '{"x":1}' } });
    const footer = await footerOf(bytes);
    const sketches = rowGroupSketches(footer) as RowGroupSketch[];
    const assembler = new ParquetFileAssembler({ 'iceberg.schema': '{"x":1}' });
    for (let index = 0; index < footer.row_groups.length; index++) assembler.addRowGroup({ bytes, footer, index, sketch: sketches[index]! });
    expect(Buffer.from(assembler.finish()).equals(Buffer.from(bytes))).toBe(true);
  });

  it('refuses row groups of files with different schemas with AUDIT_PARQUET_SCHEMA_MISMATCH', async () => {
    const ours = encodeAuditParquet(events(2, 10, ORIGIN_MS));
    const older = new Uint8Array(readFileSync(PRE_EVOLUTION_FIXTURE));
    const [oursFooter, olderFooter] = [await footerOf(ours), await footerOf(older)];
    const assembler = new ParquetFileAssembler();
    assembler.addRowGroup({ bytes: ours, footer: oursFooter, index: 0, sketch: rowGroupSketches(oursFooter)[0]! });
    const sketch = { rows: Number(olderFooter.row_groups[0]!.num_rows) } as RowGroupSketch;
    expect(() => assembler.addRowGroup({ bytes: older, footer: olderFooter, index: 0, sketch })).toThrow(expect.objectContaining({ code: AuditErrorCode.PARQUET_SCHEMA_MISMATCH }));
  });
});

describe('mergeAuditParquetFiles', () => {
  it('copies big groups and re-encodes small ones; DuckDB reads every row once with every column equal, filters included', async () => {
    const inputs = [
      encodeAuditParquet(events(10, 12_000, ORIGIN_MS), { rowGroupSize: 6_000 }),
      ...Array.from({ length: 6 }, (_, i) => encodeAuditParquet(events(20 + i, 300 + i, ORIGIN_MS + (i + 1) * HOUR_MS))),
      encodeAuditParquet(events(30, COPY_ROW_GROUP_ROWS_MIN, ORIGIN_MS + 8 * HOUR_MS)),
      encodeAuditParquet(events(31, 40, ORIGIN_MS + 9 * HOUR_MS)),
    ];
    const { files: merged, stats } = await mergeAuditParquetFiles(await inputsOf(inputs), { rowsPerFile: 1_000_000, kvMetadata: { 'iceberg.schema': '{}' } });
    expect(merged).toHaveLength(1);
    expect(stats.rowGroupsCopied).toBe(3);
    expect(stats.rowGroupsEncoded).toBe(1);
    const out = merged[0]!;
    const footer = await footerOf(out.bytes);
    expect(footer.row_groups.map((g) => Number(g.num_rows))).toEqual([6_000, 6_000, COPY_ROW_GROUP_ROWS_MIN, 6 * 300 + 15 + 40]);
    expect(footer.key_value_metadata?.find((kv) => kv.key === 'iceberg.schema')?.value).toBe('{}');
    expect(rowGroupSketches(footer).every((sketch, i) => sketch?.rows === Number(footer.row_groups[i]!.num_rows))).toBe(true);
    expect(expectOffsetIndexesValid(out.bytes, footer)).toBeGreaterThan(0);

    const inPaths = inputs.map((bytes, i) => save(`in-${i}.parquet`, bytes));
    const outPath = save('merged.parquet', out.bytes);
    const count = async (where: string, paths: string[]) => (await query(`SELECT count(*) AS n FROM read_parquet(${files(paths)}) WHERE ${where}`))[0]!['n'];
    const all = await count('true', inPaths);
    expect(all).toBe(BigInt(out.rows));
    expect(await count('true', [outPath])).toBe(all);
    // Every column of every row, both ways: nothing lost, nothing added, nothing changed.
    for (const [a, b] of [[inPaths, [outPath]], [[outPath], inPaths]] as const) {
      const [diff] = await query(`SELECT count(*) AS n FROM (SELECT * FROM read_parquet(${files(a)}) EXCEPT ALL SELECT * FROM read_parquet(${files(b)}))`);
      expect(diff!['n']).toBe(0n);
    }
    // Filters DuckDB pushes to row-group statistics and the user_id Bloom filters.
    const someUser = (await query(`SELECT user_id FROM read_parquet(${files([outPath])}) LIMIT 1`))[0]!['user_id'] as string;
    for (const where of [`ts BETWEEN ${ORIGIN_MS + 90 * 60_000} AND ${ORIGIN_MS + 5 * HOUR_MS}`, `user_id = '${someUser.replace(/'/g, "''")}'`, "decision = 'DENY'", 'seq > 100 AND seq < 200']) {
      expect(await count(where, [outPath])).toBe(await count(where, inPaths));
    }
    // The Bloom filters moved with their chunks: DuckDB finds one per group and probes it.
    const blooms = await query(`SELECT bloom_filter_offset FROM parquet_metadata('${outPath}') WHERE path_in_schema = 'user_id'`);
    expect(blooms).toHaveLength(4);
    expect(blooms.every((row) => row['bloom_filter_offset'] !== null)).toBe(true);
    const probe = async (user: string) => (await query(`SELECT bloom_filter_excludes AS x FROM parquet_bloom_probe('${outPath}', 'user_id', '${user.replace(/'/g, "''")}') ORDER BY row_group_id`)).map((row) => row['x']);
    expect(await probe('no-such-user-7f3a9c')).toEqual([true, true, true, true]);
    expect((await probe(someUser)).includes(false)).toBe(true);
    const [bounds] = await query(`SELECT min(ts) AS lo, max(ts) AS hi FROM read_parquet(${files(inPaths)})`);
    expect([BigInt(out.tsMin), BigInt(out.tsMax)]).toEqual([bounds!['lo'], bounds!['hi']]);
  });

  it("gives an Iceberg data_file from the footer equal to the one computed from the merged file's rows", async () => {
    const files = [encodeAuditParquet(events(40, 11_000, ORIGIN_MS), { rowGroupSize: 5_500 }), ...Array.from({ length: 4 }, (_, i) => encodeAuditParquet(events(41 + i, 700, ORIGIN_MS + i * HOUR_MS)))];
    const { files: merged } = await mergeAuditParquetFiles(await inputsOf(files), { rowsPerFile: 1_000_000, kvMetadata: {} });
    const bytes = merged[0]!.bytes;
    const fromRows = dataFileFromParquet({ events: await readWholeAuditParquet(bytesSource(bytes)), filePath: 's3://b/f.parquet', fileSizeBytes: bytes.byteLength, parquetBytes: bytes });
    expect(await dataFileFromParquetFooter({ filePath: 's3://b/f.parquet', parquetBytes: bytes })).toEqual(fromRows);
  });

  it('reads back the same events as the inputs (our reader), in files of at most rowsPerFile rows', async () => {
    const source = [events(50, 6_000, ORIGIN_MS), events(51, 900, ORIGIN_MS), events(52, 5_200, ORIGIN_MS + HOUR_MS), events(53, 10, ORIGIN_MS)];
    const files = source.map((list) => encodeAuditParquet(list));
    const { files: merged } = await mergeAuditParquetFiles(await inputsOf(files), { rowsPerFile: 7_000, kvMetadata: {} });
    // 6,000 and 5,200 copied (together past 7,000: two files); the 910 small rows pending to the end.
    expect(merged.map((file) => file.rows)).toEqual([6_000, 5_200 + 910]);
    const read = (await Promise.all(merged.map((file) => readWholeAuditParquet(bytesSource(file.bytes))))).flat();
    const expected = (await Promise.all(files.map((bytes) => readWholeAuditParquet(bytesSource(bytes))))).flat();
    const byId = (list: typeof read) => [...list].sort((a, b) => (a.eventId < b.eventId ? -1 : 1));
    expect(byId(read)).toEqual(byId(expected));
  });

  it('never holds more than one output row group of decoded rows, however many small groups it merges', async () => {
    const files = Array.from({ length: 50 }, (_, i) => encodeAuditParquet(events(100 + i, 700, ORIGIN_MS + (i % 20) * HOUR_MS)));
    const { files: merged, stats } = await mergeAuditParquetFiles(await inputsOf(files), { rowsPerFile: 1_000_000, kvMetadata: {} });
    expect(stats.rowGroupsCopied).toBe(0);
    expect(stats.rowGroupsEncoded).toBe(4);
    expect(stats.decodedRowsHeldMax).toBe(ROW_GROUP_SIZE_DEFAULT);
    expect((await footerOf(merged[0]!.bytes)).row_groups.map((g) => Number(g.num_rows))).toEqual([10_000, 10_000, 10_000, 5_000]);
    // Groups cut inside input groups (700 does not divide 10,000): every row still once, unchanged.
    const byId = (list: Awaited<ReturnType<typeof readWholeAuditParquet>>) => [...list].sort((a, b) => (a.eventId < b.eventId ? -1 : 1));
    const expected = (await Promise.all(files.map((bytes) => readWholeAuditParquet(bytesSource(bytes))))).flat();
    expect(byId(await readWholeAuditParquet(bytesSource(merged[0]!.bytes)))).toEqual(byId(expected));
  });

  it('re-encodes a file of an older schema (the new columns null) instead of copying it', async () => {
    const older = preEvolutionFile(events(60, COPY_ROW_GROUP_ROWS_MIN, ORIGIN_MS));
    const olderFooter = await footerOf(older);
    expect(olderFooter.schema).toHaveLength(13);
    expect(rowGroupSketches(olderFooter)[0]?.rows).toBe(COPY_ROW_GROUP_ROWS_MIN);
    const ours = encodeAuditParquet(events(61, COPY_ROW_GROUP_ROWS_MIN, ORIGIN_MS));
    const { files: merged, stats } = await mergeAuditParquetFiles(await inputsOf([ours, older]), { rowsPerFile: 1_000_000, kvMetadata: {} });
    expect(stats).toMatchObject({ rowGroupsCopied: 1, rowGroupsEncoded: 1 });
    const read = await readWholeAuditParquet(bytesSource(merged[0]!.bytes));
    expect(read.slice(0, COPY_ROW_GROUP_ROWS_MIN)).toEqual(await readWholeAuditParquet(bytesSource(ours)));
    const olderEvents = await readWholeAuditParquet(bytesSource(older));
    expect(olderEvents[0]?.seq).toBeUndefined();
    expect(read.slice(COPY_ROW_GROUP_ROWS_MIN)).toEqual(olderEvents);
  });

  it('refuses an input that does not hold the rows it should (AUDIT_TABLE_INVALID)', async () => {
    const bytes = encodeAuditParquet(events(70, 20, ORIGIN_MS));
    await expect(mergeAuditParquetFiles([{ bytes, name: 'f', expectedRows: 21 }], { rowsPerFile: 100, kvMetadata: {} })).rejects.toMatchObject({ code: AuditErrorCode.TABLE_INVALID });
  });
});
