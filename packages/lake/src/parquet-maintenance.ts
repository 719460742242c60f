import { NODE_CLOCK_SKEW_MAX_MS } from '@auditlake/format';
import { COMPACTION_RUN_TIME_BUDGET_MS, compactInPasses, compactionFigures, failOnLostFiles } from './compaction-passes.js';
import { deleteListedWhileLeader, deleteWhileLeader } from './fenced-delete.js';
import type { MaintenancePolicy, MaintenanceRunFigures } from './iceberg-maintenance.js';
import { packIntegrityCheckpoints } from './integrity-objects.js';
import type { ObjectStore } from './object-store.js';
import { PARQUET_OWN_DATA_FILE_NAME, parquetDataPrefix } from './parquet-committer.js';
import { compactParquetLocation, liveParquetFiles, ParquetLogCache, readContextLog, type ParquetCompactionContext } from './parquet-compaction.js';
import { packCompactionMarkers } from './parquet-compaction-packing.js';
import { deleteSupersededLogCheckpoints } from './parquet-checkpoint-cleanup.js';
import { writeParquetCheckpoint } from './parquet-checkpoint-write.js';
import { packParquetMarkers, type MarkerPacking } from './parquet-marker-packing.js';
import { monotonicMs, REPLACED_FILE_GRACE_MS } from './replaced-file-grace.js';
import { joinKey, type S3Location } from './s3-location.js';
import { orphanCutoffMs } from './store-clock.js';

export { REPLACED_FILE_GRACE_MS };

/**
 * How far a compaction's `committedAtMs` may be behind the time it applied (the compacting node's
 * clock behind this one's, its marker waiting for the commit lock) before its stamp alone is
 * trusted to tell the grace is over: an hour, as the floor of the orphan age, which assumes the
 * same of the nodes' clocks (NODE_CLOCK_SKEW_MAX_MS).
 */
const REPLACED_FILE_STAMP_SKEW_MS = NODE_CLOCK_SKEW_MAX_MS;

/** Bytes of the location's data files (what compaction and cleanup change). */
async function dataBytes(objects: ObjectStore, location: S3Location): Promise<number> {
  return (await objects.listObjects(parquetDataPrefix(location))).reduce((sum, object) => sum + object.bytes, 0);
}

/**
 * Deletes the files that applied compactions replaced, once the compaction is older than
 * {@link REPLACED_FILE_GRACE_MS} by its `committedAtMs` and, given `context.replacedSeen`, once
 * this process has seen the file replaced for that long too, by `context.monotonicMs` (or the
 * stamp is older than that by REPLACED_FILE_STAMP_SKEW_MS more); an erasure's at once. Commit
 * markers still list them; every reader drops them by the same compaction, so they are never
 * read again. Deleting a missing file is no error, so a run stopped among these deletes is
 * finished by the next; each delete is sent only while `fence.mayCommit()` holds, as orphan
 * cleanup's.
 *
 * Why both ages: `committedAtMs` is the compacting node's clock, stamped before its marker waited
 * for the commit lock. A compaction made by a node whose clock ran behind, or whose marker waited
 * behind a long sweep turn, looked older than it was, and its files went at once — under a search
 * that had listed them a moment before (review: 20 minutes of skew, or a 16-minute wait, and the
 * same run deleted them). How long this process has seen the file replaced, on a monotonic clock,
 * is a lower bound of the compaction's age that no other clock moves — nor a step of its own:
 * counted on the wall clock, a step of 20 minutes forward right after a compaction made its
 * files seen for 20 minutes, and the next run deleted them all (review).
 */
async function deleteReplacedParquetFiles(context: ParquetCompactionContext): Promise<number> {
  const { replaced } = liveParquetFiles(await readContextLog(context));
  const cutoffMs = context.now() - REPLACED_FILE_GRACE_MS;
  const seen = context.replacedSeen;
  const seenNowMs = (context.monotonicMs ?? monotonicMs)();
  if (seen !== undefined) {
    const replacedKeys = new Set(replaced.map((file) => file.key));
    for (const key of seen.keys()) if (!replacedKeys.has(key)) seen.delete(key);
    for (const key of replacedKeys) if (!seen.has(key)) seen.set(key, seenNowMs);
  }
  // Seen replaced for the grace here, or stamped so long ago that no skew or lock wait explains
  // it: a process restarted between every run (a daily cron, daily deploys) otherwise never saw
  // any replaced file for long enough, and none was ever deleted (review).
  const graceOver = (file: (typeof replaced)[number]) =>
    file.committedAtMs <= cutoffMs && (seen === undefined || seenNowMs - (seen.get(file.key) as number) >= REPLACED_FILE_GRACE_MS || file.committedAtMs <= cutoffMs - REPLACED_FILE_STAMP_SKEW_MS);
  // An erasure's replaced files hold the erased values: no grace (its pass deletes them, and this
  // finishes what a pass stopped before it could).
  const doomed = replaced.filter((file) => file.erasure === true || graceOver(file)).map((file) => file.key);
  return deleteListedWhileLeader(context.objects, parquetDataPrefix(context.location), doomed, context.fence, `deletion of replaced files of s3://${context.location.bucket}/${context.location.prefix}`);
}

/**
 * Orphan cleanup of a Parquet location: data files no commit marker and no applied compaction
 * names — a deposed leader's losing batch, a crashed commit's files, a lost compaction's output —
 * whose S3 `LastModified` (as the listing gives it) is at least `minAgeMs` before the earlier of
 * `context.now()` and the store's clock (`context.storeNow`; a commit still being written looks
 * the same until its marker lands).
 * Markers themselves are not deleted here (only packing deletes them, once packed): a checkpoint
 * and the markers after it name every file a packed marker names that may still be in the bucket.
 * The files are listed first; the markers are read in one turn of `fence.serialize` (the node's
 * commit lock) — all of them read before it, so the turn fetches only those written since — : a
 * sweep of this process writes its files only while it holds the lock and has
 * written their marker or given them up before it lets go, so a file listed before the turn is
 * named by a marker read in it or never will be. The deletes follow the turn, each only while
 * `fence.mayCommit()` holds: a deposed leader stops (`AUDIT_NOT_LEADER`) rather than delete what
 * its successor is writing.
 */
async function removeParquetOrphans(context: ParquetCompactionContext, minAgeMs: number): Promise<number> {
  const { objects, location } = context;
  const base = joinKey(location.prefix, '');
  const cutoffMs = await orphanCutoffMs(context.now(), minAgeMs, context.storeNow);
  // A listing without LastModified (0) tells no age: never a candidate. Nor is any object not
  // named as this location's writers name data files: a location may hold other locations below
  // it (an earlier Parquet path, an Iceberg warehouse, a bucket-root path above them all), whose
  // files no marker of this one names, and they are not its to delete.
  const candidates = (await objects.listObjects(parquetDataPrefix(location))).filter((object) => PARQUET_OWN_DATA_FILE_NAME.test(object.key.slice(base.length)) && object.lastModifiedMs > 0 && object.lastModifiedMs <= cutoffMs);
  if (candidates.length === 0) return 0;
  // The bulk of the log is read before the turn; in it, only the markers written since.
  const cache = context.log ?? new ParquetLogCache();
  await cache.read(objects, location);
  const referencedNow = async (): Promise<Set<string>> => {
    const log = await cache.read(objects, location);
    // Every file a marker names is live, or replaced by an applied compaction (listed until its
    // deletion, in a checkpoint too); an applied compaction's output likewise.
    const { files, replaced } = liveParquetFiles(log);
    const referenced = new Set<string>([...files, ...replaced].map((file) => file.key));
    for (const marker of log.markers) for (const file of marker.files) referenced.add(file.key);
    return referenced;
  };
  const referenced = await (context.fence.serialize ? context.fence.serialize(referencedNow) : referencedNow());
  const orphans = candidates.filter((object) => !referenced.has(object.key));
  return deleteWhileLeader(
    objects,
    orphans.map((object) => object.key),
    context.fence,
    `orphan cleanup of s3://${location.bucket}/${location.prefix}`,
  );
}

/**
 * One maintenance run over a Parquet location, in order: day-partition compaction (unless `policy.compact` is false; pass after
 * pass while small files are left, within the run's time budget: {@link compactInPasses}), deletion of
 * files replaced long enough ago, (when enabled) orphan cleanup, a checkpoint of the log
 * when enough commit markers follow the newest ({@link writeParquetCheckpoint}) and deletion
 * of those superseded long enough ago ({@link deleteSupersededLogCheckpoints}), packing of the
 * commit and compaction markers the newest checkpoint folds and deletion of the loose ones packed
 * long enough ago ({@link packParquetMarkers}, {@link packCompactionMarkers}: the run's
 * `markersPacked` and `packedMarkersDeleted` count both), then packing of the `_integrity/` checkpoint objects
 * beside the location. There are no snapshots or
 * metadata versions to expire. Each step leaves every event readable exactly once, so a run
 * stopped anywhere is finished by the next.
 */
export async function runParquetMaintenance(
  context: ParquetCompactionContext,
  policy: Pick<MaintenancePolicy, 'removeOrphanFiles' | 'orphanMinAgeMs' | 'targetFileSizeBytes' | 'compact' | 'compactionTimeBudgetMs' | 'compactionPassBytesMax'>,
): Promise<MaintenanceRunFigures & MarkerPacking> {
  // Each step reads the log again (it may have moved), fetching only the markers new since the last read.
  context = { ...context, log: context.log ?? new ParquetLogCache() };
  const bytesBefore = await dataBytes(context.objects, context.location);
  const compaction =
    policy.compact === false
      ? undefined
      : await compactInPasses(() => compactParquetLocation(context, policy.targetFileSizeBytes, policy.compactionPassBytesMax), {
          now: context.now,
          timeBudgetMs: policy.compactionTimeBudgetMs ?? COMPACTION_RUN_TIME_BUDGET_MS,
          fence: context.fence,
        });
  await context.onStep?.('compaction');
  const filesDeleted = await deleteReplacedParquetFiles(context);
  await context.onStep?.('expiry');
  const orphansDeleted = policy.removeOrphanFiles ? await removeParquetOrphans(context, policy.orphanMinAgeMs) : 0;
  await context.onStep?.('orphans');
  // Once this run's replaced files are deleted: the checkpoint lists fewer of them.
  await writeParquetCheckpoint(context, context.checkpointIntervalMarkers);
  const logCheckpointsDeleted = await deleteSupersededLogCheckpoints(context, policy.orphanMinAgeMs);
  // Behind the checkpoint just written: the markers it folds are what packing may take.
  const commits = await packParquetMarkers(context, policy.orphanMinAgeMs, context.markerPackLimits);
  const compactions = await packCompactionMarkers(context, policy.orphanMinAgeMs, context.compactionPackLimits);
  const markersPacked = commits.markersPacked + compactions.markersPacked;
  const packedMarkersDeleted = commits.packedMarkersDeleted + compactions.packedMarkersDeleted;
  const checkpointsPacked = await packIntegrityCheckpoints(context.objects, context.location.prefix, context.fence);
  failOnLostFiles(compaction, `s3://${context.location.bucket}/${context.location.prefix}`);
  return {
    ...compactionFigures(compaction),
    snapshotsExpired: 0,
    filesDeleted,
    orphansDeleted,
    checkpointsPacked,
    logCheckpointsDeleted,
    markersPacked,
    packedMarkersDeleted,
    bytesBefore,
    bytesAfter: await dataBytes(context.objects, context.location),
  };
}
