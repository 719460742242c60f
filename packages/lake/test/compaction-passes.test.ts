// Goal: a maintenance run compacts pass after pass — each pass within its byte budget — until no small file is left, in Iceberg and Parquet mode alike: more small files than one pass reads are all merged by one run; a run stops starting passes at its time budget and says how many files it left, and the next run goes on with them; independent readers (icebird, DuckDB) read every event exactly once throughout.
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { StoredEvent } from '@auditlake/model';
import { icebergRead } from 'icebird';
import { describe, expect, it, onTestFinished } from 'vitest';
import { expectNoneLeftToMerge, routeAwsS3To, twoDayEvents, useEmbeddedS3 } from '../src/testing/index.js';
import {
  commitIcebergBatch,
  commitParquetBatch,
  currentManifests,
  ensureIcebergTable,
  loadIcebergTable,
  ParquetTierSource,
  resolveIcebergTable,
  runIcebergMaintenance,
  runParquetMaintenance,
  type IcebergTableRef,
  type MaintenancePolicy,
  type MaintenanceStep,
  type ObjectStore,
  type S3Location,
} from '../src/index.js';

const BUCKET = 'passes';
const T0 = Date.UTC(2026, 4, 1);
const CREDENTIALS = { accessKeyId: 'ALCOMPACTIONPASSES01', secretAccessKey: 'compaction-passes-secret-0123456789abcd' };
const s3 = useEmbeddedS3('compaction-passes-', BUCKET, CREDENTIALS);
const fence = { term: 1, mayCommit: () => true };

/**
 * Sweep commits of this many events, two days each: two small files per commit, of 5,000 rows
 * each as a busy node's sweep writes them (row groups that size are copied whole, so a merged
 * file is as big as its inputs together, as in production; ~60 KB each here).
 */
const COMMITS = 8;
const PER_COMMIT = 10_000;
const SEQ_MAX = COMMITS * PER_COMMIT;
const events = (firstSeq: number, count: number): StoredEvent[] => twoDayEvents(T0, firstSeq, count);

/**
 * Budgets scaled to the sweep files as production's are to them (256 MiB a pass, a 16 MiB
 * target): a pass reads three (of the 16 written), and the target is two, so every sweep file
 * is small, a merged file of two is not, and any two small files fit in one pass.
 */
function scaledPolicy(sweepFileBytes: number): Pick<MaintenancePolicy, 'targetFileSizeBytes' | 'compactionPassBytesMax' | 'removeOrphanFiles' | 'orphanMinAgeMs'> {
  return { targetFileSizeBytes: 2 * sweepFileBytes, compactionPassBytesMax: 3 * sweepFileBytes, removeOrphanFiles: false, orphanMinAgeMs: 3_600_000 };
}

/** A clock that moves a second each time a compaction has written its files (once per Iceberg pass, once per Parquet day). */
function steppingClock(): { now: () => number; onStep: (step: MaintenanceStep) => void } {
  let clock = Date.now();
  return { now: () => clock, onStep: (step) => void (step === 'compaction-written' && (clock += 1000)) };
}

async function duckdbCounts(paths: readonly string[]): Promise<{ rows: number; distinct: number }> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const result = (await connection.runAndReadAll(`SELECT count(*)::INTEGER AS n, count(DISTINCT event_id)::INTEGER AS d FROM read_parquet([${paths.map((p) => `'${p}'`).join(',')}])`)).getRowObjectsJson();
    return { rows: Number(result[0]?.['n']), distinct: Number(result[0]?.['d']) };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** Downloads `keys` for DuckDB. */
async function downloaded(objects: ObjectStore, keys: readonly string[]): Promise<string[]> {
  const local = await mkdtemp(join(s3.dir, 'duck-'));
  const paths: string[] = [];
  for (const [i, key] of keys.entries()) {
    const target = join(local, `${i}.parquet`);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, await objects.get(key));
    paths.push(target);
  }
  return paths;
}

describe('Iceberg compaction passes', () => {
  async function tableWith(name: string): Promise<{ table: IcebergTableRef; objects: ObjectStore }> {
    const table = resolveIcebergTable(`cat.ops.${name}`, new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
    const objects = s3.connections.bucket('s3', BUCKET);
    let loaded = await ensureIcebergTable(objects, table, T0);
    for (let c = 0; c < COMMITS; c++) loaded = (await commitIcebergBatch(objects, table, loaded, events(1 + c * PER_COMMIT, PER_COMMIT), { ...fence, nowMs: Date.now(), writerId: 'test' })).loaded;
    return { table, objects };
  }

  /** The current snapshot's live data files: S3 keys and sizes. */
  async function liveFiles(table: IcebergTableRef, objects: ObjectStore): Promise<Array<{ key: string; bytes: number }>> {
    const loaded = (await loadIcebergTable(objects, table))!;
    return (await currentManifests(objects, table, loaded.metadata)).flatMap((m) =>
      m.entries.filter((e) => e.status !== 2).map((e) => ({ key: e.data_file.file_path.slice(`s3://${BUCKET}/`.length), bytes: e.data_file.file_size_in_bytes })),
    );
  }

  /** icebird resolves s3:// to AWS hosts and cannot sign: point those requests at the local endpoint, signed. */
  function routeS3(): void {
    onTestFinished(routeAwsS3To(s3.server.url, CREDENTIALS));
  }

  /** Every event is read exactly once by icebird (the table's metadata) and by DuckDB (the current snapshot's files). */
  async function expectEveryEventOnce(table: IcebergTableRef, objects: ObjectStore): Promise<void> {
    routeS3();
    const counts = new Map<string, number>();
    for (const row of (await icebergRead({ tableUrl: table.location })) as Array<Record<string, unknown>>) counts.set(String(row['event_id']), (counts.get(String(row['event_id'])) ?? 0) + 1);
    expect(counts.size).toBe(SEQ_MAX);
    for (let seq = 1; seq <= SEQ_MAX; seq++) expect(counts.get(`e${seq}`), `e${seq}`).toBe(1);
    expect(await duckdbCounts(await downloaded(objects, (await liveFiles(table, objects)).map((f) => f.key)))).toEqual({ rows: SEQ_MAX, distinct: SEQ_MAX });
  }

  const base = { snapshotRetainLast: 100, metadataPreviousVersionsMax: 100 };

  it('one run merges more small files than one pass reads: pass after pass until none is left', async () => {
    const { table, objects } = await tableWith('many');
    const sweepFiles = await liveFiles(table, objects);
    expect(sweepFiles).toHaveLength(2 * COMMITS);
    const policy = { ...base, ...scaledPolicy(Math.max(...sweepFiles.map((f) => f.bytes))) };

    const run = await runIcebergMaintenance({ objects, table, fence, now: Date.now }, policy);
    expect(run.compactionPasses).toBeGreaterThan(1);
    expect(run.smallFilesLeft).toBe(0);
    expect(run.filesRewritten).toBeGreaterThanOrEqual(2 * COMMITS);
    const live = await liveFiles(table, objects);
    expect(live.some((f) => sweepFiles.some((s) => s.key === f.key))).toBe(false);
    expectNoneLeftToMerge(live, policy.targetFileSizeBytes);
    await expectEveryEventOnce(table, objects);
  }, 120_000);

  it('a run stops starting passes at its time budget and says how many files it left; the next run goes on with them', async () => {
    const { table, objects } = await tableWith('timed');
    const sweepFiles = await liveFiles(table, objects);
    const policy = { ...base, ...scaledPolicy(Math.max(...sweepFiles.map((f) => f.bytes))) };

    // Each pass takes a second on this clock: past 1.5 s no third pass starts.
    const clock = steppingClock();
    const first = await runIcebergMaintenance({ objects, table, fence, ...clock }, { ...policy, compactionTimeBudgetMs: 1500 });
    expect(first).toMatchObject({ compactionPasses: 2 });
    expect(first.smallFilesLeft).toBeGreaterThan(0);
    // Sweep files are still live: the passes reached part of the first day only.
    expect((await liveFiles(table, objects)).filter((f) => sweepFiles.some((s) => s.key === f.key)).length).toBeGreaterThan(COMMITS);
    await expectEveryEventOnce(table, objects);

    const next = await runIcebergMaintenance({ objects, table, fence, now: Date.now }, policy);
    expect(next.compactionPasses).toBeGreaterThanOrEqual(1);
    expect(next.smallFilesLeft).toBe(0);
    const live = await liveFiles(table, objects);
    expect(live.some((f) => sweepFiles.some((s) => s.key === f.key))).toBe(false);
    expectNoneLeftToMerge(live, policy.targetFileSizeBytes);
    await expectEveryEventOnce(table, objects);
  }, 120_000);

  it('a run that does not compact (deferred) makes no pass and says nothing of the files left', async () => {
    const { table, objects } = await tableWith('deferred');
    const run = await runIcebergMaintenance({ objects, table, fence, now: Date.now }, { ...base, ...scaledPolicy(1024), compact: false });
    expect(run).toMatchObject({ filesRewritten: 0, compactionPasses: 0, smallFilesLeft: null });
  });
});

describe('Parquet compaction passes', () => {
  async function locationWith(name: string): Promise<{ location: S3Location; objects: ObjectStore }> {
    const location = { bucket: BUCKET, prefix: name };
    const objects = s3.connections.bucket('s3', BUCKET);
    for (let c = 0; c < COMMITS; c++) {
      await commitParquetBatch(objects, location, events(1 + c * PER_COMMIT, PER_COMMIT), { term: 1, nowMs: T0, afterSeq: c * PER_COMMIT, mayCommit: () => true });
    }
    return { location, objects };
  }

  /** The files a reader lists (ParquetTierSource, from the markers): keys and sizes. */
  async function liveFiles(location: S3Location): Promise<Array<{ key: string; bytes: number }>> {
    const source = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${location.bucket}/${location.prefix}`, connectionId: 's3' });
    try {
      return (await source.listFiles()).map((file) => ({ key: file.key, bytes: file.bytes ?? 0 }));
    } finally {
      await source.close();
    }
  }

  /** DuckDB over the files a reader lists reads every event exactly once. */
  async function expectEveryEventOnce(location: S3Location, objects: ObjectStore): Promise<void> {
    expect(await duckdbCounts(await downloaded(objects, (await liveFiles(location)).map((f) => f.key)))).toEqual({ rows: SEQ_MAX, distinct: SEQ_MAX });
  }

  it('one run merges more small files than one pass reads: pass after pass until none is left', async () => {
    const { location, objects } = await locationWith('many');
    const sweepFiles = await liveFiles(location);
    expect(sweepFiles).toHaveLength(2 * COMMITS);
    const policy = scaledPolicy(Math.max(...sweepFiles.map((f) => f.bytes)));

    const run = await runParquetMaintenance({ objects, location, fence, now: Date.now }, policy);
    expect(run.compactionPasses).toBeGreaterThan(1);
    expect(run.smallFilesLeft).toBe(0);
    expect(run.filesRewritten).toBeGreaterThanOrEqual(2 * COMMITS);
    const live = await liveFiles(location);
    expect(live.some((f) => sweepFiles.some((s) => s.key === f.key))).toBe(false);
    expectNoneLeftToMerge(live, policy.targetFileSizeBytes);
    await expectEveryEventOnce(location, objects);
  }, 120_000);

  it('a run stops starting passes at its time budget and says how many files it left; the next run goes on with them', async () => {
    const { location, objects } = await locationWith('timed');
    const sweepFiles = await liveFiles(location);
    const policy = scaledPolicy(Math.max(...sweepFiles.map((f) => f.bytes)));

    // Each pass (one day's group here: a pass's budget ends inside the first day) takes a second on this clock.
    const clock = steppingClock();
    const first = await runParquetMaintenance({ objects, location, fence, ...clock }, { ...policy, compactionTimeBudgetMs: 1500 });
    expect(first).toMatchObject({ compactionPasses: 2 });
    expect(first.smallFilesLeft).toBeGreaterThan(0);
    // Sweep files are still live: the passes reached part of the first day only.
    expect((await liveFiles(location)).filter((f) => sweepFiles.some((s) => s.key === f.key)).length).toBeGreaterThan(COMMITS);
    await expectEveryEventOnce(location, objects);

    const next = await runParquetMaintenance({ objects, location, fence, now: Date.now }, policy);
    expect(next.compactionPasses).toBeGreaterThanOrEqual(1);
    expect(next.smallFilesLeft).toBe(0);
    const live = await liveFiles(location);
    expect(live.some((f) => sweepFiles.some((s) => s.key === f.key))).toBe(false);
    expectNoneLeftToMerge(live, policy.targetFileSizeBytes);
    await expectEveryEventOnce(location, objects);
  }, 120_000);
});
