import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { defaultSettings, parseSettings, resolveConfig, type EffectiveSettings, type IcebergCatalogConfig, type S3ConnectionConfig, type StoredEvent } from '@auditlake/model';
import { mergedSearch } from '@auditlake/query';
import { AuditStore } from '@auditlake/store';
import {
  IcebergTierSource,
  S3Connections,
  TIERED_LOCATIONS_META,
  WATERMARK_META,
  ZERO_WATERMARK,
  commitIcebergBatch,
  ensureIcebergTable,
  ensureNamespace,
  resolveIcebergTable,
  type ObjectStore,
} from '@auditlake/lake';
import { TierSweeper } from '@auditlake/tiering';
import { createEventGenerator, mulberry32 } from '@auditlake/testkit';
import { startS3Endpoint } from '@auditlake/s3-endpoint';
import { startCpuMonitor, type CpuShare } from './cpu-monitor.js';
import { latencyStats, type LatencyStats } from './latency-stats.js';
import { generatedBatches } from './tiering-table-days.js';
import { scratchDir } from './scratch-dir.js';
import { loadGenerated } from './store-loader.js';
import { Q_NEEDLE } from './search-bench.js';
import { runTierFileBench, type TierFileFigures } from './tier-file-bench.js';

const DAY_MS = 24 * 60 * 60 * 1000;
export const BUCKET = 'bench';
export const CONNECTION_ID = 'bench';
const CATALOG = 'bench';
const SWEEP_TABLE = `${CATALOG}.sweep.audit_events`;
const VIEWER_TABLE = `${CATALOG}.viewer.audit_events`;
const PARQUET_PATH = `s3://${BUCKET}/parquet/audit`;
/** Timed rounds of the one-file encoding comparison (each well under a second). */
const TIER_FILE_ROUNDS = 15;

export interface TieringBenchOptions {
  seed: number;
  sweepEvents: number;
  sweepDays: number;
  sweepBatchSize: number;
  sweepLoadBatchSize: number;
  tableEvents: number;
  tableDays: number;
  requests: number;
  limit: number;
  qScanRepetitions: number;
}

export interface SweepFigures {
  mode: 'parquet' | 'iceberg';
  events: number;
  commits: number;
  elapsedMs: number;
  eventsPerSecond: number;
  commitsPerSecond: number;
  /** Data bytes (Parquet files) the commits reported. */
  dataBytes: number;
  /** Every byte put into the bucket (data, markers, manifests, metadata), from the S3 client. */
  bytesPut: number;
  perCommit: LatencyStats;
  cpu: CpuShare;
}

export interface ByteCounts {
  /** Ranged reads of data files. */
  dataBytes: number;
  dataRequests: number;
  /** Whole-object reads: metadata json, version hint, manifest lists, manifests. */
  metadataBytes: number;
  metadataRequests: number;
}

export interface ViewerFigures {
  events: number;
  days: number;
  commits: number;
  dataFiles: number;
  tableDataBytes: number;
  buildMs: number;
  /** One-day windows at random days, limit `limit`. */
  dayWindow: LatencyStats;
  dayWindowCpu: CpuShare;
  /** Per request, averaged over the measured requests. */
  dayWindowBytes: ByteCounts;
  dayWindowFilesRead: number;
  /** The first request of a fresh source (manifests not yet cached), fetched bytes. */
  coldBytes: ByteCounts;
  qScan: LatencyStats;
  qScanCpu: CpuShare;
  qScanBytes: ByteCounts;
  qScanMatched: number;
  /** Row groups the footer sketches ruled out per `q` scan (never fetched); absent in results stored before sketches. */
  qScanGroupsPruned?: number;
  /** `user=X` over the whole table, X a generated user at random per request (absent in results stored before it). */
  userScan?: FilteredScanFigures;
  /** `table=X` over the whole table, X a generated table name at random per request. */
  tableScan?: FilteredScanFigures;
  duck: LatencyStats;
  duckCpu: CpuShare;
  duckThreads: number;
  duckSingle: LatencyStats;
  duckMatched: number;
  downloadMs: number;
}

/** A filter over the whole tiered table, no time range, limit `limit`. */
export interface FilteredScanFigures {
  latency: LatencyStats;
  /** Per request, averaged. */
  bytes: ByteCounts;
  matchedMean: number;
  groupsPrunedMean: number;
}

export interface TieringFigures {
  sweeps: SweepFigures[];
  viewer: ViewerFigures;
  /** One sweep batch's data file against DuckDB's (absent in results stored before it was measured). */
  file?: TierFileFigures;
}

type Log = (message: string) => void;

/** The bench endpoint's key pair: every request is signed, as against a node's `--embedded-s3`. */
const S3_CREDENTIALS = { accessKeyId: 'ALBENCH0000000000001', secretAccessKey: 'bench-secret-0123456789abcdefghijklmnop' };

/** The embedded S3 endpoint on 127.0.0.1 (real S3 HTTP, SigV4-verified), as `--embedded-s3` starts it, in `directory`. */
export async function startS3(directory: string): Promise<{ endpoint: string; close(): Promise<void> }> {
  const server = await startS3Endpoint({ directory, host: '127.0.0.1', port: 0, buckets: [BUCKET], credentials: S3_CREDENTIALS });
  return { endpoint: server.url, close: () => server.close() };
}

/** S3Connections whose object stores count what they put and fetch. */
class CountingConnections extends S3Connections {
  bytesPut = 0;
  readonly reads: ByteCounts = { dataBytes: 0, dataRequests: 0, metadataBytes: 0, metadataRequests: 0 };

  override bucket(id: string, bucket: string): ObjectStore {
    const objects = super.bucket(id, bucket);
    const put = objects.put.bind(objects);
    const putIfAbsent = objects.putIfAbsent.bind(objects);
    const get = objects.get.bind(objects);
    const getRange = objects.getRange.bind(objects);
    const size = (body: Uint8Array | string) => (typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
    objects.put = async (key, body, contentType) => {
      await put(key, body, contentType);
      this.bytesPut += size(body);
    };
    objects.putIfAbsent = async (key, body, contentType) => {
      const created = await putIfAbsent(key, body, contentType);
      this.bytesPut += size(body);
      return created;
    };
    objects.get = async (key) => {
      const bytes = await get(key);
      this.reads.metadataBytes += bytes.byteLength;
      this.reads.metadataRequests++;
      return bytes;
    };
    objects.getRange = async (key, start, end) => {
      const bytes = await getRange(key, start, end);
      this.reads.dataBytes += bytes.byteLength;
      this.reads.dataRequests++;
      return bytes;
    };
    return objects;
  }

  snapshot(): ByteCounts {
    return { ...this.reads };
  }
}

function diff(after: ByteCounts, before: ByteCounts, per = 1): ByteCounts {
  return {
    dataBytes: (after.dataBytes - before.dataBytes) / per,
    dataRequests: (after.dataRequests - before.dataRequests) / per,
    metadataBytes: (after.metadataBytes - before.metadataBytes) / per,
    metadataRequests: (after.metadataRequests - before.metadataRequests) / per,
  };
}

export function connectionConfig(endpoint: string): S3ConnectionConfig {
  return { id: CONNECTION_ID, endpoint, region: 'us-east-1', ...S3_CREDENTIALS, forcePathStyle: true };
}

function settingsFor(mode: 'parquet' | 'iceberg'): EffectiveSettings {
  return {
    // The defaults (maintenance settings included), then what this bench sets.
    ...parseSettings(defaultSettings(resolveConfig())),
    retentionDays: 90,
    readEnabled: true,
    readSampleRate: 1,
    tierMode: mode,
    tierIcebergTable: SWEEP_TABLE,
    tierParquetPath: PARQUET_PATH,
    tierConnectionId: CONNECTION_ID,
    tierRetainLocalDays: 7,
    redactKeys: [],
  };
}

const noLog = { info: () => undefined, warn: () => undefined };

async function runSweeps(options: TieringBenchOptions, connections: CountingConnections, catalogs: Map<string, IcebergCatalogConfig>, dir: string, log: Log): Promise<SweepFigures[]> {
  const store = await AuditStore.open({ location: join(dir, 'store') });
  try {
    const endTs = Date.now();
    const generator = createEventGenerator({ seed: options.seed, startTs: endTs - options.sweepDays * DAY_MS, spanMs: options.sweepDays * DAY_MS, count: options.sweepEvents });
    const loadStarted = performance.now();
    await loadGenerated(store, generator, options.sweepEvents, options.sweepLoadBatchSize);
    log(`  loaded ${options.sweepEvents} events into LevelDB in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`);

    const figures: SweepFigures[] = [];
    for (const mode of ['parquet', 'iceberg'] as const) {
      // Each mode tiers the whole log from the start: reset what the other mode recorded.
      await store.putMeta({ [WATERMARK_META]: ZERO_WATERMARK, [TIERED_LOCATIONS_META]: [] });
      let dataBytes = 0;
      let tiered = 0;
      const settings = settingsFor(mode);
      const sweeper = new TierSweeper({
        store,
        connections,
        catalogs,
        settings: () => settings,
        isLeader: () => true,
        term: () => 1,
        intervalMs: 3_600_000,
        batchSizeMax: options.sweepBatchSize,
        settleMs: 0,
        backoffInitialMs: 1000,
        backoffMaxMs: 1000,
        log: noLog,
        onTiered: (batch, bytes) => {
          tiered += batch.length;
          dataBytes += bytes;
        },
      });
      const putBefore = connections.bytesPut;
      const perCommitMs: number[] = [];
      const stopCpu = startCpuMonitor();
      const started = performance.now();
      for (;;) {
        const t0 = performance.now();
        const outcome = await sweeper.sweep();
        if (outcome === 'nothing-to-tier') break;
        if (outcome !== 'tiered' && outcome !== 'tiered-full') throw new Error(`${mode} sweep: ${outcome}: ${(await sweeper.status()).lastError ?? ''}`);
        perCommitMs.push(performance.now() - t0);
      }
      const elapsedMs = performance.now() - started;
      const cpu = stopCpu();
      await sweeper.close();
      if (tiered !== options.sweepEvents) throw new Error(`${mode}: tiered ${tiered} of ${options.sweepEvents} events`);
      const result: SweepFigures = {
        mode,
        events: tiered,
        commits: perCommitMs.length,
        elapsedMs,
        eventsPerSecond: tiered / (elapsedMs / 1000),
        commitsPerSecond: perCommitMs.length / (elapsedMs / 1000),
        dataBytes,
        bytesPut: connections.bytesPut - putBefore,
        perCommit: latencyStats(perCommitMs),
        cpu,
      };
      log(`  ${mode}: ${Math.round(result.eventsPerSecond)} events/s, ${result.commitsPerSecond.toFixed(1)} commits/s, p50 ${result.perCommit.p50Ms.toFixed(0)} ms/commit`);
      figures.push(result);
    }
    return figures;
  } finally {
    await store.close();
  }
}

/**
 * Events per commit of the viewer's table. A day's events at 10M (333,333) in one commit kept
 * several days' events (GBs) in the heap while encoding, and garbage collection then stalled
 * the in-process S3 endpoint past the S3 client's 15 s deadline; 100,000 keeps the heap small, at
 * about 4 data files per day.
 */
const TABLE_BATCH_EVENTS = 100_000;

/** Builds the viewer's table: commits of TABLE_BATCH_EVENTS events, in event-time order (each commit writes a file per day it covers). */
async function buildTable(options: TieringBenchOptions, connections: CountingConnections, catalogs: Map<string, IcebergCatalogConfig>, startTs: number, log: Log) {
  const table = resolveIcebergTable(VIEWER_TABLE, catalogs);
  const objects = connections.bucket(table.connectionId, table.s3.bucket);
  await ensureNamespace(connections, table);
  let loaded = await ensureIcebergTable(objects, table, Date.now());
  const nowMs = startTs + options.tableDays * DAY_MS + DAY_MS;
  let seq = 0;
  let commits = 0;
  let dataFiles = 0;
  let dataBytes = 0;
  const started = performance.now();
  // Generation runs in a worker, a batch ahead of the commits (tiering-table-worker.ts).
  const batches = generatedBatches({ seed: options.seed + 1, startTs, days: options.tableDays, events: options.tableEvents, nowMs, batchEvents: TABLE_BATCH_EVENTS, aheadBatches: 1 });
  let logged = 0;
  for await (const batch of batches) {
    seq += batch.length;
    const result = await commitIcebergBatch(objects, table, loaded, batch, { term: 1, nowMs: Date.now(), writerId: 'bench', mayCommit: () => true });
    commits++;
    dataFiles += result.files;
    dataBytes += result.bytes;
    loaded = (await ensureIcebergTable(objects, table, Date.now()));
    if (loaded.version !== result.version) throw new Error(`table at v${loaded.version}, expected v${result.version}`);
    if (seq - logged >= options.tableEvents / 6 || seq === options.tableEvents) {
      logged = seq;
      log(`  table: ${seq} events, ${commits} commits, ${(dataBytes / 1024 ** 2).toFixed(0)} MiB (${((performance.now() - started) / 1000).toFixed(0)} s)`);
    }
  }
  return { table, commits, dataFiles, dataBytes, buildMs: performance.now() - started };
}

async function* nothing(): AsyncIterable<StoredEvent> {
  // The viewer with an empty local store: everything comes from the table.
}

async function runViewer(options: TieringBenchOptions, connections: CountingConnections, catalogs: Map<string, IcebergCatalogConfig>, dir: string, log: Log): Promise<ViewerFigures> {
  const startTs = Math.floor(Date.now() / DAY_MS) * DAY_MS - options.tableDays * DAY_MS;
  const built = await buildTable(options, connections, catalogs, startTs, log);
  const { table } = built;
  const source = new IcebergTierSource(connections, { identifier: table.identifier, location: table.location, connectionId: table.connectionId });
  const search = (filter: { fromMs?: number; toMs?: number; q?: string; user?: string; table?: string }) =>
    mergedSearch({ local: nothing(), tiers: [source], filter: { action: 'all', limit: options.limit, ...filter }, localCompleteFromMs: undefined });

  const random = mulberry32(options.seed);
  const window = (day: number) => ({ fromMs: startTs + day * DAY_MS, toMs: startTs + (day + 1) * DAY_MS - 1 });
  const eventsPerDay = options.tableEvents / options.tableDays;
  const check = (count: number, tierNote: string | undefined) => {
    if (tierNote) throw new Error(tierNote);
    const expected = Math.min(options.limit, Math.floor(eventsPerDay * 0.9));
    if (count < expected) throw new Error(`a one-day window returned ${count} events, expected at least ${expected}`);
  };
  // The first request of a fresh source reads every manifest once; later ones reuse them.
  const coldBefore = connections.snapshot();
  const cold = await search(window(Math.floor(random() * options.tableDays)));
  check(cold.events.length, cold.tierNote);
  const coldBytes = diff(connections.snapshot(), coldBefore);
  for (let i = 0; i < 5; i++) {
    const warm = await search(window(Math.floor(random() * options.tableDays)));
    check(warm.events.length, warm.tierNote);
  }

  const dayMs: number[] = [];
  let filesRead = 0;
  const before = connections.snapshot();
  const stopDayCpu = startCpuMonitor();
  for (let i = 0; i < options.requests; i++) {
    const t0 = performance.now();
    const result = await search(window(Math.floor(random() * options.tableDays)));
    dayMs.push(performance.now() - t0);
    check(result.events.length, result.tierNote);
    filesRead += result.filesRead;
  }
  const dayWindowCpu = stopDayCpu();
  const dayWindowBytes = diff(connections.snapshot(), before, options.requests);
  log(`  one-day window p50 ${latencyStats(dayMs).p50Ms.toFixed(1)} ms, ${(dayWindowBytes.dataBytes / 1024).toFixed(0)} KiB of data per request`);

  const qMs: number[] = [];
  let qScanMatched = 0;
  let qScanGroupsPruned = 0;
  const qBefore = connections.snapshot();
  const stopQCpu = startCpuMonitor();
  for (let i = 0; i < options.qScanRepetitions; i++) {
    const t0 = performance.now();
    const result = await search({ q: Q_NEEDLE });
    qMs.push(performance.now() - t0);
    if (result.tierNote) throw new Error(result.tierNote);
    qScanMatched = result.events.length;
    qScanGroupsPruned = result.groupsPruned;
    log(`  q scan ${i + 1}/${options.qScanRepetitions}: ${((performance.now() - t0) / 1000).toFixed(2)} s, ${result.groupsPruned} row groups ruled out by their sketch`);
  }
  const qScanCpu = stopQCpu();
  const qScanBytes = diff(connections.snapshot(), qBefore, options.qScanRepetitions);

  // What an investigator asks: one user's or one table's events, newest first, over everything.
  // The generator's catalog depends only on its seed: the table's users and table names.
  const catalog = createEventGenerator({ seed: options.seed + 1, startTs, spanMs: DAY_MS, count: 1 });
  const filteredScan = async (name: string, filterOf: () => { user?: string; table?: string }): Promise<FilteredScanFigures> => {
    const times: number[] = [];
    let matched = 0;
    let pruned = 0;
    const scanBefore = connections.snapshot();
    for (let i = 0; i < options.requests; i++) {
      const t0 = performance.now();
      const result = await search(filterOf());
      times.push(performance.now() - t0);
      if (result.tierNote) throw new Error(result.tierNote);
      matched += result.events.length;
      pruned += result.groupsPruned;
    }
    const figures = { latency: latencyStats(times), bytes: diff(connections.snapshot(), scanBefore, options.requests), matchedMean: matched / options.requests, groupsPrunedMean: pruned / options.requests };
    log(`  ${name} over the whole table p50 ${figures.latency.p50Ms.toFixed(1)} ms, ${(figures.bytes.dataBytes / 1024).toFixed(0)} KiB of data and ${figures.groupsPrunedMean.toFixed(0)} groups ruled out per request`);
    return figures;
  };
  const userScan = await filteredScan('user=X', () => ({ user: catalog.users[Math.floor(random() * catalog.users.length)] as string }));
  const tableScan = await filteredScan('table=X', () => ({ table: catalog.tables[Math.floor(random() * catalog.tables.length)] as string }));
  // The viewer is done: stop its prefilter workers now, not when they turn idle.
  await source.close();

  // DuckDB reads the same Parquet bytes: the table's data files, downloaded over S3 first.
  const downloadStarted = performance.now();
  const objects = connections.bucket(table.connectionId, table.s3.bucket);
  const localDir = join(dir, 'download');
  const dataKeys = (await objects.list(`${table.s3.prefix}/data/`)).filter((k) => k.endsWith('.parquet'));
  for (const key of dataKeys) {
    const path = join(localDir, key);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, await objects.get(key));
  }
  const downloadMs = performance.now() - downloadStarted;
  const needle = Q_NEEDLE.toLowerCase();
  const predicate = ['query', 'details', 'resource', 'user_id', 'action', 'tables'].map((c) => `contains(lower(${c}), '${needle}')`).join(' OR ');
  const sql = `SELECT * FROM read_parquet('${localDir}/${table.s3.prefix}/data/*/*.parquet') WHERE ${predicate} ORDER BY ts DESC, ingest_ts DESC, event_id DESC LIMIT ${options.limit}`;
  const duckRun = async (threads: number | undefined) => {
    const instance = await DuckDBInstance.create(':memory:', threads === undefined ? {} : { threads: String(threads) });
    const connection = await instance.connect();
    try {
      const reported = (await connection.runAndReadAll('SELECT current_setting(\'threads\') AS t')).getRowObjectsJson()[0]?.['t'];
      const times: number[] = [];
      let matched = 0;
      for (let i = 0; i < options.qScanRepetitions; i++) {
        const t0 = performance.now();
        const reader = await connection.runAndReadAll(sql);
        matched = reader.getRowObjects().length;
        times.push(performance.now() - t0);
      }
      return { times, matched, threads: Number(reported) };
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  };
  const stopDuckCpu = startCpuMonitor();
  const duck = await duckRun(undefined);
  const duckCpu = stopDuckCpu();
  const duckSingle = await duckRun(1);
  log(`  DuckDB (${duck.threads} threads) median ${(latencyStats(duck.times).p50Ms / 1000).toFixed(2)} s; 1 thread ${(latencyStats(duckSingle.times).p50Ms / 1000).toFixed(2)} s`);

  return {
    events: options.tableEvents,
    days: options.tableDays,
    commits: built.commits,
    dataFiles: built.dataFiles,
    tableDataBytes: built.dataBytes,
    buildMs: built.buildMs,
    dayWindow: latencyStats(dayMs),
    dayWindowCpu,
    dayWindowBytes,
    dayWindowFilesRead: filesRead / options.requests,
    coldBytes,
    qScan: latencyStats(qMs),
    qScanCpu,
    qScanBytes,
    qScanMatched,
    qScanGroupsPruned,
    userScan,
    tableScan,
    duck: latencyStats(duck.times),
    duckCpu,
    duckThreads: duck.threads,
    duckSingle: latencyStats(duckSingle.times),
    duckMatched: duck.matched,
    downloadMs,
  };
}

/**
 * Tiering: a real S3 endpoint over HTTP on 127.0.0.1. First the sweep, parquet then
 * iceberg, from a real LevelDB store; then the viewer over a large Iceberg table, with
 * DuckDB scanning the same data files as the reference for the free-text scan.
 */
export async function runTieringBench(options: TieringBenchOptions, log: Log): Promise<TieringFigures> {
  await using dir = await scratchDir('tiering');
  const s3 = await startS3(join(dir.path, 's3'));
  const connections = new CountingConnections(new Map([[CONNECTION_ID, connectionConfig(s3.endpoint)]]));
  const catalogs = new Map<string, IcebergCatalogConfig>([[CATALOG, { name: CATALOG, warehouse: `s3://${BUCKET}/warehouse`, connectionId: CONNECTION_ID }]]);
  try {
    log(`tiering: sweeping ${options.sweepEvents} events (parquet, then iceberg) to the embedded S3 endpoint at ${s3.endpoint}…`);
    const sweeps = await runSweeps(options, connections, catalogs, dir.path, log);
    log(`tiering: building an Iceberg table of ${options.tableEvents} events over ${options.tableDays} days, then the viewer…`);
    const viewer = await runViewer(options, connections, catalogs, dir.path, log);
    const file = await runTierFileBench({ seed: options.seed + 2, events: options.sweepBatchSize, repetitions: TIER_FILE_ROUNDS }, log);
    return { sweeps, viewer, file };
  } finally {
    connections.close();
    await s3.close();
  }
}
