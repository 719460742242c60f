// Goal: a compaction over sweep-size files (copied byte for byte) and small ones (re-encoded
// together) leaves every event exactly once with every column unchanged — for icebird and
// DuckDB over an Iceberg table, for DuckDB over the files a Parquet-mode reader lists — with
// the copied row groups really copied, and each new file's Iceberg record exact (equal to the
// record computed from its decoded rows).
import { mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { bytesSource, COPY_ROW_GROUP_ROWS_MIN, dataFileFromParquet, readAuditParquetFooter, readWholeAuditParquet } from '@auditlake/format';
import type { StoredEvent } from '@auditlake/model';
import { icebergRead } from 'icebird';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  commitIcebergBatch,
  commitParquetBatch,
  compactIcebergTable,
  compactParquetLocation,
  currentManifests,
  ensureIcebergTable,
  loadIcebergTable,
  ParquetTierSource,
  resolveIcebergTable,
  TierEncodePool,
  type IcebergTableRef,
  type ObjectStore,
} from '../src/index.js';
import { routeAwsS3To, useEmbeddedS3 } from '../src/testing/index.js';

const BUCKET = 'copy';
const T0 = Date.UTC(2026, 4, 1);
const DAY_MS = 86_400_000;
const CREDENTIALS = { accessKeyId: 'ALCOMPACTIONCOPY0001', secretAccessKey: 'compaction-copy-secret-0123456789abcde' };
/** Sweep-size commits: 2 × this many events, alternating two days, so each day's file is one group of this many rows. */
const BIG = COPY_ROW_GROUP_ROWS_MIN + 500;
const SMALL = 60;
const s3 = useEmbeddedS3('compaction-copy-', BUCKET, CREDENTIALS);
let encoder: TierEncodePool;

beforeAll(() => {
  encoder = new TierEncodePool();
});

afterAll(async () => {
  await encoder?.close();
});

/** Events firstSeq.. over two days (alternating), with the chain columns and long text. */
function events(firstSeq: number, count: number): StoredEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const seq = firstSeq + i;
    return {
      eventId: `e${seq}`,
      userId: `u${seq % 7}`,
      source: 'trino',
      action: seq % 5 === 0 ? 'data:Write' : 'data:Select',
      resource: `cat.db.t${seq % 11}`,
      decision: seq % 3 === 0 ? 'DENY' : 'ALLOW',
      tables: [`cat.db.t${seq % 11}`],
      query: `SELECT * FROM cat.db.t${seq % 11} WHERE id = ${seq} -- ${'ü'.repeat(seq % 40)}`,
      details: seq % 13 === 0 ? '😀'.repeat(20 + (seq % 7)) : '',
      timestamp: T0 + (seq % 2) * DAY_MS + seq,
      ingestTs: T0 + 10 * DAY_MS + seq,
      seq,
      term: 1,
      recordHash: seq.toString(16).padStart(64, '0'),
      chainHash: (seq * 7).toString(16).padStart(64, 'a'),
    };
  });
}

/** Commits: two sweep-size batches, then small ones; returns how many events. */
function batches(): StoredEvent[][] {
  const out = [events(1, 2 * BIG), events(1 + 2 * BIG, 2 * BIG)];
  for (let c = 0; c < 8; c++) out.push(events(1 + 4 * BIG + c * SMALL, SMALL));
  return out;
}

const fence = { term: 1, mayCommit: () => true };

async function download(objects: ObjectStore, keys: readonly string[], tag: string): Promise<string[]> {
  const local = await mkdtemp(join(s3.dir, `${tag}-`));
  const paths: string[] = [];
  for (const [i, key] of keys.entries()) {
    const target = join(local, `${i}.parquet`);
    await writeFile(target, await objects.get(key));
    paths.push(target);
  }
  return paths;
}

/** Rows in `a` not in `b` and in `b` not in `a` (every column, duplicates counted), per DuckDB. */
async function duckdbDifference(a: string[], b: string[]): Promise<{ aRows: number; bRows: number; onlyA: number; onlyB: number }> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const list = (paths: string[]) => `[${paths.map((p) => `'${p}'`).join(',')}]`;
    const n = async (sql: string) => Number((await connection.runAndReadAll(sql)).getRowObjectsJson()[0]?.['n']);
    return {
      aRows: await n(`SELECT count(*) AS n FROM read_parquet(${list(a)})`),
      bRows: await n(`SELECT count(*) AS n FROM read_parquet(${list(b)})`),
      onlyA: await n(`SELECT count(*) AS n FROM (SELECT * FROM read_parquet(${list(a)}) EXCEPT ALL SELECT * FROM read_parquet(${list(b)}))`),
      onlyB: await n(`SELECT count(*) AS n FROM (SELECT * FROM read_parquet(${list(b)}) EXCEPT ALL SELECT * FROM read_parquet(${list(a)}))`),
    };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** icebird resolves s3:// to AWS hosts and cannot sign: point those requests at the local endpoint, signed, for this test. */
function routeS3(): void {
  onTestFinished(routeAwsS3To(s3.server.url, CREDENTIALS));
}

async function icebirdRows(table: IcebergTableRef): Promise<Array<Record<string, unknown>>> {
  routeS3();
  const rows = (await icebergRead({ tableUrl: table.location })) as Array<Record<string, unknown>>;
  return rows.sort((a, b) => (String(a['event_id']) < String(b['event_id']) ? -1 : 1));
}

async function liveIcebergKeys(objects: ObjectStore, table: IcebergTableRef) {
  const loaded = (await loadIcebergTable(objects, table))!;
  return (await currentManifests(objects, table, loaded.metadata)).flatMap((m) => m.entries.filter((e) => e.status !== 2).map((e) => e.data_file));
}

/** Row counts of each row group of a file. */
async function groupRows(bytes: Uint8Array): Promise<number[]> {
  return (await readAuditParquetFooter(bytesSource(bytes))).row_groups.map((g) => Number(g.num_rows));
}

describe('compaction copying row groups', () => {
  it('Iceberg: sweep-size groups copied, small ones merged; icebird and DuckDB read every event once with every column unchanged; records exact', async () => {
    const table = resolveIcebergTable('cat.ops.copy', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
    const objects = s3.connections.bucket('s3', BUCKET);
    let loaded = await ensureIcebergTable(objects, table, T0);
    for (const batch of batches()) {
      await commitIcebergBatch(objects, table, loaded, batch, { ...fence, nowMs: Date.now(), writerId: 'test' });
      loaded = (await loadIcebergTable(objects, table))!;
    }
    const total = 4 * BIG + 8 * SMALL;
    const rowsBefore = await icebirdRows(table);
    expect(rowsBefore).toHaveLength(total);
    const filesBefore = await liveIcebergKeys(objects, table);
    const pathsBefore = await download(objects, filesBefore.map((f) => f.file_path.slice(`s3://${BUCKET}/`.length)), 'before');

    const result = await compactIcebergTable({ objects, table, fence, now: Date.now, metadataLogEntriesMax: 100, encoder }, loaded, 64 * 1024 * 1024);
    expect(result).toMatchObject({ filesRewritten: filesBefore.length, filesAdded: 2 });

    const filesAfter = await liveIcebergKeys(objects, table);
    expect(filesAfter).toHaveLength(2);
    for (const file of filesAfter) {
      const bytes = await objects.get(file.file_path.slice(`s3://${BUCKET}/`.length));
      // Per day: the two sweep-size groups as they were, then the small batches' rows in one group.
      expect(await groupRows(bytes)).toEqual([BIG, BIG, 4 * SMALL]);
      expect(file).toEqual(dataFileFromParquet({ events: await readWholeAuditParquet(bytesSource(bytes)), filePath: file.file_path, fileSizeBytes: bytes.byteLength, parquetBytes: bytes }));
    }
    expect(await icebirdRows(table)).toEqual(rowsBefore);
    const pathsAfter = await download(objects, filesAfter.map((f) => f.file_path.slice(`s3://${BUCKET}/`.length)), 'after');
    expect(await duckdbDifference(pathsBefore, pathsAfter)).toEqual({ aRows: total, bRows: total, onlyA: 0, onlyB: 0 });
  });

  it('Parquet: the same, through the compaction marker; the marker states each file exactly', async () => {
    const location = { bucket: BUCKET, prefix: 'pq' };
    const objects = s3.connections.bucket('s3', BUCKET);
    let afterSeq = 0;
    for (const batch of batches()) {
      await commitParquetBatch(objects, location, batch, { term: 1, nowMs: T0, afterSeq, mayCommit: () => true });
      afterSeq += batch.length;
    }
    const source = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/pq`, connectionId: 's3' });
    onTestFinished(() => source.close());
    const before = await source.listFiles();
    const pathsBefore = await download(objects, before.map((f) => f.key), 'pq-before');

    const result = await compactParquetLocation({ objects, location, now: Date.now, fence, encoder }, 64 * 1024 * 1024);
    expect(result).toMatchObject({ filesRewritten: before.length, filesAdded: 2, daysLost: 0 });

    const after = await new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/pq`, connectionId: 's3' }).listFiles();
    expect(after).toHaveLength(2);
    for (const file of after) {
      const bytes = await objects.get(file.key);
      expect(await groupRows(bytes)).toEqual([BIG, BIG, 4 * SMALL]);
      const read = await readWholeAuditParquet(bytesSource(bytes));
      expect({ rows: file.rows, bytes: file.bytes, tsMin: file.tsMin, tsMax: file.tsMax }).toEqual({
        rows: read.length,
        bytes: bytes.byteLength,
        tsMin: Math.min(...read.map((e) => e.timestamp)),
        tsMax: Math.max(...read.map((e) => e.timestamp)),
      });
    }
    const total = 4 * BIG + 8 * SMALL;
    const pathsAfter = await download(objects, after.map((f) => f.key), 'pq-after');
    expect(await duckdbDifference(pathsBefore, pathsAfter)).toEqual({ aRows: total, bRows: total, onlyA: 0, onlyB: 0 });
  });
});
