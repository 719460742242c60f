// Goal: the verifier's read of a whole file refuses a footer whose row-group statistics or
// row-group sketch, a Bloom filter or a column index, do not admit the group's own rows — the declarations readers skip row groups
// by, which the record chain does not cover — naming the group, the column or what the sketch
// leaves out, and a hidden row; and accepts every file our writer makes, whatever its values.
import { AuditErrorCode, type AuditError } from '@auditlake/model';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toRow, type TieredEvent } from '../src/audit-columns.js';
import { bytesSource } from '../src/byte-source.js';
import { ParquetFileAssembler } from '../src/parquet-assembler.js';
import { readAuditParquetFooter, readWholeAuditColumns, type ParquetFooter } from '../src/parquet-reader.js';
import { encodeAuditParquet } from '../src/parquet-writer.js';
import { RowGroupSketch, rowGroupSketches } from '../src/row-group-sketch.js';
import { readBloomFilter } from 'hyparquet/src/bloom.js';
import { readColumnIndex } from 'hyparquet/src/indexes.js';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { buildEvents, testSeed } from './events.js';

const seed = testSeed();
console.log(`row-group-declarations seed=${seed} (replay with FORMAT_TEST_SEED=${seed})`);

function events(count: number): TieredEvent[] {
  return buildEvents(seed, { count }).map((event, i) => ({ ...event, seq: i + 1, term: 1, decision: i % 5 === 0 ? 'DENY' : 'ALLOW' }));
}

async function exactFooter(bytes: Uint8Array): Promise<ParquetFooter> {
  return readAuditParquetFooter(bytesSource(bytes), { exactStatistics: true });
}

/**
 * The file with its row groups copied byte for byte (data pages untouched) under a footer that
 * `alter` changed, and with `sketch` in place of a group's sketch where it gives one.
 */
async function withFooter(bytes: Uint8Array, alter: (footer: ParquetFooter) => void, sketch?: (index: number) => RowGroupSketch | undefined): Promise<Uint8Array> {
  const footer = await exactFooter(bytes);
  const sketches = rowGroupSketches(footer);
  alter(footer);
  const assembler = new ParquetFileAssembler();
  footer.row_groups.forEach((_, index) => assembler.addRowGroup({ bytes, footer, index, sketch: sketch?.(index) ?? (sketches[index] as RowGroupSketch) }));
  return assembler.finish();
}

function statisticsOf(footer: ParquetFooter, group: number, column: string) {
  const chunk = footer.row_groups[group]?.columns.find((c) => c.meta_data?.path_in_schema[0] === column);
  const statistics = chunk?.meta_data?.statistics;
  if (statistics === undefined) throw new Error(`no statistics for ${column} in row group ${group}`);
  return statistics;
}

async function refusal(bytes: Uint8Array): Promise<AuditError> {
  try {
    await readWholeAuditColumns(bytesSource(bytes));
  } catch (err) {
    return err as AuditError;
  }
  throw new Error('the file was accepted');
}

describe('checkRowGroupDeclarations (through readWholeAuditColumns)', () => {
  const all = events(1_200);
  const file = encodeAuditParquet(all, { rowGroupSize: 500 });
  /** The events of row group `index` as the file holds them (the writer orders rows by time). */
  const groupOf = async (index: number): Promise<TieredEvent[]> => {
    const { seq } = await readWholeAuditColumns(bytesSource(file));
    const bySeq = new Map(all.map((e) => [e.seq, e]));
    return seq.slice(index * 500, index * 500 + 500).map((s) => bySeq.get(s) as TieredEvent);
  };

  it('accepts the files our writer makes, copied as they are', async () => {
    await expect(readWholeAuditColumns(bytesSource(file))).resolves.toMatchObject({ rowCount: 1_200 });
    await expect(readWholeAuditColumns(bytesSource(await withFooter(file, () => undefined)))).resolves.toMatchObject({ rowCount: 1_200 });
  });

  it('refuses a row group whose ts statistics were narrowed, naming the column and a hidden row', async () => {
    const group = await groupOf(1);
    const latest = group.reduce((a, b) => (b.timestamp > a.timestamp ? b : a));
    const altered = await withFooter(file, (footer) => {
      statisticsOf(footer, 1, 'ts').max_value = BigInt(latest.timestamp - 1);
    });
    const err = await refusal(altered);
    expect(err.code).toBe(AuditErrorCode.INTEGRITY_MISMATCH);
    expect(err.message).toContain('row group 1: column ts: its statistics declare a greatest value of');
    expect(err.message).toContain(`the row with seq ${latest.seq} is outside it`);
    expect(err.message).toContain('footer statistics');
  });

  it('refuses a string column whose least value was raised past a row (user_id)', async () => {
    const group = await groupOf(0);
    const least = [...group].sort((a, b) => Buffer.compare(Buffer.from(a.userId), Buffer.from(b.userId)))[0] as TieredEvent;
    const altered = await withFooter(file, (footer) => {
      statisticsOf(footer, 0, 'user_id').min_value = Buffer.from(`${least.userId}\u0000`);
    });
    const err = await refusal(altered);
    expect(err.code).toBe(AuditErrorCode.INTEGRITY_MISMATCH);
    expect(err.message).toMatch(/^row group 0: column user_id: its statistics declare a least value of /);
    expect(err.message).toContain(`the row with seq ${group.find((e) => e.userId === least.userId)?.seq} is outside it`);
  });

  it('refuses a null count that hides rows from IS NULL / IS NOT NULL', async () => {
    const altered = await withFooter(file, (footer) => {
      statisticsOf(footer, 2, 'decision').null_count = 5n;
    });
    const err = await refusal(altered);
    expect(err.message).toContain('row group 2: column decision: its statistics declare 5 nulls, it holds 0');
  });

  it('refuses a sketch that leaves out a user of its group, naming a row that holds it', async () => {
    const group = await groupOf(1);
    const victim = group[137] as TieredEvent;
    const others = group.filter((e) => e.userId !== victim.userId);
    const forged = RowGroupSketch.of(others.map(toRow));
    const err = await refusal(await withFooter(file, () => undefined, (index) => (index === 1 ? new RowGroupSketch(group.length, forged.decisions, forged.actions, forged.bloom) : undefined)));
    expect(err.code).toBe(AuditErrorCode.INTEGRITY_MISMATCH);
    expect(err.message).toMatch(/^row group 1: its row-group sketch leaves out a value, which the row with seq \d+ holds/);
    const seq = Number(/seq (\d+)/.exec(err.message)?.[1]);
    // The row named holds something the forged sketch lacks: the victim's user, or a trigram only its rows had.
    expect(group.some((e) => e.seq === seq)).toBe(true);
  });

  it('refuses a sketch without a decision its group holds', async () => {
    const group = await groupOf(0);
    const real = rowGroupSketches(await exactFooter(file))[0] as RowGroupSketch;
    const forged = new RowGroupSketch(real.rows, ['ALLOW'], real.actions, real.bloom);
    const err = await refusal(await withFooter(file, () => undefined, (index) => (index === 0 ? forged : undefined)));
    expect(err.message).toContain(`row group 0: its row-group sketch leaves out the decision "DENY", which the row with seq ${group.find((e) => e.decision === 'DENY')?.seq} holds`);
  });

  it('refuses a user_id Bloom filter that leaves out a user of its group (other engines skip the group for user_id = it)', async () => {
    const footer = await exactFooter(file);
    const meta = footer.row_groups[1]?.columns.find((c) => c.meta_data?.path_in_schema[0] === 'user_id')?.meta_data;
    if (meta?.bloom_filter_offset === undefined || meta.bloom_filter_length === undefined) throw new Error('the file has no user_id Bloom filter');
    const from = Number(meta.bloom_filter_offset);
    const to = from + meta.bloom_filter_length;
    const filter = readBloomFilter({ view: new DataView(file.buffer, file.byteOffset + from, to - from), offset: 0 });
    if (filter === undefined) throw new Error('the Bloom filter is unreadable');
    // Every bit cleared: the filter says no user is in the group.
    const altered = file.slice();
    altered.fill(0, to - filter.numBytes, to);
    const group = await groupOf(1);
    const err = await refusal(altered);
    expect(err.code).toBe(AuditErrorCode.INTEGRITY_MISMATCH);
    expect(err.message).toBe(
      `row group 1: column user_id: its Bloom filter leaves out ${JSON.stringify(group[0]?.userId)}, which the row with seq ${group[0]?.seq} holds: a search that skips row groups by their Bloom filters would miss it; the file's Bloom filter was altered`,
    );
  });

  it('refuses a column index whose page bound was narrowed (engines skip that page by it)', async () => {
    // Our writer writes no column index, but a file another engine rewrote (a compaction) may
    // carry one: a file of our columns written with one on ts, in pages of a few rows.
    const rows = all.slice(0, 300);
    const text = (name: string, pick: (e: TieredEvent) => string) => ({ name, data: rows.map(pick), type: 'STRING' as const });
    const columnData = [
      text('event_id', (e) => e.eventId),
      text('source', (e) => e.source),
      text('user_id', (e) => e.userId),
      text('action', (e) => e.action),
      text('resource', (e) => e.resource),
      text('tables', (e) => e.tables.join(',')),
      text('query', (e) => e.query),
      text('details', (e) => e.details),
      { name: 'ts', data: rows.map((e) => BigInt(e.timestamp)), type: 'INT64' as const, columnIndex: true },
      { name: 'event_time', data: rows.map((e) => BigInt(e.timestamp) * 1000n), type: 'INT64' as const },
      text('decision', (e) => e.decision),
      { name: 'ingest_ts', data: rows.map((e) => BigInt(e.ingestTs)), type: 'INT64' as const },
      { name: 'seq', data: rows.map((e) => BigInt(e.seq as number)), type: 'INT64' as const },
    ];
    const written = new Uint8Array(parquetWriteBuffer({ columnData, pageSize: 400 }));
    await expect(readWholeAuditColumns(bytesSource(written))).resolves.toMatchObject({ rowCount: 300 });
    const footer = await exactFooter(written);
    const chunk = footer.row_groups[0]?.columns.find((c) => c.meta_data?.path_in_schema[0] === 'ts');
    if (chunk?.column_index_offset === undefined || chunk.column_index_length === undefined) throw new Error('the file has no ts column index');
    const from = Number(chunk.column_index_offset);
    const region = written.subarray(from, from + chunk.column_index_length);
    const element = footer.schema.find((e) => e.name === 'ts');
    if (element === undefined) throw new Error('no ts in the schema');
    const index = readColumnIndex({ view: new DataView(region.buffer, region.byteOffset, region.byteLength), offset: 0 }, element);
    expect(index.max_values.length).toBeGreaterThan(2);
    const page = 1;
    const max = index.max_values[page] as unknown as bigint;
    // Page 1's greatest ts, as stored (8 bytes, little-endian), one less.
    const stored = Buffer.alloc(8);
    stored.writeBigInt64LE(max);
    const at = Buffer.from(region).indexOf(stored);
    expect(at).toBeGreaterThanOrEqual(0);
    const altered = written.slice();
    Buffer.from(altered.buffer, altered.byteOffset + from + at, 8).writeBigInt64LE(max - 1n);
    const holder = rows.find((e) => BigInt(e.timestamp) === max);
    const err = await refusal(altered);
    expect(err.code).toBe(AuditErrorCode.INTEGRITY_MISMATCH);
    expect(err.message).toBe(
      `row group 0: column ts, page ${page}: its column index declares a greatest value of ${max - 1n}; the row with seq ${holder?.seq} is outside it: a search that skips pages by their page indexes would miss it; the file's column index was altered`,
    );
  });

  it('accepts every file our writer makes from arbitrary text (astral characters, lone surrogates, empty values)', async () => {
    const text = fc.string({ unit: 'binary', maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ user: text, resource: text, query: text, table: text }), { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 15 }), async (values, rowGroupSize) => {
        const base = events(values.length);
        const rows = base.map((event, i) => {
          const v = values[i] as (typeof values)[number];
          return { ...event, userId: v.user, resource: v.resource, query: v.query, tables: v.table === '' ? [] : [v.table.replaceAll(',', ';')] };
        });
        const bytes = encodeAuditParquet(rows, { rowGroupSize });
        const columns = await readWholeAuditColumns(bytesSource(bytes));
        expect(columns.rowCount).toBe(rows.length);
      }),
      { seed, numRuns: 60 },
    );
  });
});
