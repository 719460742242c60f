// Goal: a committed tiny Parquet file decodes to its committed JSON, and today's writer still produces those exact bytes, so any change in bytes or meaning of the format is caught and reviewed; a file written before the chain columns still reads, with them absent.
// After a deliberate writer change (or a hyparquet-writer upgrade), regenerate with
// `FORMAT_UPDATE_GOLDEN=1 npx vitest run test/golden.test.ts`, check the JSON diff, commit both.
import { readFileSync, writeFileSync } from 'node:fs';
import type { StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import type { TieredEvent } from '../src/audit-columns.js';
import { AuditParquetFile } from '../src/audit-parquet-file.js';
import { bytesSource } from '../src/byte-source.js';
import { parquetFileStats, readAuditParquet } from '../src/parquet-reader.js';
import { encodeAuditParquet } from '../src/parquet-writer.js';
import { rowGroupSketches, sketchProbe } from '../src/row-group-sketch.js';

const PARQUET = new URL('./fixtures/three-events.parquet', import.meta.url);
const JSON_FILE = new URL('./fixtures/three-events.json', import.meta.url);
/**
 * The same events as written before tier files moved from SNAPPY to GZIP and before the chain
 * columns (ids 13..20) existed: buckets still hold such files.
 */
const SNAPPY_PARQUET = new URL('./fixtures/three-events-snappy.parquet', import.meta.url);
const SNAPPY_JSON = new URL('./fixtures/three-events-snappy.json', import.meta.url);
/**
 * The same events as written before footers held row-group sketches (GZIP, still without the
 * chain columns): buckets still hold such files.
 */
const BEFORE_SKETCH_PARQUET = new URL('./fixtures/three-events-before-sketch.parquet', import.meta.url);

/** The fixture's events, given out of time order (the writer sorts). */
const EVENTS: StoredEvent[] = [
  {
    eventId: '019a6f2e-8c00-7000-8000-000000000002',
    userId: 'bob@example.com',
    source: 'spark',
    action: 'data:Write',
    resource: 'hive.sales.secret',
    decision: 'DENY',
    tables: ['hive.sales.secret', 'hive.sales.orders', 'ice.ops.監査'],
    query: 'INSERT INTO hive.sales.secret SELECT * FROM hive.sales.orders',
    details: 'denied: no grant on hive.sales.secret 🔒',
    timestamp: 1_777_777_777_777,
    ingestTs: 1_777_777_778_000,
    seq: 2,
    term: 3,
    sourceId: 'spark-plugin-7',
    sourceSeq: 41,
    recordHash: '1'.repeat(64),
    chainHash: '2'.repeat(64),
    fieldCheck: '3'.repeat(56),
    erased: { userId: '4'.repeat(64) },
  },
  {
    eventId: '019a6f2e-8c00-7000-8000-000000000001',
    userId: 'alice',
    source: 'trino',
    action: 'data:Select',
    resource: 'hive.sales.orders',
    decision: 'ALLOW',
    tables: ['hive.sales.orders'],
    query: "SELECT count(*) FROM hive.sales.orders WHERE region = 'Zürich'",
    details: '',
    timestamp: 1_777_777_700_000,
    ingestTs: 1_777_777_700_001,
    seq: 1,
    term: 3,
    recordHash: 'a'.repeat(64),
    chainHash: 'b'.repeat(64),
    fieldCheck: 'c'.repeat(56),
  },
  {
    eventId: '019a6f2e-8c00-7000-8000-000000000003',
    userId: 'admin',
    source: 'auditlake',
    action: 'settings:Update',
    resource: '',
    decision: '',
    tables: [],
    query: '',
    details: '{"audit.tier.mode":"parquet"}',
    timestamp: 1_777_777_800_000,
    ingestTs: 1_777_777_800_000,
    seq: 3,
    term: 3,
  },
];

interface Golden {
  rows: number;
  rowGroups: { rows: number; tsMin: number | undefined; tsMax: number | undefined }[];
  events: TieredEvent[];
}

function encodeFixture(): Uint8Array {
  return encodeAuditParquet(EVENTS, { rowGroupSize: 2 });
}

if (process.env['FORMAT_UPDATE_GOLDEN'] === '1') {
  const bytes = encodeFixture();
  const stats = await parquetFileStats(bytesSource(bytes));
  const golden: Golden = { ...stats, events: await readAuditParquet(bytesSource(bytes)) };
  writeFileSync(PARQUET, bytes);
  writeFileSync(JSON_FILE, `${JSON.stringify(golden, null, 2)}\n`);
}

describe('golden fixture three-events', () => {
  const bytes = new Uint8Array(readFileSync(PARQUET));
  const golden = JSON.parse(readFileSync(JSON_FILE, 'utf8')) as Golden;

  it('decodes to the committed JSON', async () => {
    expect(await readAuditParquet(bytesSource(bytes))).toEqual(golden.events);
    expect(await parquetFileStats(bytesSource(bytes))).toEqual({ rows: golden.rows, rowGroups: golden.rowGroups });
  });

  it('the committed JSON is the fixture events in time order, every field kept', () => {
    expect(golden.events).toEqual([...EVENTS].sort((a, b) => a.timestamp - b.timestamp));
  });

  it('a file written before row-group sketches (and the chain columns) decodes to the pre-chain JSON and has none, so no group is ever skipped by one', async () => {
    const before = await AuditParquetFile.open(bytesSource(new Uint8Array(readFileSync(BEFORE_SKETCH_PARQUET))));
    const preChain = (JSON.parse(readFileSync(SNAPPY_JSON, 'utf8')) as Golden).events;
    expect(await before.read({})).toEqual(preChain);
    expect(rowGroupSketches(before.footer)).toEqual([undefined, undefined]);
  });

  it('the committed file carries a sketch per row group that tells its groups apart', async () => {
    const sketches = rowGroupSketches((await AuditParquetFile.open(bytesSource(bytes))).footer);
    // Row group 0 holds alice's and bob's events (time order), group 1 the settings change.
    const admits = (filter: Parameters<typeof sketchProbe>[0]) => sketches.map((s) => s!.mayMatch(sketchProbe(filter)!));
    expect(admits({ action: 'all', q: 'tier.mode' })).toEqual([false, true]);
    expect(admits({ action: 'all', q: 'ops.監査' })).toEqual([true, false]);
    expect(admits({ action: 'all', q: 'zürich' })).toEqual([true, false]);
    expect(admits({ action: 'all', user: 'bob@example.com' })).toEqual([true, false]);
    expect(admits({ action: 'all', decision: '' })).toEqual([false, true]);
    expect(admits({ action: 'all', table: 'sales.secret' })).toEqual([true, false]);
  });

  it('the writer still produces exactly the committed bytes, GZIP-compressed', async () => {
    expect((await AuditParquetFile.open(bytesSource(bytes))).footer.row_groups[0]?.columns[0]?.meta_data?.codec).toBe('GZIP');
    expect(Buffer.from(encodeFixture()).equals(Buffer.from(bytes))).toBe(true);
  });
});

describe('golden fixture three-events written with SNAPPY before the chain columns', () => {
  const bytes = new Uint8Array(readFileSync(SNAPPY_PARQUET));
  const golden = JSON.parse(readFileSync(SNAPPY_JSON, 'utf8')) as Golden;

  it('is SNAPPY-compressed, as tier files were before GZIP, and its stats match the JSON', async () => {
    const snappy = bytesSource(bytes);
    expect((await AuditParquetFile.open(snappy)).footer.row_groups[0]?.columns[0]?.meta_data?.codec).toBe('SNAPPY');
    expect(await parquetFileStats(snappy)).toEqual({ rows: golden.rows, rowGroups: golden.rowGroups });
  });

  it('the free-text prefilter reads SNAPPY pages too: a needle in one group only', async () => {
    const file = await AuditParquetFile.open(bytesSource(bytes));
    // Row group 0 holds alice's and bob's events (time order), group 1 the settings change.
    expect(await file.rowGroupMayContainText(0, 'tier.mode', ['query', 'details'])).toBe(false);
    expect(await file.rowGroupMayContainText(0, 'region', ['query'])).toBe(true);
    expect(await file.rowGroupMayContainText(1, 'hive.sales.secret', ['query', 'details'])).toBe(false);
    expect(await file.rowGroupMayContainText(1, 'tier.mode', ['details'])).toBe(true);
  });

  it('still decodes to its committed JSON: the evolved columns read as absent', async () => {
    const events = await readAuditParquet(bytesSource(bytes));
    expect(events).toEqual(golden.events);
    for (const event of events) for (const field of ['seq', 'term', 'sourceId', 'recordHash', 'chainHash', 'fieldCheck', 'erased']) expect(event).not.toHaveProperty(field);
  });

  it('holds the same events as today\'s fixture, less the chain fields', () => {
    const today = [...EVENTS]
      .sort((a, b) => a.timestamp - b.timestamp)
      .map(({ seq: _s, term: _t, sourceId: _i, sourceSeq: _q, recordHash: _r, chainHash: _c, fieldCheck: _f, erased: _e, ...event }) => event);
    expect(golden.events).toEqual(today);
  });
});
