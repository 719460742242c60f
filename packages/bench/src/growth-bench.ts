import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { defaultSettings, parseSettings, resolveConfig, validateEvent, type IcebergCatalogConfig, type StoredEvent } from '@auditlake/model';
import { mergedSearch } from '@auditlake/query';
import {
  IcebergTierSource,
  S3Connections,
  commitIcebergBatch,
  ensureIcebergTable,
  ensureNamespace,
  expireOverdueSnapshots,
  joinKey,
  rewriteManifestsIfMany,
  metadataFileKey,
  metadataVersionKey,
  resolveIcebergTable,
  runIcebergMaintenance,
  type IcebergTableRef,
  type MaintenancePolicy,
  type MaintenanceRunFigures,
  type ObjectStore,
} from '@auditlake/lake';
import { createEventGenerator } from '@auditlake/testkit';
import { latencyStats, type LatencyStats } from './latency-stats.js';
import { scratchDir } from './scratch-dir.js';
import { BUCKET, CONNECTION_ID, connectionConfig, startS3 } from './tiering-bench.js';

const DAY_MS = 24 * 60 * 60 * 1000;
/** Each commit is one sweep of the default 5-minute interval: its events span those 5 minutes. */
export const GROWTH_SWEEP_INTERVAL_MS = 5 * 60 * 1000;
/**
 * The time the tables' commits and maintenance runs are made at: the run's start, then one
 * GROWTH_SWEEP_INTERVAL_MS more for each sweep, so snapshots and replaced files have the ages
 * a node sweeping at that interval gives them. On the wall clock a fast machine made 100
 * commits within the 60 s a snapshot is kept for readers (SNAPSHOT_READ_GRACE_MS), so the
 * sweep's expiry between maintenance runs, which only expires older ones, never ran and
 * metadata.json grew with every commit between runs: the figure measured the machine's speed,
 * not the table's growth. Ahead of the wall clock, never behind it, so an object's own time
 * (S3 LastModified, which orphan cleanup compares with it) is never in its future.
 */
class SweepClock {
  #ms = Date.now();
  readonly now = (): number => this.#ms;

  nextSweep(): void {
    this.#ms = Math.max(this.#ms + GROWTH_SWEEP_INTERVAL_MS, Date.now());
  }
}

/** The commit time figure is the p50 over this many latest commits. */
export const GROWTH_P50_WINDOW_COMMITS = 100;
/** The first checkpoint, whatever the checkpoint interval. */
export const GROWTH_FIRST_CHECKPOINT = 100;
/**
 * Cold reads per checkpoint, each by a fresh reader; the median is reported. One read is a few
 * tens of milliseconds on a maintained table, where a single sample on a shared machine varies
 * by half.
 */
export const GROWTH_COLD_READS = 5;
/**
 * Commits (then a maintenance run and a cold read) into a throwaway table before the measured
 * ones, so the first checkpoint's commit times are not those of code still being compiled.
 */
export const GROWTH_WARMUP_COMMITS = 30;
/** Retained snapshots of the maintained table (the `snapshot.retain.last` default). */
const SNAPSHOT_RETAIN_LAST = 24;
const CATALOG = 'growth';
/** The body of an abandoned attempt's file: its content does not matter, only that nothing names it. */
const STRAY_BYTES = new Uint8Array(1024);

export interface GrowthBenchOptions {
  seed: number;
  commits: number;
  eventsPerCommit: number;
  maintenanceEvery: number;
  checkpointEvery: number;
  /** Page size of the cold one-day read. */
  limit: number;
}

/** Requests and bytes of one read, from a fresh S3 client. */
export interface RequestCounts {
  gets: number;
  getBytes: number;
  heads: number;
  lists: number;
}

/** The median (by time) of {@link GROWTH_COLD_READS} cold reads. */
export interface ColdRead extends RequestCounts {
  ms: number;
  /** The fastest and slowest of the reads. */
  minMs: number;
  maxMs: number;
  events: number;
  filesRead: number;
}

/** One variant's table after `commits` commits (after the maintenance run due at that commit). */
export interface GrowthCheckpoint {
  commits: number;
  /** The current `vN.metadata.json`. */
  metadataJsonBytes: number;
  /** Everything under the table's `metadata/`. */
  metadataBytes: number;
  metadataObjects: number;
  dataBytes: number;
  dataObjects: number;
  /** Snapshots the current metadata keeps. */
  snapshots: number;
  /** Rows of the current snapshot's live files (must equal every event committed). */
  liveRows: number;
  liveFiles: number;
  /** p50 of the commit times of the latest {@link GROWTH_P50_WINDOW_COMMITS} commits. */
  commitP50Ms: number;
  coldRead: ColdRead;
}

export interface MaintenanceRunRecord extends MaintenanceRunFigures {
  afterCommits: number;
  ms: number;
  /** `vN.metadata.json` right before the run: the largest it gets between runs. */
  metadataJsonBytesBefore: number;
}

export interface GrowthVariant {
  maintained: boolean;
  checkpoints: GrowthCheckpoint[];
  /** Every commit's time (load the table, then commit, as the sweep does). */
  commit: LatencyStats;
  maintenanceRuns: MaintenanceRunRecord[];
  /** The largest `vN.metadata.json` any commit wrote (absent in reports before it was measured). */
  metadataJsonBytesMax?: number;
  /** Sweep commits that expired overdue snapshots between maintenance runs (maintained table only). */
  sweepExpiries?: number;
}

export interface GrowthFigures {
  commits: number;
  eventsPerCommit: number;
  maintenanceEvery: number;
  days: number;
  /** Abandoned attempts (stray data files) left in each table, one per maintenance interval. */
  abandonedAttempts: number;
  /** Events of the day the cold read asks for, at the end. */
  readDayEvents: number;
  policy: MaintenancePolicy;
  elapsedMs: number;
  /** Without maintenance, then with. */
  variants: [GrowthVariant, GrowthVariant];
}

type Log = (message: string) => void;

/** S3Connections whose object stores count every request, for one cold read. */
class RequestCountingConnections extends S3Connections {
  readonly counts: RequestCounts = { gets: 0, getBytes: 0, heads: 0, lists: 0 };

  override bucket(id: string, bucket: string): ObjectStore {
    const objects = super.bucket(id, bucket);
    const get = objects.get.bind(objects);
    const getRange = objects.getRange.bind(objects);
    const head = objects.head.bind(objects);
    const listObjects = objects.listObjects.bind(objects);
    // find, exists and byteSource go through these, so every request is counted once.
    objects.get = async (key) => {
      this.counts.gets++;
      const bytes = await get(key);
      this.counts.getBytes += bytes.byteLength;
      return bytes;
    };
    objects.getRange = async (key, start, end) => {
      this.counts.gets++;
      const bytes = await getRange(key, start, end);
      this.counts.getBytes += bytes.byteLength;
      return bytes;
    };
    objects.head = async (key) => {
      this.counts.heads++;
      return head(key);
    };
    objects.listObjects = async (prefix, options) => {
      this.counts.lists++;
      return listObjects(prefix, options);
    };
    return objects;
  }
}

async function* nothing(): AsyncIterable<StoredEvent> {
  // The reader with an empty local store: everything comes from the table.
}

/** One table of the run, committed to batch by batch. */
class GrowthTable {
  readonly commitMs: number[] = [];
  readonly checkpoints: GrowthCheckpoint[] = [];
  readonly maintenanceRuns: MaintenanceRunRecord[] = [];
  /** Sweep commits that expired overdue snapshots between maintenance runs. */
  sweepExpiries = 0;
  /** The largest `vN.metadata.json` any commit of this table wrote. */
  metadataJsonBytesMax = 0;
  readonly ref: IcebergTableRef;
  readonly maintained: boolean;
  readonly #connections: S3Connections;
  readonly #objects: ObjectStore;
  /** The S3 endpoint, for the cold reader's own client. */
  readonly #endpoint: string;
  /** The time commits and maintenance runs are made at (SweepClock). */
  readonly #now: () => number;

  constructor(ref: IcebergTableRef, maintained: boolean, connections: S3Connections, endpoint: string, now: () => number) {
    this.ref = ref;
    this.maintained = maintained;
    this.#connections = connections;
    this.#objects = connections.bucket(ref.connectionId, ref.s3.bucket);
    this.#endpoint = endpoint;
    this.#now = now;
  }

  async create(): Promise<void> {
    await ensureNamespace(this.#connections, this.ref);
    await ensureIcebergTable(this.#objects, this.ref, this.#now());
  }

  /**
   * What a commit that never landed leaves (a deposed leader's or a crashed sweep's data file):
   * an object under data/ that no metadata names, named as the sweep names its files (orphan
   * cleanup deletes nothing else), for orphan cleanup to find.
   */
  async abandonAttempt(commit: number): Promise<void> {
    const name = `${String(commit).padStart(16, '0')}-t0-${randomUUID().slice(0, 8)}.parquet`;
    await this.#objects.put(joinKey(this.ref.s3.prefix, `data/event_time_day=2026-01-01/${name}`), STRAY_BYTES, 'application/vnd.apache.parquet');
  }

  /**
   * One sweep's Iceberg work, timed, as the sweeper does it: load the current version, commit
   * the batch (the metadata-log bounded by `metadata.previous.versions.max`), then — only where
   * maintenance is on — merge manifests once 100 gathered and expire snapshots once twice
   * `snapshot.retain.last` have.
   */
  async commit(batch: readonly StoredEvent[], policy: MaintenancePolicy): Promise<void> {
    const started = performance.now();
    const loaded = await ensureIcebergTable(this.#objects, this.ref, this.#now());
    const fence = { term: 1, mayCommit: () => true };
    const result = await commitIcebergBatch(this.#objects, this.ref, loaded, batch, {
      ...fence,
      nowMs: this.#now(),
      writerId: `auditlake:${this.ref.identifier}`,
      metadataLogEntriesMax: policy.metadataPreviousVersionsMax,
    });
    if (this.maintained) {
      const context = { objects: this.#objects, table: this.ref, fence, now: this.#now, metadataLogEntriesMax: policy.metadataPreviousVersionsMax };
      const merged = await rewriteManifestsIfMany(context, result.loaded, result.manifests);
      if (await expireOverdueSnapshots(context, merged?.loaded ?? result.loaded, policy.snapshotRetainLast)) this.sweepExpiries++;
    }
    this.commitMs.push(performance.now() - started);
    // Outside the timing: the commit's own version is the largest file this sweep wrote.
    const head = await this.#objects.head(metadataVersionKey(this.ref, result.version));
    this.metadataJsonBytesMax = Math.max(this.metadataJsonBytesMax, head?.bytes ?? 0);
  }

  async #metadataJsonBytes(): Promise<{ version: number; bytes: number; snapshots: number }> {
    const loaded = await ensureIcebergTable(this.#objects, this.ref, this.#now());
    const head = await this.#objects.head(metadataVersionKey(this.ref, loaded.version));
    return { version: loaded.version, bytes: head?.bytes ?? 0, snapshots: loaded.metadata.snapshots.length };
  }

  /** The node's maintenance run (as its scheduler calls it), timed. */
  async maintain(afterCommits: number, policy: MaintenancePolicy): Promise<MaintenanceRunRecord> {
    const before = await this.#metadataJsonBytes();
    const started = performance.now();
    const figures = await runIcebergMaintenance({ objects: this.#objects, table: this.ref, fence: { term: 1, mayCommit: () => true }, now: this.#now }, policy);
    const record = { ...figures, afterCommits, ms: performance.now() - started, metadataJsonBytesBefore: before.bytes };
    this.maintenanceRuns.push(record);
    return record;
  }

  /** A fresh reader (own S3 client, no cached manifests or footers) reads one day's first page. */
  async coldRead(window: { fromMs: number; toMs: number }, limit: number): Promise<Omit<ColdRead, 'minMs' | 'maxMs'> & { liveRows: number; liveFiles: number }> {
    const connections = new RequestCountingConnections(new Map([[CONNECTION_ID, connectionConfig(this.#endpoint)]]));
    const source = new IcebergTierSource(connections, { identifier: this.ref.identifier, location: this.ref.location, connectionId: this.ref.connectionId });
    try {
      const started = performance.now();
      const result = await mergedSearch({ local: nothing(), tiers: [source], filter: { action: 'all', limit, ...window }, localCompleteFromMs: undefined });
      const ms = performance.now() - started;
      if (result.tierNote) throw new Error(`${this.ref.identifier}: ${result.tierNote}`);
      const counts = { ...connections.counts };
      // Listed after the timing (the list is cached, so this makes no request).
      const files = await source.listFiles();
      return { ...counts, ms, events: result.events.length, filesRead: result.filesRead, liveRows: files.reduce((sum, f) => sum + f.rows, 0), liveFiles: files.length };
    } finally {
      await source.close();
      connections.close();
    }
  }

  async checkpoint(commits: number, window: { fromMs: number; toMs: number }, limit: number): Promise<GrowthCheckpoint> {
    const current = await this.#metadataJsonBytes();
    const metadata = await this.#objects.listObjects(metadataFileKey(this.ref, ''));
    const data = await this.#objects.listObjects(joinKey(this.ref.s3.prefix, 'data/'));
    const reads = [];
    for (let i = 0; i < GROWTH_COLD_READS; i++) reads.push(await this.coldRead(window, limit));
    reads.sort((a, b) => a.ms - b.ms);
    const median = reads[Math.floor(reads.length / 2)];
    if (!median) throw new TypeError('no cold read');
    const { liveRows, liveFiles, ...read } = median;
    const coldRead: ColdRead = { ...read, minMs: reads[0]?.ms ?? read.ms, maxMs: reads.at(-1)?.ms ?? read.ms };
    const checkpoint: GrowthCheckpoint = {
      commits,
      metadataJsonBytes: current.bytes,
      metadataBytes: metadata.reduce((sum, o) => sum + o.bytes, 0),
      metadataObjects: metadata.length,
      dataBytes: data.reduce((sum, o) => sum + o.bytes, 0),
      dataObjects: data.length,
      snapshots: current.snapshots,
      liveRows,
      liveFiles,
      commitP50Ms: latencyStats(this.commitMs.slice(-GROWTH_P50_WINDOW_COMMITS)).p50Ms,
      coldRead,
    };
    this.checkpoints.push(checkpoint);
    return checkpoint;
  }

  figures(): GrowthVariant {
    return {
      maintained: this.maintained,
      checkpoints: this.checkpoints,
      commit: latencyStats(this.commitMs),
      maintenanceRuns: this.maintenanceRuns,
      metadataJsonBytesMax: this.metadataJsonBytesMax,
      sweepExpiries: this.sweepExpiries,
    };
  }
}

/** The commit counts figures are taken at: 100, every `every`, and the last. */
export function checkpointCommits(commits: number, every: number): number[] {
  const at = new Set<number>();
  if (GROWTH_FIRST_CHECKPOINT <= commits) at.add(GROWTH_FIRST_CHECKPOINT);
  for (let n = every; n <= commits; n += every) at.add(n);
  at.add(commits);
  return [...at].sort((a, b) => a - b);
}

/** Exercises commit, maintenance and cold read on a table of its own (see {@link GROWTH_WARMUP_COMMITS}). */
async function warmUp(connections: S3Connections, catalogs: ReadonlyMap<string, IcebergCatalogConfig>, endpoint: string, options: GrowthBenchOptions, policy: MaintenancePolicy): Promise<void> {
  const clock = new SweepClock();
  const table = new GrowthTable(resolveIcebergTable(`${CATALOG}.warmup.audit_events`, catalogs), true, connections, endpoint, clock.now);
  await table.create();
  const startTs = Math.floor(Date.now() / DAY_MS) * DAY_MS - DAY_MS;
  const generator = createEventGenerator({ seed: options.seed + 1, startTs, spanMs: GROWTH_WARMUP_COMMITS * GROWTH_SWEEP_INTERVAL_MS, count: GROWTH_WARMUP_COMMITS * options.eventsPerCommit });
  let seq = 0;
  for (let commit = 1; commit <= GROWTH_WARMUP_COMMITS; commit++) {
    const batch = generator.batch(options.eventsPerCommit).map((raw) => ({ ...validateEvent(raw, 'event', { nowMs: Date.now() }), ingestTs: Date.now(), seq: ++seq, term: 1 }));
    clock.nextSweep();
    await table.commit(batch, policy);
  }
  await table.maintain(GROWTH_WARMUP_COMMITS, policy);
  await table.coldRead({ fromMs: startTs, toMs: startTs + DAY_MS - 1 }, options.limit);
}

const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;

/**
 * Growth: the same sweep-sized commits go, in turn, into two Iceberg tables on one in-process
 * S3 endpoint — one never maintained, one given the node's maintenance run every `maintenanceEvery`
 * commits — and both are measured at the same checkpoints, so the two see the same machine.
 */
export async function runGrowthBench(options: GrowthBenchOptions, log: Log): Promise<GrowthFigures> {
  await using dir = await scratchDir('growth');
  const s3 = await startS3(join(dir.path, 's3'));
  const connections = new S3Connections(new Map([[CONNECTION_ID, connectionConfig(s3.endpoint)]]));
  const catalogs = new Map<string, IcebergCatalogConfig>([[CATALOG, { name: CATALOG, warehouse: `s3://${BUCKET}/warehouse`, connectionId: CONNECTION_ID }]]);
  try {
    const defaults = parseSettings(defaultSettings(resolveConfig()));
    const policy: MaintenancePolicy = {
      snapshotRetainLast: SNAPSHOT_RETAIN_LAST,
      removeOrphanFiles: true,
      // Nothing else writes to these tables, so every unreferenced file may go at once.
      orphanMinAgeMs: 0,
      targetFileSizeBytes: defaults.maintenanceTargetFileSizeBytes,
      metadataPreviousVersionsMax: defaults.maintenanceMetadataPreviousVersionsMax,
    };
    await warmUp(connections, catalogs, s3.endpoint, options, policy);
    const clock = new SweepClock();
    const plain = new GrowthTable(resolveIcebergTable(`${CATALOG}.plain.audit_events`, catalogs), false, connections, s3.endpoint, clock.now);
    const maintained = new GrowthTable(resolveIcebergTable(`${CATALOG}.maintained.audit_events`, catalogs), true, connections, s3.endpoint, clock.now);
    await plain.create();
    await maintained.create();

    const spanMs = options.commits * GROWTH_SWEEP_INTERVAL_MS;
    const days = Math.ceil(spanMs / DAY_MS);
    const startTs = Math.floor(Date.now() / DAY_MS) * DAY_MS - days * DAY_MS;
    const nowMs = startTs + days * DAY_MS;
    // The day read at every checkpoint: the first, which fills up over the run's first day of sweeps.
    const readDay = { fromMs: startTs, toMs: startTs + DAY_MS - 1 };
    const events = options.commits * options.eventsPerCommit;
    const generator = createEventGenerator({ seed: options.seed, startTs, spanMs, count: events });
    const checkpoints = new Set(checkpointCommits(options.commits, options.checkpointEvery));
    log(`growth: ${options.commits} commits of ${options.eventsPerCommit} events into two tables (maintenance every ${options.maintenanceEvery} in one) at ${s3.endpoint}…`);

    let seq = 0;
    let readDayEvents = 0;
    let abandoned = 0;
    let orphansDeleted = 0;
    const started = performance.now();
    for (let commit = 1; commit <= options.commits; commit++) {
      const batch: StoredEvent[] = [];
      for (const raw of generator.batch(options.eventsPerCommit)) {
        const event = validateEvent(raw, 'event', { nowMs });
        seq++;
        if (event.timestamp <= readDay.toMs) readDayEvents++;
        batch.push({ ...event, ingestTs: event.timestamp + 500, seq, term: 1 });
      }
      clock.nextSweep();
      await plain.commit(batch, policy);
      await maintained.commit(batch, policy);
      // One abandoned attempt per maintenance interval, in both tables alike, halfway between runs.
      if (commit % options.maintenanceEvery === Math.floor(options.maintenanceEvery / 2)) {
        await plain.abandonAttempt(commit);
        await maintained.abandonAttempt(commit);
        abandoned++;
      }
      if (commit % options.maintenanceEvery === 0) {
        const run = await maintained.maintain(commit, policy);
        orphansDeleted += run.orphansDeleted;
        if (orphansDeleted < abandoned) throw new Error(`maintenance after ${commit} commits: ${orphansDeleted} orphans deleted in all, fewer than the ${abandoned} abandoned attempts`);
      }
      if (!checkpoints.has(commit)) continue;
      const expected = Math.min(options.limit, readDayEvents);
      for (const table of [plain, maintained]) {
        const point = await table.checkpoint(commit, readDay, options.limit);
        if (point.coldRead.events !== expected) throw new Error(`${table.ref.identifier}: the one-day read returned ${point.coldRead.events} events, expected ${expected}`);
        if (point.liveRows !== seq) throw new Error(`${table.ref.identifier}: the current snapshot holds ${point.liveRows} rows after ${seq} events committed`);
        log(
          `  ${commit} commits, ${table.maintained ? 'maintained' : 'plain'}: metadata.json ${kib(point.metadataJsonBytes)}, metadata/ ${kib(point.metadataBytes)} in ${point.metadataObjects} objects, ` +
            `commit p50 ${point.commitP50Ms.toFixed(1)} ms, cold day read ${point.coldRead.ms.toFixed(0)} ms (${point.coldRead.gets} GETs) (${((performance.now() - started) / 1000).toFixed(0)} s)`,
        );
      }
    }
    return {
      commits: options.commits,
      eventsPerCommit: options.eventsPerCommit,
      maintenanceEvery: options.maintenanceEvery,
      days,
      abandonedAttempts: abandoned,
      readDayEvents,
      policy,
      elapsedMs: performance.now() - started,
      variants: [plain.figures(), maintained.figures()],
    };
  } finally {
    connections.close();
    await s3.close();
  }
}
