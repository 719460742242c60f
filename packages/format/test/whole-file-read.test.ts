// Goal: reading a whole tiered file column by column (the verifier's read) gives exactly the
// events the row reader gives — over several row groups and pages, with the chain and erased
// columns, for the committed fixtures (older layouts, SNAPPY pages) — and refuses what the row
// reader refuses. The same holds for its columns (readWholeAuditColumns), which also name the
// same bad value the row reader names when a file holds several.
import { readFile } from 'node:fs/promises';
import { AuditErrorCode } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { bytesSource } from '../src/byte-source.js';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { AUDIT_COLUMNS, joinTables, type TieredEvent } from '../src/audit-columns.js';
import { auditIcebergSchema, icebergParquetKvMetadata } from '../src/iceberg-schema.js';
import { parquetColumnElement } from '../src/parquet-schema.js';
import { readAuditParquet, readWholeAuditColumns, readWholeAuditParquet, type AuditFileColumns } from '../src/parquet-reader.js';
import { auditRows, encodeAuditParquet } from '../src/parquet-writer.js';
import { buildEvents, testSeed } from './events.js';

const seed = testSeed();
console.log(`whole-file-read seed=${seed} (replay with FORMAT_TEST_SEED=${seed})`);

/** Generated events with the chain columns set, some erased, some with a source id and seq. */
function chainedEvents(count: number) {
  return buildEvents(seed, { count }).map((event, i) => ({
    ...event,
    recordHash: 'a'.repeat(64),
    chainHash: i.toString(16).padStart(64, '0'),
    fieldCheck: 'b'.repeat(56),
    ...(i % 7 === 0 ? { erased: { query: 'c'.repeat(64) } } : {}),
    ...(i % 3 === 0 ? { sourceId: `plugin-${i % 5}`, sourceSeq: i } : {}),
  }));
}

describe('readWholeAuditParquet', () => {
  it('reads exactly what readAuditParquet reads, row group after row group', async () => {
    const events = chainedEvents(2_500);
    const bytes = encodeAuditParquet(events, { rowGroupSize: 700 });
    const whole = await readWholeAuditParquet(bytesSource(bytes));
    expect(whole).toHaveLength(events.length);
    expect(whole).toEqual(await readAuditParquet(bytesSource(bytes)));
    expect(whole.some((e) => e.erased !== undefined) && whole.some((e) => e.sourceSeq !== undefined) && whole.some((e) => e.sourceSeq === undefined)).toBe(true);
  });

  it('reads the committed fixtures (earlier layouts, SNAPPY pages) as the row reader does', async () => {
    for (const name of ['three-events.parquet', 'three-events-snappy.parquet', 'three-events-before-sketch.parquet']) {
      const bytes = new Uint8Array(await readFile(new URL(`./fixtures/${name}`, import.meta.url)));
      expect(await readWholeAuditParquet(bytesSource(bytes)), name).toEqual(await readAuditParquet(bytesSource(bytes)));
    }
  });

  it('refuses bytes that are not Parquet with a coded error', async () => {
    await expect(readWholeAuditParquet(bytesSource(new TextEncoder().encode('not parquet at all, not even close')))).rejects.toMatchObject({ code: AuditErrorCode.TABLE_INVALID });
  });
});

/** Row i of a file's columns as the event the row reader gives (the columns' summaries are not a column). */
function eventAt(columns: AuditFileColumns, i: number): TieredEvent {
  const event: Record<string, unknown> = {};
  for (const [name, values] of Object.entries(columns)) {
    if (name === 'rowCount' || name === 'summaries') continue;
    const value = (values as unknown[])[i];
    if (value !== undefined) event[name] = name === 'tables' ? (value === '' ? [] : (value as string).split(',')) : value;
  }
  return event as unknown as TieredEvent;
}

describe('readWholeAuditColumns', () => {
  it('holds, row by row, exactly what readWholeAuditParquet reads (tables as the stored text)', async () => {
    const events = chainedEvents(1_500);
    const bytes = encodeAuditParquet(events, { rowGroupSize: 400 });
    const rows = await readWholeAuditParquet(bytesSource(bytes));
    const columns = await readWholeAuditColumns(bytesSource(bytes));
    expect(columns.rowCount).toBe(rows.length);
    expect(Array.from({ length: columns.rowCount }, (_, i) => eventAt(columns, i))).toEqual(rows);
    expect(columns.tables).toEqual(rows.map((row) => joinTables(row.tables)));
  });

  it('reads the committed fixtures (a layout without the chain columns reads them as absent)', async () => {
    for (const name of ['three-events.parquet', 'three-events-snappy.parquet', 'three-events-before-sketch.parquet']) {
      const bytes = new Uint8Array(await readFile(new URL(`./fixtures/${name}`, import.meta.url)));
      const columns = await readWholeAuditColumns(bytesSource(bytes));
      expect(Array.from({ length: columns.rowCount }, (_, i) => eventAt(columns, i)), name).toEqual(await readWholeAuditParquet(bytesSource(bytes)));
    }
  });

  it('refuses what the row reader refuses, naming the value the row reader names first', async () => {
    await expect(readWholeAuditColumns(bytesSource(new TextEncoder().encode('not parquet at all, not even close')))).rejects.toMatchObject({ code: AuditErrorCode.TABLE_INVALID });
    // Row 0 holds two bad values: ts as INT32, and decision MAYBE. Row by row, ts comes first;
    // column by column, decision would be converted first.
    const text = (value: string) => ({ data: [value, value], type: 'STRING' as const });
    const columnData = [
      { name: 'event_id', ...text('e') },
      { name: 'source', ...text('trino') },
      { name: 'user_id', ...text('alice') },
      { name: 'action', ...text('data:Select') },
      { name: 'resource', ...text('r') },
      { name: 'tables', ...text('t') },
      { name: 'query', ...text('q') },
      { name: 'details', ...text('') },
      { name: 'ts', data: [1, 2], type: 'INT32' as const },
      { name: 'event_time', data: [1000n, 2000n], type: 'INT64' as const },
      { name: 'decision', data: ['MAYBE', 'ALLOW'], type: 'STRING' as const },
      { name: 'ingest_ts', data: [1n, 2n], type: 'INT64' as const },
    ];
    const bytes = new Uint8Array(parquetWriteBuffer({ columnData }));
    const byRows = await readWholeAuditParquet(bytesSource(bytes)).catch((err: unknown) => err);
    expect(byRows).toMatchObject({ code: AuditErrorCode.TABLE_INVALID, message: 'tiered file column ts holds number, not INT64' });
    await expect(readWholeAuditColumns(bytesSource(bytes))).rejects.toMatchObject({ code: AuditErrorCode.TABLE_INVALID, message: 'tiered file column ts holds number, not INT64' });
  });

  it('refuses a row whose event_time is not its ts (the record hash covers ts; engines partition and filter by event_time)', async () => {
    const events = chainedEvents(3);
    const text = (name: string, pick: (e: TieredEvent) => string) => ({ name, data: events.map(pick), type: 'STRING' as const });
    const columnData = (eventTimes: bigint[]) => [
      text('event_id', (e) => e.eventId),
      text('source', (e) => e.source),
      text('user_id', (e) => e.userId),
      text('action', (e) => e.action),
      text('resource', (e) => e.resource),
      text('tables', (e) => joinTables(e.tables)),
      text('query', (e) => e.query),
      text('details', (e) => e.details),
      { name: 'ts', data: events.map((e) => BigInt(e.timestamp)), type: 'INT64' as const },
      { name: 'event_time', data: eventTimes, type: 'INT64' as const },
      text('decision', (e) => e.decision),
      { name: 'ingest_ts', data: events.map((e) => BigInt(e.ingestTs)), type: 'INT64' as const },
      { name: 'seq', data: events.map((e) => BigInt(e.seq)), type: 'INT64' as const },
    ];
    const right = events.map((e) => BigInt(e.timestamp) * 1000n);
    expect((await readWholeAuditColumns(bytesSource(new Uint8Array(parquetWriteBuffer({ columnData: columnData(right) }))))).rowCount).toBe(3);
    // Row 1 moved a day later for every engine that reads event_time (its partition and filters).
    const moved = right.map((micros, i) => (i === 1 ? micros + 86_400_000_000n : micros));
    await expect(readWholeAuditColumns(bytesSource(new Uint8Array(parquetWriteBuffer({ columnData: columnData(moved) }))))).rejects.toMatchObject({
      code: AuditErrorCode.TABLE_INVALID,
      message: `tiered file row 1 (seq ${events[1]!.seq}) has event_time ${right[1]! + 86_400_000_000n} µs, not its ts ${events[1]!.timestamp} ms: altered (the record hash covers ts, engines read event_time)`,
    });
    // Row 2's event_time made null: engines filtering on it never return the row (review).
    const hidden = right.map((micros, i) => (i === 2 ? null : micros));
    await expect(readWholeAuditColumns(bytesSource(new Uint8Array(parquetWriteBuffer({ columnData: columnData(hidden as bigint[]) }))))).rejects.toMatchObject({
      code: AuditErrorCode.TABLE_INVALID,
      message: `tiered file row 2 (seq ${events[2]!.seq}) has event_time null, not its ts ${events[2]!.timestamp} ms: altered (the record hash covers ts, engines read event_time)`,
    });
  });
});

// Goal: the verifier's read refuses a file whose field ids make readers that resolve columns by
// id read another column than it reads by name — another column carrying one of auditlake's
// ids, or an `iceberg.schema` footer (icebird maps ids to names by it) that swaps two of them —
// and takes ids it does not know (another engine's columns).
describe('field ids readers resolve columns by', () => {
  const events = buildEvents(seed, { count: 40 }).map((event, i) => ({ ...event, seq: i + 1, term: 1 }));
  const refusal = async (bytes: Uint8Array) => readWholeAuditColumns(bytesSource(bytes)).then(() => undefined, (err: unknown) => err as { code: string; message: string });

  /** A file of the first layout's twelve columns (by parquetColumnElement) plus `alias`, a copy of resource under `aliasId`; user_id given no id when `userIdWithoutId`. */
  function withAlias(aliasId: number, userIdWithoutId: boolean): Uint8Array {
    const rows = auditRows(events);
    const columns = AUDIT_COLUMNS.filter((column) => column.fieldId <= 12);
    const elements = columns.map((column) => {
      const { field_id: _id, ...withoutId } = parquetColumnElement(column);
      return userIdWithoutId && column.name === 'user_id' ? withoutId : parquetColumnElement(column);
    });
    const alias = { ...parquetColumnElement(AUDIT_COLUMNS.find((column) => column.name === 'resource')!), name: 'alias', field_id: aliasId };
    const data = (name: string) => rows.map((row) => (typeof row[name as keyof typeof row] === 'number' ? BigInt(row[name as keyof typeof row] as number) : row[name as keyof typeof row]));
    return new Uint8Array(
      parquetWriteBuffer({
        columnData: [...columns.map((column) => ({ name: column.name, data: data(column.name) })), { name: 'alias', data: data('resource') }],
        schema: [{ name: 'table', num_children: elements.length + 1 }, ...elements, alias],
      }),
    );
  }

  it("refuses another column under one of auditlake's ids, and takes one under an id of its own", async () => {
    expect(await refusal(withAlias(99, false))).toBeUndefined();
    expect(await refusal(withAlias(3, true))).toMatchObject({ code: AuditErrorCode.TABLE_INVALID, message: "tiered file column alias has field id 3, which is user_id's: readers resolving columns by id would read it as user_id" });
  });

  it('refuses an iceberg.schema footer that puts two of its columns under each other\'s ids, or that is not JSON', async () => {
    const schema = auditIcebergSchema();
    expect(await refusal(encodeAuditParquet(events, { kvMetadata: icebergParquetKvMetadata(schema) }))).toBeUndefined();
    for (const field of schema.fields) field.name = field.name === 'user_id' ? 'resource' : field.name === 'resource' ? 'user_id' : field.name;
    expect(await refusal(encodeAuditParquet(events, { kvMetadata: icebergParquetKvMetadata(schema) }))).toMatchObject({
      code: AuditErrorCode.TABLE_INVALID,
      message: 'tiered file footer iceberg.schema puts "resource" under field id 3; auditlake writes user_id under 3: readers mapping ids by it would show another column under that name',
    });
    expect(await refusal(encodeAuditParquet(events, { kvMetadata: { 'iceberg.schema': '{"fields":' } }))).toMatchObject({ message: 'tiered file footer iceberg.schema is not JSON' });
  });
});
