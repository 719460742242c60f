// Goal: multi-pass compaction loses, doubles and damages nothing under faults, Iceberg and
// Parquet mode alike, and never stops merging for good. A fault (an S3
// request failing, a commit whose answer is lost, a crash, a concurrent sweep, a conflicting
// conditional create) is injected in the second pass or later — after the first pass committed —
// and then: every event is read exactly once by independent readers (icebird and DuckDB over the
// current snapshot's files; DuckDB over the files a Parquet reader lists, and the same list from a
// fold of the whole log), every live file exists, and further runs (a restarted node's) converge:
// no small files left to merge and no garbage data file left in the bucket.
import { S3Client } from '@aws-sdk/client-s3';
import { AuditError, AuditErrorCode, type StoredEvent } from '@auditlake/model';
import { icebergRead } from 'icebird';
import { describe, expect, it, onTestFinished } from 'vitest';
import { commitForeignSnapshotOnTop, duckdbOverObjects, expectNoneLeftToMerge, routeAwsS3To, twoDayEvents, useEmbeddedS3 } from '../src/testing/index.js';
import {
  commitIcebergBatch,
  commitParquetBatch,
  compactionKey,
  currentManifests,
  ensureIcebergTable,
  INLINE_TIER_FILE_ENCODER,
  liveParquetFiles,
  loadIcebergTable,
  ObjectStore,
  ParquetTierSource,
  readParquetLog,
  resolveIcebergTable,
  runIcebergMaintenance,
  runParquetMaintenance,
  type CommitFence,
  type CompactionMarker,
  type IcebergTableRef,
  type MaintenanceRunFigures,
  type MaintenanceStep,
  type S3Location,
} from '../src/index.js';

const BUCKET = 'faults';
const T0 = Date.UTC(2026, 4, 1);
const HOUR_MS = 3_600_000;
const CREDENTIALS = { accessKeyId: 'ALCOMPACTIONFAULTS01', secretAccessKey: 'compaction-faults-secret-0123456789abc' };
const s3 = useEmbeddedS3('compaction-faults-', BUCKET, CREDENTIALS);

/** Six sweep commits of 500 events over two days: 12 small files, 6 a day; a pass reads three. */
const COMMITS = 6;
const PER_COMMIT = 500;
const SEQ_MAX = COMMITS * PER_COMMIT;
const events = (firstSeq: number, count: number): StoredEvent[] => twoDayEvents(T0, firstSeq, count);

// ---------------------------------------------------------------------------------------------
// A faulty object store: the real one (same endpoint), with rules that make chosen requests fail.

type Op = 'PUT' | 'PUT_IF_ABSENT' | 'GET' | 'HEAD' | 'LIST' | 'DELETE';
/**
 * `fail`: the request fails and did nothing. `lost-answer`: it is done, then the caller gets an
 * error (a timeout after the store applied it). `retried-412` (conditional creates only): it is
 * done, and the caller is told the key was taken — what an SDK retry of a create whose first
 * answer was lost gets back.
 */
type Fault = 'fail' | 'lost-answer' | 'retried-412';
interface Rule {
  op: Op;
  key: RegExp;
  fault: Fault;
  /** Armed only while this holds (default: always). */
  when?: () => boolean;
  /** How often it fires (default once). */
  times?: number;
}

class FaultyStore extends ObjectStore {
  readonly #rules: Array<Rule & { left: number }> = [];
  /** What fired, in order. */
  readonly fired: string[] = [];
  /** Conditional creates of a commit object (`commitKey`) that created it. */
  commitsSeen = 0;
  readonly #commitKey: RegExp;

  constructor(client: S3Client, bucket: string, commitKey: RegExp) {
    super(client, bucket);
    this.#commitKey = commitKey;
  }

  add(rule: Rule): this {
    this.#rules.push({ ...rule, left: rule.times ?? 1 });
    return this;
  }

  #fault(op: Op, key: string): Fault | undefined {
    for (const rule of this.#rules) {
      if (rule.left <= 0 || rule.op !== op || !rule.key.test(key) || !(rule.when?.() ?? true)) continue;
      rule.left--;
      this.fired.push(`${rule.fault} ${op} ${key}`);
      return rule.fault;
    }
    return undefined;
  }

  #error(op: Op, key: string): AuditError {
    return new AuditError(AuditErrorCode.OBJECT_STORE_FAILED, `${op} ${this.url(key)} failed: injected fault`, { retryable: true });
  }

  override async put(key: string, body: Uint8Array | string, contentType?: string): Promise<void> {
    const fault = this.#fault('PUT', key);
    if (fault === 'fail') throw this.#error('PUT', key);
    await super.put(key, body, contentType);
    if (fault !== undefined) throw this.#error('PUT', key);
  }

  override async putIfAbsent(key: string, body: Uint8Array | string, contentType: string): Promise<boolean> {
    const fault = this.#fault('PUT_IF_ABSENT', key);
    if (fault === 'fail') throw this.#error('PUT_IF_ABSENT', key);
    const created = await super.putIfAbsent(key, body, contentType);
    if (created && this.#commitKey.test(key)) this.commitsSeen++;
    if (fault === 'lost-answer') throw this.#error('PUT_IF_ABSENT', key);
    if (fault === 'retried-412') return false;
    return created;
  }

  override async get(key: string): Promise<Uint8Array> {
    const fault = this.#fault('GET', key);
    if (fault === 'fail') throw this.#error('GET', key);
    const bytes = await super.get(key);
    if (fault !== undefined) throw this.#error('GET', key);
    return bytes;
  }

  override async head(key: string): Promise<Awaited<ReturnType<ObjectStore['head']>>> {
    const fault = this.#fault('HEAD', key);
    if (fault === 'fail') throw this.#error('HEAD', key);
    return super.head(key);
  }

  override async listObjects(prefix: string, options: { startAfter?: string; max?: number } = {}): Promise<Awaited<ReturnType<ObjectStore['listObjects']>>> {
    const fault = this.#fault('LIST', prefix);
    if (fault === 'fail') throw this.#error('LIST', prefix);
    return super.listObjects(prefix, options);
  }

  override async delete(key: string): Promise<void> {
    const fault = this.#fault('DELETE', key);
    if (fault === 'fail') throw this.#error('DELETE', key);
    await super.delete(key);
    if (fault !== undefined) throw this.#error('DELETE', key);
  }
}

/** A client of its own per store (destroyed after the test), as another process would have. */
function client(): S3Client {
  const c = new S3Client({ region: 'us-east-1', forcePathStyle: true, maxAttempts: 1, endpoint: s3.server.url, credentials: CREDENTIALS });
  onTestFinished(() => c.destroy());
  return c;
}

/** The node's commit lock (fence.serialize): one turn at a time. */
function commitLock(): NonNullable<CommitFence['serialize']> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(turn: () => Promise<T>): Promise<T> => {
    const run = tail.then(turn);
    tail = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  };
}

/** A node's fence: its own lock; `mayCommit` as given (a deposed or closing node says no). */
function nodeFence(term: number, mayCommit: () => boolean = () => true): CommitFence {
  return { term, mayCommit, serialize: commitLock() };
}

/** A promise that settles only when `release` is called: a paused (or, never released, crashed) process. */
function gate(): { wait: Promise<void>; release: () => void } {
  let release = (): void => undefined;
  const wait = new Promise<void>((resolve) => (release = resolve));
  return { wait, release };
}

function counted(rows: Array<Record<string, unknown>>, idKey: string, countKey?: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(String(row[idKey]), (counts.get(String(row[idKey])) ?? 0) + (countKey === undefined ? 1 : Number(row[countKey])));
  return counts;
}

/** Every event e1..e`seqMax` exactly once: says which are missing or twice, if any. */
function expectExactlyOnce(counts: Map<string, number>, seqMax: number, reader: string): void {
  const missing: string[] = [];
  const twice: string[] = [];
  for (let seq = 1; seq <= seqMax; seq++) {
    const n = counts.get(`e${seq}`) ?? 0;
    if (n === 0) missing.push(`e${seq}`);
    if (n > 1) twice.push(`e${seq}x${n}`);
  }
  const extra = [...counts.keys()].filter((id) => !/^e\d+$/.test(id) || Number(id.slice(1)) > seqMax);
  expect({ reader, rows: [...counts.values()].reduce((a, b) => a + b, 0), missing: missing.length, duplicated: twice.length, extra: extra.length, firstMissing: missing.slice(0, 3), firstDuplicated: twice.slice(0, 3) }).toEqual({
    reader,
    rows: seqMax,
    missing: 0,
    duplicated: 0,
    extra: 0,
    firstMissing: [],
    firstDuplicated: [],
  });
}

// ---------------------------------------------------------------------------------------------
// The two modes behind one face.

interface RunOptions {
  objects: ObjectStore;
  fence: CommitFence;
  now: () => number;
  onStep?: (step: MaintenanceStep) => void | Promise<void>;
  timeBudgetMs?: number;
  /** Cleanup run: orphans removed, old snapshots expired. */
  cleanup?: boolean;
  /** Bytes one pass reads at most (default the lake's scaled pass budget). */
  passBytes?: number;
}

interface Lake {
  mode: 'iceberg' | 'parquet';
  /** Keys a commit creates (conditionally): Iceberg metadata versions, Parquet compaction markers. */
  commitKey: RegExp;
  /** Keys of compacted data files and of data files in general. */
  compactedKey: RegExp;
  dataKey: RegExp;
  target: number;
  passBytes: number;
  clean: ObjectStore;
  faulty(): FaultyStore;
  run(options: RunOptions): Promise<MaintenanceRunFigures>;
  /** A sweep commit of events firstSeq.. (through a clean store, as the sweep of the same node). */
  sweep(firstSeq: number, count: number, options?: { staleIceberg?: boolean }): Promise<void>;
  /** Compactions committed and visible now. */
  compactionsVisible(): Promise<number>;
  /** The live data files a reader reads. */
  liveFiles(): Promise<Array<{ key: string; bytes: number }>>;
  /** Every event 1..seqMax read once by the independent readers; every live file exists. */
  expectEveryEventOnce(seqMax: number): Promise<void>;
  /** Data files in the bucket that no reader reads. */
  garbageDataFiles(): Promise<string[]>;
}

const ICEBERG_COMMIT_KEY = /\/metadata\/v\d+\.metadata\.json$/;
const PARQUET_COMMIT_KEY = /\/_auditlake\/compactions\//;

async function icebergLake(name: string): Promise<Lake> {
  const table: IcebergTableRef = resolveIcebergTable(`cat.ops.${name}`, new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
  const clean = new ObjectStore(client(), BUCKET);
  let loaded = await ensureIcebergTable(clean, table, T0);
  for (let c = 0; c < COMMITS; c++) loaded = (await commitIcebergBatch(clean, table, loaded, events(1 + c * PER_COMMIT, PER_COMMIT), { term: 1, mayCommit: () => true, nowMs: Date.now(), writerId: 'test' })).loaded;
  let lastSweepLoaded = loaded;
  const liveFiles = async (): Promise<Array<{ key: string; bytes: number }>> => {
    const current = (await loadIcebergTable(clean, table))!;
    return (await currentManifests(clean, table, current.metadata)).flatMap((m) =>
      m.entries.filter((e) => e.status !== 2).map((e) => ({ key: e.data_file.file_path.slice(`s3://${BUCKET}/`.length), bytes: e.data_file.file_size_in_bytes })),
    );
  };
  const sweepBytes = Math.max(...(await liveFiles()).map((f) => f.bytes));
  const lake: Lake = {
    mode: 'iceberg',
    commitKey: ICEBERG_COMMIT_KEY,
    compactedKey: /\/data\/event_time_day=[^/]+\/compacted-[^/]+\.parquet$/,
    dataKey: /\/data\/event_time_day=[^/]+\/[^/]+\.parquet$/,
    target: 2 * sweepBytes,
    passBytes: 4 * sweepBytes,
    clean,
    faulty: () => new FaultyStore(client(), BUCKET, ICEBERG_COMMIT_KEY),
    run: ({ objects, fence, now, onStep, timeBudgetMs, cleanup, passBytes }) =>
      runIcebergMaintenance(
        { objects, table, fence, now, ...(onStep ? { onStep } : {}) },
        {
          snapshotRetainLast: cleanup ? 1 : 100,
          metadataPreviousVersionsMax: cleanup ? 2 : 100,
          removeOrphanFiles: cleanup === true,
          orphanMinAgeMs: HOUR_MS,
          targetFileSizeBytes: lake.target,
          compactionPassBytesMax: passBytes ?? lake.passBytes,
          ...(timeBudgetMs === undefined ? {} : { compactionTimeBudgetMs: timeBudgetMs }),
        },
      ),
    sweep: async (firstSeq, count, options = {}) => {
      // The sweeper keeps the table it last committed (stale once maintenance committed), or reloads.
      const base = options.staleIceberg ? lastSweepLoaded : (await loadIcebergTable(clean, table))!;
      lastSweepLoaded = (await commitIcebergBatch(clean, table, base, events(firstSeq, count), { term: 1, mayCommit: () => true, nowMs: Date.now(), writerId: 'test', afterSeq: firstSeq - 1 })).loaded;
    },
    compactionsVisible: async () => {
      const current = (await loadIcebergTable(clean, table))!;
      return current.metadata.snapshots.filter((s) => s.summary['operation'] === 'replace' && Number(s.summary['deleted-data-files'] ?? 0) > 0).length;
    },
    liveFiles,
    expectEveryEventOnce: async (seqMax) => {
      const live = await liveFiles();
      const absent: string[] = [];
      for (const file of live) if (!(await clean.exists(file.key))) absent.push(file.key);
      expect(absent, 'live files the bucket does not hold').toEqual([]);
      onTestFinished(routeAwsS3To(s3.server.url, CREDENTIALS));
      expectExactlyOnce(counted((await icebergRead({ tableUrl: table.location })) as Array<Record<string, unknown>>, 'event_id'), seqMax, 'icebird');
      const rows = await duckdbOverObjects(clean, live.map((f) => f.key), s3.dir, 'SELECT event_id, count(*)::INTEGER AS c FROM {files} GROUP BY event_id');
      expectExactlyOnce(counted(rows, 'event_id', 'c'), seqMax, 'duckdb');
    },
    garbageDataFiles: async () => {
      const live = new Set((await liveFiles()).map((f) => f.key));
      return (await clean.list(`${table.s3.prefix}/data/`)).filter((key) => key.endsWith('.parquet') && !live.has(key));
    },
  };
  return lake;
}

async function parquetLake(name: string): Promise<Lake> {
  const location: S3Location = { bucket: BUCKET, prefix: `pq/${name}` };
  const clean = new ObjectStore(client(), BUCKET);
  for (let c = 0; c < COMMITS; c++) await commitParquetBatch(clean, location, events(1 + c * PER_COMMIT, PER_COMMIT), { term: 1, nowMs: T0, afterSeq: c * PER_COMMIT, mayCommit: () => true });
  const connections = s3.connections;
  const liveFiles = async (): Promise<Array<{ key: string; bytes: number }>> => {
    const source = new ParquetTierSource(connections, { mode: 'parquet', path: `s3://${location.bucket}/${location.prefix}`, connectionId: 's3' });
    try {
      return (await source.listFiles()).map((file) => ({ key: file.key, bytes: file.bytes ?? 0 }));
    } finally {
      await source.close();
    }
  };
  const sweepBytes = Math.max(...(await liveFiles()).map((f) => f.bytes));
  const lake: Lake = {
    mode: 'parquet',
    commitKey: PARQUET_COMMIT_KEY,
    compactedKey: /\/event_date=[^/]+\/compacted-[^/]+\.parquet$/,
    dataKey: /\/event_date=[^/]+\/[^/]+\.parquet$/,
    target: 2 * sweepBytes,
    passBytes: 4 * sweepBytes,
    clean,
    faulty: () => new FaultyStore(client(), BUCKET, PARQUET_COMMIT_KEY),
    run: ({ objects, fence, now, onStep, timeBudgetMs, cleanup, passBytes }) =>
      runParquetMaintenance(
        { objects, location, fence, now, checkpointIntervalMarkers: 3, ...(onStep ? { onStep } : {}) },
        {
          removeOrphanFiles: cleanup === true,
          orphanMinAgeMs: HOUR_MS,
          targetFileSizeBytes: lake.target,
          compactionPassBytesMax: passBytes ?? lake.passBytes,
          ...(timeBudgetMs === undefined ? {} : { compactionTimeBudgetMs: timeBudgetMs }),
        },
      ),
    sweep: async (firstSeq, count) => {
      await commitParquetBatch(clean, location, events(firstSeq, count), { term: 1, nowMs: Date.now(), afterSeq: firstSeq - 1, mayCommit: () => true });
    },
    compactionsVisible: async () => liveParquetFiles(await readParquetLog(clean, location, undefined, { fromCheckpoint: false })).applied.length,
    liveFiles,
    expectEveryEventOnce: async (seqMax) => {
      const live = await liveFiles();
      // The fold of the whole log (as `auditlake verify` reads it) lists the same files as a reader from the newest checkpoint.
      const whole = liveParquetFiles(await readParquetLog(clean, location, undefined, { fromCheckpoint: false })).files.map((f) => f.key);
      expect([...whole].sort(), 'files of the whole log vs from the checkpoint').toEqual(live.map((f) => f.key).sort());
      const absent: string[] = [];
      for (const file of live) if (!(await clean.exists(file.key))) absent.push(file.key);
      expect(absent, 'live files the bucket does not hold').toEqual([]);
      const rows = await duckdbOverObjects(clean, live.map((f) => f.key), s3.dir, 'SELECT event_id, count(*)::INTEGER AS c FROM {files} GROUP BY event_id');
      expectExactlyOnce(counted(rows, 'event_id', 'c'), seqMax, 'duckdb');
    },
    garbageDataFiles: async () => {
      const live = new Set((await liveFiles()).map((f) => f.key));
      return (await clean.list(`${location.prefix}/event_date=`)).filter((key) => key.endsWith('.parquet') && !live.has(key));
    },
  };
  return lake;
}

const MODES = [
  ['iceberg', icebergLake],
  ['parquet', parquetLake],
] as const;

/**
 * A restarted node (its own client, lock and term) runs maintenance twice, hours later (grace
 * periods and orphan age passed): both converge — nothing small left to merge, no garbage left —
 * and every event is read once. These runs read every small file in one pass: with the scaled
 * pass budget, runs stop merging for a reason of their own (the lone-small-file livelock, its own
 * test below), which would hide what the fault did.
 */
async function expectConverges(lake: Lake, seqMax: number, term = 9): Promise<void> {
  const objects = new ObjectStore(client(), BUCKET);
  const fence = nodeFence(term);
  // A compaction's output can itself be small (re-encoded rows compress better than the input's
  // bytes per row said), so a second run may merge again; by the third nothing is left to do.
  const runs: Array<Pick<MaintenanceRunFigures, 'filesRewritten' | 'smallFilesLeft'>> = [];
  for (let i = 0; i < 4; i++) {
    const run = await lake.run({ objects, fence, now: () => Date.now() + (2 + 2 * i) * HOUR_MS, cleanup: true, passBytes: Number.MAX_SAFE_INTEGER });
    runs.push({ filesRewritten: run.filesRewritten, smallFilesLeft: run.smallFilesLeft });
    await lake.expectEveryEventOnce(seqMax);
    if (i >= 1 && run.filesRewritten === 0) break;
  }
  expect(runs.every((run) => run.smallFilesLeft === 0) && runs.at(-1)?.filesRewritten === 0, JSON.stringify(runs)).toBe(true);
  expectNoneLeftToMerge(await lake.liveFiles(), lake.target);
  expect(await lake.garbageDataFiles(), 'data files left in the bucket that no reader reads').toEqual([]);
  await lake.expectEveryEventOnce(seqMax);
}

/** Runs maintenance with `objects`, returning its figures or the error it failed with. */
async function outcome(run: Promise<MaintenanceRunFigures>): Promise<{ ok: true; figures: MaintenanceRunFigures } | { ok: false; error: Error }> {
  try {
    const figures = await run;
    if (process.env['REVIEW_LOG']) console.log('run ok', JSON.stringify({ passes: figures.compactionPasses, rewritten: figures.filesRewritten, added: figures.filesAdded, left: figures.smallFilesLeft }));
    return { ok: true, figures };
  } catch (err) {
    if (process.env['REVIEW_LOG']) console.log('run failed', (err as Error).message);
    return { ok: false, error: err as Error };
  }
}

const T = 60_000;

describe.each(MODES)('%s: multi-pass compaction under faults', (mode, make) => {
  let n = 0;
  const fresh = async (): Promise<Lake> => make(`${mode}-${++n}`);

  it('baseline: a run without faults makes several passes and converges', async () => {
    const lake = await fresh();
    const run = await lake.run({ objects: lake.faulty(), fence: nodeFence(1), now: Date.now });
    expect(run.compactionPasses).toBeGreaterThan(1);
    await lake.expectEveryEventOnce(SEQ_MAX);
    await expectConverges(lake, SEQ_MAX);
  }, T);

  // Faults of one request in the second pass or later: after the first pass committed.
  const requestFaults: Array<[string, (lake: Lake) => Rule, number?]> = [
    ['the PUT of a pass-2 compacted file fails', (l) => ({ op: 'PUT', key: l.compactedKey, fault: 'fail' })],
    ['the GET of a pass-2 input file fails', (l) => ({ op: 'GET', key: l.dataKey, fault: 'fail' })],
    ['the pass-2 commit (conditional create) fails, nothing written', (l) => ({ op: 'PUT_IF_ABSENT', key: l.commitKey, fault: 'fail' })],
    ['the pass-2 commit lands but its answer is lost (timeout)', (l) => ({ op: 'PUT_IF_ABSENT', key: l.commitKey, fault: 'lost-answer' })],
    ['the pass-2 commit lands and the SDK retry is told 412 (taken)', (l) => ({ op: 'PUT_IF_ABSENT', key: l.commitKey, fault: 'retried-412' })],
    // Armed once pass 2 created its commit object: the read-back right after it.
    ['the read-back of the pass-2 commit fails', (l) => ({ op: 'GET', key: l.commitKey, fault: 'fail' }), 2],
  ];
  for (const [title, rule, armedAtCommits = 1] of requestFaults) {
    it(title, async () => {
      const lake = await fresh();
      const objects = lake.faulty();
      objects.add({ ...rule(lake), when: () => objects.commitsSeen >= armedAtCommits });
      await outcome(lake.run({ objects, fence: nodeFence(1), now: Date.now }));
      expect(objects.fired, 'the fault fired').toHaveLength(1);
      expect(await lake.compactionsVisible(), 'pass 1 committed').toBeGreaterThanOrEqual(1);
      await lake.expectEveryEventOnce(SEQ_MAX);
      await expectConverges(lake, SEQ_MAX);
    }, T);
  }

  it('every later commit fails too (a store that fails all conditional creates after pass 1): the run fails, nothing is lost', async () => {
    const lake = await fresh();
    const objects = lake.faulty();
    objects.add({ op: 'PUT_IF_ABSENT', key: lake.commitKey, fault: 'fail', when: () => objects.commitsSeen >= 1, times: 1000 });
    const result = await outcome(lake.run({ objects, fence: nodeFence(1), now: Date.now }));
    expect(result.ok).toBe(false);
    await lake.expectEveryEventOnce(SEQ_MAX);
    await expectConverges(lake, SEQ_MAX);
  }, T);

  it('a DELETE fails in the run after a multi-pass run (replaced-file deletion / expiry), then the next runs converge', async () => {
    const lake = await fresh();
    const first = await lake.run({ objects: lake.faulty(), fence: nodeFence(1), now: Date.now });
    expect(first.compactionPasses).toBeGreaterThan(1);
    const objects = lake.faulty();
    objects.add({ op: 'DELETE', key: /./, fault: 'fail' });
    // Hours later: the first run's replaced files are past their grace, deleted in this run, which also makes passes.
    await outcome(lake.run({ objects, fence: nodeFence(1), now: () => Date.now() + 2 * HOUR_MS, cleanup: true }));
    expect(objects.fired).toHaveLength(1);
    await lake.expectEveryEventOnce(SEQ_MAX);
    await expectConverges(lake, SEQ_MAX);
  }, T);

  it('a crash between writing pass 2\'s files and its commit (the hook throws), then a restart', async () => {
    const lake = await fresh();
    const objects = lake.faulty();
    let written = 0;
    const result = await outcome(
      lake.run({
        objects,
        fence: nodeFence(1),
        now: Date.now,
        onStep: (step) => {
          if (step === 'compaction-written' && ++written === 2) throw new Error('crash after pass 2 wrote its files');
        },
      }),
    );
    expect(result.ok).toBe(false);
    expect(await lake.compactionsVisible()).toBeGreaterThanOrEqual(1);
    await lake.expectEveryEventOnce(SEQ_MAX);
    await expectConverges(lake, SEQ_MAX);
  }, T);

  it('a process that hangs forever in pass 2 (crashed, never resumes); a restarted node maintains the same bucket', async () => {
    const lake = await fresh();
    const objects = lake.faulty();
    const paused = gate();
    let reached = (): void => undefined;
    const inPass2 = new Promise<void>((resolve) => (reached = resolve));
    void lake.run({
      objects,
      fence: nodeFence(1),
      now: Date.now,
      onStep: (step) => {
        if (step === 'compaction-written' && objects.commitsSeen >= 1) {
          reached();
          return paused.wait;
        }
        return undefined;
      },
    });
    await inPass2;
    await lake.expectEveryEventOnce(SEQ_MAX);
    await expectConverges(lake, SEQ_MAX, 2);
  }, T);

  for (const zombieMayCommit of [false, true]) {
    it(`a process paused in pass 2 resumes after a restarted node converged the table (its fence says ${zombieMayCommit ? 'it may still commit: a stale leader' : 'no: deposed'})`, async () => {
      const lake = await fresh();
      const objects = lake.faulty();
      const paused = gate();
      let reached = (): void => undefined;
      const inPass2 = new Promise<void>((resolve) => (reached = resolve));
      let deposed = false;
      const zombie = outcome(
        lake.run({
          objects,
          fence: nodeFence(1, () => zombieMayCommit || !deposed),
          now: Date.now,
          onStep: (step) => {
            if (step === 'compaction-written' && objects.commitsSeen >= 1 && !deposed) {
              reached();
              return paused.wait;
            }
            return undefined;
          },
        }),
      );
      await inPass2;
      deposed = true;
      await expectConverges(lake, SEQ_MAX, 2);
      paused.release();
      const result = await zombie;
      // Deposed: it commits nothing (its pass finds its files replaced, or the fence refuses).
      if (!zombieMayCommit && !result.ok) expect((result.error as AuditError).code).toBe(AuditErrorCode.NOT_LEADER);
      await lake.expectEveryEventOnce(SEQ_MAX);
      await expectConverges(lake, SEQ_MAX, 3);
    }, T);
  }

  it('a stale leader paused right before its pass-2 commit (inside the commit turn) resumes after a restarted node converged and cleaned the table', async () => {
    const lake = await fresh();
    const paused = gate();
    let reached = (): void => undefined;
    const atCommit = new Promise<void>((resolve) => (reached = resolve));
    let hold = true;
    // beforeCommit is synchronous: pause in mayCommit's caller by pausing the request instead — the
    // conditional create of the pass-2 commit waits for the gate.
    const slow = new (class extends FaultyStore {
      override async putIfAbsent(key: string, body: Uint8Array | string, contentType: string): Promise<boolean> {
        if (hold && lake.commitKey.test(key) && this.commitsSeen >= 1) {
          hold = false;
          reached();
          await paused.wait;
        }
        return super.putIfAbsent(key, body, contentType);
      }
    })(client(), BUCKET, lake.commitKey);
    const zombie = outcome(lake.run({ objects: slow, fence: nodeFence(1), now: Date.now }));
    await atCommit;
    await expectConverges(lake, SEQ_MAX, 2);
    paused.release();
    await zombie;
    await lake.expectEveryEventOnce(SEQ_MAX);
    await expectConverges(lake, SEQ_MAX, 3);
  }, T);

  // A stale table is an Iceberg sweeper's (it commits on the version it last wrote); a Parquet sweep has no such state.
  for (const stale of mode === 'iceberg' ? [false, true] : [false]) {
    it(`a sweep commits new events between pass 1 and pass 2${mode === 'iceberg' ? (stale ? ' (on the table it last committed: stale)' : ' (on the table reloaded)') : ''}`, async () => {
      const lake = await fresh();
      const objects = lake.faulty();
      let swept = false;
      const run = await lake.run({
        objects,
        fence: nodeFence(1),
        now: Date.now,
        onStep: async (step) => {
          if (step === 'compaction-written' && objects.commitsSeen >= 1 && !swept) {
            swept = true;
            await lake.sweep(SEQ_MAX + 1, PER_COMMIT, { staleIceberg: stale });
          }
        },
      });
      expect(swept).toBe(true);
      expect(run.compactionPasses).toBeGreaterThanOrEqual(2);
      await lake.expectEveryEventOnce(SEQ_MAX + PER_COMMIT);
      await expectConverges(lake, SEQ_MAX + PER_COMMIT);
    }, T);
  }

  it('the time budget expires during pass 2 while a sweep commits: pass 2 finishes, no pass 3, the next run goes on', async () => {
    const lake = await fresh();
    const objects = lake.faulty();
    let clock = Date.now();
    let swept = false;
    const run = await lake.run({
      objects,
      fence: nodeFence(1),
      now: () => clock,
      timeBudgetMs: 1000,
      onStep: async (step) => {
        if (step === 'compaction-written' && objects.commitsSeen >= 1 && !swept) {
          swept = true;
          clock += 5000;
          await lake.sweep(SEQ_MAX + 1, PER_COMMIT);
        }
      },
    });
    expect(run.compactionPasses).toBe(2);
    expect(run.smallFilesLeft).toBeGreaterThan(0);
    await lake.expectEveryEventOnce(SEQ_MAX + PER_COMMIT);
    await expectConverges(lake, SEQ_MAX + PER_COMMIT);
  }, T);

  if (mode === 'iceberg') {
    it('pass 2\'s commit loses its version to another engine\'s commit (catalog conflict): rebuilt and committed on top', async () => {
      const lake = await fresh();
      const objects = lake.faulty();
      const fence = nodeFence(1);
      let conflicted = 0;
      const table = resolveIcebergTable(`cat.ops.${mode}-${n}`, new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
      const run = await lake.run({
        objects,
        fence,
        now: Date.now,
        onStep: async (step) => {
          // Right before pass 2's swap turn: another engine takes the next version twice.
          if (step === 'compaction-written' && objects.commitsSeen >= 1 && conflicted === 0) {
            conflicted++;
            for (let i = 0; i < 2; i++) await commitForeignSnapshotOnTop(lake.clean, table, (await loadIcebergTable(lake.clean, table))!, 900_000 + i);
          }
        },
      });
      expect(conflicted).toBe(1);
      expect(run.smallFilesLeft).toBe(0);
      await lake.expectEveryEventOnce(SEQ_MAX);
      await expectConverges(lake, SEQ_MAX);
    }, T);

    it('pass 2\'s commit loses every attempt (COMMIT_ATTEMPTS_MAX conflicts): the run fails, nothing is lost', async () => {
      const lake = await fresh();
      const table = resolveIcebergTable(`cat.ops.${mode}-${n}`, new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
      let conflicts = 0;
      // Each attempt's create finds the version taken: another engine commits right before it.
      const racing = new (class extends FaultyStore {
        override async putIfAbsent(key: string, body: Uint8Array | string, contentType: string): Promise<boolean> {
          if (ICEBERG_COMMIT_KEY.test(key) && this.commitsSeen >= 1 && conflicts < 10) {
            conflicts++;
            await commitForeignSnapshotOnTop(lake.clean, table, (await loadIcebergTable(lake.clean, table))!, 800_000 + conflicts);
          }
          return super.putIfAbsent(key, body, contentType);
        }
      })(client(), BUCKET, ICEBERG_COMMIT_KEY);
      const result = await outcome(lake.run({ objects: racing, fence: nodeFence(1), now: Date.now }));
      expect(result.ok ? 'ok' : (result.error as AuditError).code).toBe(AuditErrorCode.OBJECT_EXISTS);
      await lake.expectEveryEventOnce(SEQ_MAX);
      await expectConverges(lake, SEQ_MAX);
    }, T);

    it('the hint PUT after pass 2\'s commit fails', async () => {
      const lake = await fresh();
      const objects = lake.faulty();
      objects.add({ op: 'PUT', key: /version-hint\.text$/, fault: 'fail', when: () => objects.commitsSeen >= 2 });
      await outcome(lake.run({ objects, fence: nodeFence(1), now: Date.now }));
      expect(objects.fired).toHaveLength(1);
      await lake.expectEveryEventOnce(SEQ_MAX);
      await expectConverges(lake, SEQ_MAX);
    }, T);
  }

  if (mode === 'parquet') {
    it('pass 2\'s compaction marker loses its generation to another writer\'s marker (a deposed leader compacting the same files): first wins, rows once', async () => {
      const lake = await fresh();
      const location: S3Location = { bucket: BUCKET, prefix: `pq/${mode}-${n}` };
      const objects = lake.faulty();
      let raced = false;
      let lost: number | undefined;
      await outcome(
        lake.run({
          objects,
          fence: nodeFence(1),
          now: Date.now,
          onStep: async (step) => {
            if (step !== 'compaction-written' || objects.commitsSeen < 1 || raced) return;
            raced = true;
            // Another writer's compaction of the same day, at the generation this pass is about to
            // take: it replaces two live small files by one holding exactly their rows.
            const log = await readParquetLog(lake.clean, location, undefined, { fromCheckpoint: false });
            const live = liveParquetFiles(log).files.filter((f) => f.bytes < 0.75 * lake.target);
            const date = [...new Set(live.map((f) => f.eventDate))].sort()[0]!;
            const pair = live.filter((f) => f.eventDate === date).sort((a, b) => a.key.localeCompare(b.key)).slice(0, 2);
            const generation = 1 + Math.max(0, ...log.compactions.filter((c) => c.eventDate === date).map((c) => c.generation));
            const rows = pair.reduce((s, f) => s + f.rows, 0);
            // Their merged file: the two files' rows, merged by the same encoder.
            const merged = `${location.prefix}/event_date=${date}/compacted-t7-deadbeef-0.parquet`;
            const inputs = await Promise.all(pair.map(async (f) => ({ bytes: await lake.clean.get(f.key), name: f.key, expectedRows: f.rows })));
            const [encoded] = await INLINE_TIER_FILE_ENCODER.rewrite(inputs, rows, { kvMetadata: {}, icebergDataFile: false });
            const bytes = encoded!.bytes;
            await lake.clean.put(merged, bytes);
            const marker: CompactionMarker = {
              format: 'auditlake-parquet-compaction/1',
              term: 7,
              committedAtMs: Date.now(),
              eventDate: date,
              generation,
              replaced: pair,
              files: [{ key: merged, eventDate: date, rows, bytes: bytes.byteLength, tsMin: Math.min(...pair.map((f) => f.tsMin)), tsMax: Math.max(...pair.map((f) => f.tsMax)) }],
            };
            expect(await lake.clean.putIfAbsent(compactionKey(location, date, generation), JSON.stringify(marker), 'application/json')).toBe(true);
            lost = generation;
          },
        }),
      );
      expect(raced).toBe(true);
      expect(lost).toBeDefined();
      await lake.expectEveryEventOnce(SEQ_MAX);
      await expectConverges(lake, SEQ_MAX);
    }, T);
  }
});


// ---------------------------------------------------------------------------------------------
// Found while building the fault scenarios, no fault needed: a pass spent its byte budget on
// small files it did not merge (the lone small file of a day), so later days' small files were
// never merged, by that run or any later one.

const DAY_MS = 86_400_000;

/** Events firstSeq.. all timed on day `day` after T0. */
function oneDayEvents(firstSeq: number, count: number, day: number): StoredEvent[] {
  return twoDayEvents(T0, firstSeq, count).map((event) => ({ ...event, timestamp: T0 + day * DAY_MS + event.seq }));
}

/** Days 0 and 1: one small file each (nothing to merge there); day 2: four small files. */
const LONE_DAYS = 2;
const DAY2_FILES = 4;
const LONE_PER_COMMIT = 250;
const LONE_SEQ_MAX = (LONE_DAYS + DAY2_FILES) * LONE_PER_COMMIT;
const dayOfCommit = (c: number): number => Math.min(c, LONE_DAYS);

describe('lone small files of earlier days do not starve a pass (no fault)', () => {
  it('iceberg: the small files of a later day are merged although earlier days each hold one lone small file', async () => {
    const table = resolveIcebergTable('cat.ops.lone', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
    const objects = new ObjectStore(client(), BUCKET);
    let loaded = await ensureIcebergTable(objects, table, T0);
    for (let c = 0; c < LONE_DAYS + DAY2_FILES; c++) {
      loaded = (await commitIcebergBatch(objects, table, loaded, oneDayEvents(1 + c * LONE_PER_COMMIT, LONE_PER_COMMIT, dayOfCommit(c)), { term: 1, mayCommit: () => true, nowMs: Date.now(), writerId: 'test' })).loaded;
    }
    const live = async (): Promise<number[]> => (await currentManifests(objects, table, (await loadIcebergTable(objects, table))!.metadata)).flatMap((m) => m.entries.filter((e) => e.status !== 2).map((e) => e.data_file.file_size_in_bytes));
    const sweep = Math.max(...(await live()));
    // Scaled as production's (16 MiB target, 256 MiB a pass: the lone remainders of ~20-40 days fill a pass).
    const policy = { snapshotRetainLast: 100, metadataPreviousVersionsMax: 100, removeOrphanFiles: false, orphanMinAgeMs: HOUR_MS, targetFileSizeBytes: 2 * sweep, compactionPassBytesMax: 3 * sweep };
    const runs: Array<Pick<MaintenanceRunFigures, 'compactionPasses' | 'filesRewritten' | 'smallFilesLeft'>> = [];
    for (let i = 0; i < 3; i++) {
      const run = await runIcebergMaintenance({ objects, table, fence: nodeFence(1), now: Date.now }, policy);
      runs.push({ compactionPasses: run.compactionPasses, filesRewritten: run.filesRewritten, smallFilesLeft: run.smallFilesLeft });
    }
    // Any two small files fit in one pass (3 sweep files; small is under 1.5): day 2 is merged by
    // the first run, which leaves nothing it could merge (the lone files are not "left").
    expect(runs[0]?.filesRewritten, JSON.stringify(runs)).toBeGreaterThanOrEqual(DAY2_FILES);
    expect(runs.map((run) => run.smallFilesLeft), JSON.stringify(runs)).toEqual([0, 0, 0]);
    const rows = await duckdbOverObjects(objects, (await currentManifests(objects, table, (await loadIcebergTable(objects, table))!.metadata)).flatMap((m) => m.entries.filter((e) => e.status !== 2).map((e) => e.data_file.file_path.slice(`s3://${BUCKET}/`.length))), s3.dir, 'SELECT event_id, count(*)::INTEGER AS c FROM {files} GROUP BY event_id');
    expectExactlyOnce(counted(rows, 'event_id', 'c'), LONE_SEQ_MAX, 'duckdb');
  }, T);

  it('parquet: the small files of a later day are merged although earlier days each hold one lone small file', async () => {
    const location: S3Location = { bucket: BUCKET, prefix: 'pq/lone' };
    const objects = new ObjectStore(client(), BUCKET);
    for (let c = 0; c < LONE_DAYS + DAY2_FILES; c++) {
      await commitParquetBatch(objects, location, oneDayEvents(1 + c * LONE_PER_COMMIT, LONE_PER_COMMIT, dayOfCommit(c)), { term: 1, nowMs: T0, afterSeq: c * LONE_PER_COMMIT, mayCommit: () => true });
    }
    const live = async () => liveParquetFiles(await readParquetLog(objects, location)).files;
    const sweep = Math.max(...(await live()).map((f) => f.bytes));
    const policy = { removeOrphanFiles: false, orphanMinAgeMs: HOUR_MS, targetFileSizeBytes: 2 * sweep, compactionPassBytesMax: 3 * sweep };
    const runs: Array<Pick<MaintenanceRunFigures, 'compactionPasses' | 'filesRewritten' | 'smallFilesLeft'>> = [];
    for (let i = 0; i < 3; i++) {
      const run = await runParquetMaintenance({ objects, location, fence: nodeFence(1), now: Date.now }, policy);
      runs.push({ compactionPasses: run.compactionPasses, filesRewritten: run.filesRewritten, smallFilesLeft: run.smallFilesLeft });
    }
    expect(runs[0]?.filesRewritten, JSON.stringify(runs)).toBeGreaterThanOrEqual(DAY2_FILES);
    expect(runs.map((run) => run.smallFilesLeft), JSON.stringify(runs)).toEqual([0, 0, 0]);
    const rows = await duckdbOverObjects(objects, (await live()).map((f) => f.key), s3.dir, 'SELECT event_id, count(*)::INTEGER AS c FROM {files} GROUP BY event_id');
    expectExactlyOnce(counted(rows, 'event_id', 'c'), LONE_SEQ_MAX, 'duckdb');
  }, T);
});
