// Measures what a snapshot expiry costs as a table grows: a table of EXPIRY_COST_COMMITS sweep
// commits (default 3,000) of 2 events over two days (2 data files each, never compacted, so the
// live set grows with the commits), written as a sweep writes between maintenance runs: the
// manifests merged once 100 (rewriteManifestsIfMany), snapshots expired once 48 down to 24
// (expireOverdueSnapshots). Each overdue expiry alternates between the expiry as it was before the
// incremental method (reachability over every manifest of every snapshot; the function below is
// that code) and the expiry now, and prints per block of commits the median run time and the
// GETs of manifests and manifest lists of each, and the load average. Run from packages/lake
// after building it:
//   node scripts/expiry-cost.mjs
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { expireSnapshots, retainedSnapshotIds } from '@auditlake/format';
import { startS3Endpoint } from '@auditlake/s3-endpoint';
import {
  commitIcebergBatch,
  ensureIcebergTable,
  expireIcebergSnapshots,
  mapBounded,
  ManifestCache,
  OBJECT_REQUESTS_IN_FLIGHT_MAX,
  REPLACED_FILE_GRACE_MS,
  resolveIcebergTable,
  rewriteManifestsIfMany,
  S3Connections,
  SNAPSHOT_READ_GRACE_MS,
  commitMetadataVersion,
} from '../dist/index.js';
import { ManifestListCache, planExpiredFiles, reachabilityPlan } from '../dist/iceberg-expired-files.js';
import { tableTurn } from '../dist/iceberg-maintenance-context.js';
import { snapshotReach } from '../dist/iceberg-table-files.js';
import { deletableKeys } from '../dist/iceberg-table-ref.js';
import { twoDayEvents } from '../dist/testing/two-day-events.js';

const COMMITS = Number(process.env.EXPIRY_COST_COMMITS ?? 3000);
const BLOCK = Number(process.env.EXPIRY_COST_BLOCK ?? 500);
const RETAIN_LAST = 24;
const T0 = Date.UTC(2026, 4, 1);
const credentials = { accessKeyId: 'ALEXPIRYCOSTSCRIPT01', secretAccessKey: 'expiry-cost-script-secret-0123456789' };

/** The expiry before the incremental method (iceberg-snapshot-expiry.ts at 1d50a42), no warm-up (no commit lock here). */
async function expireByReachability(context, loaded, retainLast, removedGraceMs, readGraceMs) {
  const cache = new ManifestCache();
  const turn = await tableTurn(context, loaded, async (base) => {
    const nowMs = context.now();
    const grace = removedGraceMs <= 0 ? {} : { keepRemovedSinceMs: nowMs - removedGraceMs, ...(readGraceMs > 0 ? { keepMadeSinceMs: nowMs - readGraceMs } : {}) };
    const next = expireSnapshots(base.metadata, { retainLast, nowMs, previousMetadataPath: base.metadataPath, metadataLogEntriesMax: context.metadataLogEntriesMax, ...grace });
    if (!next) return { loaded: base, expired: 0, doomed: [] };
    const kept = retainedSnapshotIds(base.metadata, retainLast, grace.keepRemovedSinceMs, grace.keepMadeSinceMs);
    const expired = base.metadata.snapshots.filter((snapshot) => !kept.has(snapshot['snapshot-id']));
    const keptReach = new Set();
    for (const snapshot of next.snapshots) await snapshotReach(context.objects, context.table, snapshot, cache, keptReach);
    const expiredReach = new Set();
    for (const snapshot of expired) await snapshotReach(context.objects, context.table, snapshot, cache, expiredReach);
    const doomed = [...expiredReach].filter((path) => !keptReach.has(path));
    return { loaded: await commitMetadataVersion(context.objects, context.table, base, next, context.fence), expired: expired.length, doomed };
  });
  const keys = deletableKeys(context.table, turn.doomed);
  await mapBounded(keys, OBJECT_REQUESTS_IN_FLIGHT_MAX, (key) => context.objects.delete(key));
  return { loaded: turn.loaded, snapshotsExpired: turn.expired, filesDeleted: keys.length };
}

/** `objects` with its GETs of manifests and manifest lists counted into `counts`. */
function counting(objects, counts) {
  return new Proxy(objects, {
    get(target, name) {
      if (name === 'get') {
        return (key) => {
          const file = key.slice(key.lastIndexOf('/') + 1);
          if (/-m\d+\.avro$/.test(file)) counts.manifests++;
          else if (file.startsWith('snap-')) counts.lists++;
          return target.get(key);
        };
      }
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor(sorted.length / 2)];
};

const dir = await mkdtemp(join(tmpdir(), 'expiry-cost-'));
const server = await startS3Endpoint({ directory: join(dir, 's3'), host: '127.0.0.1', port: 0, buckets: ['lake'], credentials });
const connections = new S3Connections(new Map([['s3', { id: 's3', endpoint: server.url, region: 'us-east-1', ...credentials, forcePathStyle: true }]]));
try {
  const objects = connections.bucket('s3', 'lake');
  const table = resolveIcebergTable('cat.ops.expiry_cost', new Map([['cat', { name: 'cat', warehouse: 's3://lake/wh', connectionId: 's3' }]]));
  const fence = { term: 1, mayCommit: () => true };
  // A clock moved 5 s per commit: past SNAPSHOT_READ_GRACE_MS, so every overdue expiry runs.
  let clock = T0 + 30 * 86_400_000;
  const context = { objects, table, fence, now: () => clock, metadataLogEntriesMax: 100 };
  let loaded = await ensureIcebergTable(objects, table, clock);
  let block = { before: [], after: [] };
  console.log(`commits | live data files | before: median wall (CPU) ms, manifest GETs, list GETs (runs) | after: the same | load average`);
  let runs = 0;
  let liveFiles = 0;
  for (let commit = 1; commit <= COMMITS; commit++) {
    clock += 5_000;
    const committed = await commitIcebergBatch(objects, table, loaded, twoDayEvents(T0, 2 * commit - 1, 2), { ...fence, nowMs: clock, writerId: 'expiry-cost' });
    loaded = committed.loaded;
    liveFiles += 2;
    loaded = (await rewriteManifestsIfMany(context, loaded, committed.manifests))?.loaded ?? loaded;
    if (loaded.metadata.snapshots.length >= 2 * RETAIN_LAST) {
      const which = runs++ % 2 === 0 ? 'before' : 'after';
      const counts = { manifests: 0, lists: 0 };
      const measured = { ...context, objects: counting(objects, counts) };
      const cpuStarted = process.cpuUsage();
      const started = performance.now();
      const result =
        which === 'before'
          ? await expireByReachability(measured, loaded, RETAIN_LAST, REPLACED_FILE_GRACE_MS, SNAPSHOT_READ_GRACE_MS)
          : await expireIcebergSnapshots(measured, loaded, RETAIN_LAST, REPLACED_FILE_GRACE_MS, SNAPSHOT_READ_GRACE_MS);
      const ms = performance.now() - started;
      const cpu = process.cpuUsage(cpuStarted);
      // CPU of this process (the endpoint serves in it too): less swayed than wall time by what
      // else the machine runs.
      const cpuMs = (cpu.user + cpu.system) / 1000;
      if (result.snapshotsExpired === 0) throw new Error('an overdue expiry expired nothing');
      if (which === 'after' && result.filesFoundBy !== 'incremental') throw new Error(`expected the incremental method, got ${result.filesFoundBy}`);
      block[which].push({ ms, cpuMs, ...counts });
      loaded = result.loaded;
    }
    if (commit % BLOCK === 0) {
      // Finding what to delete alone (no commit, no delete), both ways on this same table, cold:
      // the part the incremental method changes, five times each, alternating.
      const kept = retainedSnapshotIds(loaded.metadata, RETAIN_LAST);
      const plans = { reachability: [], incremental: [] };
      for (let round = 0; round < 10; round++) {
        const way = round % 2 === 0 ? 'reachability' : 'incremental';
        const counts = { manifests: 0, lists: 0 };
        const measured = counting(objects, counts);
        const cpuStarted = process.cpuUsage();
        const started = performance.now();
        const plan =
          way === 'reachability'
            ? await reachabilityPlan(measured, table, loaded.metadata, kept, new ManifestCache())
            : await planExpiredFiles(measured, table, loaded.metadata, kept, new ManifestListCache(), new ManifestCache());
        await plan.dataFiles();
        const cpu = process.cpuUsage(cpuStarted);
        plans[way].push({ ms: performance.now() - started, cpuMs: (cpu.user + cpu.system) / 1000, ...counts });
      }
      const planCell = (samples) => `${median(samples.map((s) => s.ms)).toFixed(1)} ms (CPU ${median(samples.map((s) => s.cpuMs)).toFixed(1)} ms), ${median(samples.map((s) => s.manifests))} manifest GETs`;
      console.log(`  finding what ${loaded.metadata.snapshots.length - kept.size} expiring snapshots alone reach, ${loaded.metadata.snapshots.length} snapshots: by reachability ${planCell(plans.reachability)} | incremental ${planCell(plans.incremental)}`);
      const cell = (samples) => `${median(samples.map((s) => s.ms)).toFixed(1)} ms (CPU ${median(samples.map((s) => s.cpuMs)).toFixed(1)} ms), ${median(samples.map((s) => s.manifests))}, ${median(samples.map((s) => s.lists))} (${samples.length})`;
      console.log(`${commit} | ${liveFiles} | ${cell(block.before)} | ${cell(block.after)} | ${loadavg()[0].toFixed(2)}`);
      block = { before: [], after: [] };
    }
  }
} finally {
  connections.close();
  await server.close();
  await rm(dir, { recursive: true, force: true });
}
