import { expireSnapshots, retainedSnapshotIds, type IcebergTableMetadata } from '@auditlake/format';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { tableTurn, type MaintenanceContext } from './iceberg-maintenance-context.js';
import { incrementalRefusal, ManifestListCache, planExpiredFiles, type ExpiredFilesMethod } from './iceberg-expired-files.js';
import { ManifestCache, snapshotReach } from './iceberg-table-files.js';
import { deletableKeys } from './iceberg-table-ref.js';
import type { LoadedTable } from './iceberg-table.js';
import { commitMetadataVersion } from './iceberg-version-commit.js';
import { monotonicMs, REPLACED_FILE_GRACE_MS, SNAPSHOT_READ_GRACE_MS } from './replaced-file-grace.js';

export interface ExpiryResult {
  loaded: LoadedTable;
  snapshotsExpired: number;
  filesDeleted: number;
  /** How the files to delete were found (iceberg-expired-files.ts); undefined when nothing expired. */
  filesFoundBy?: ExpiredFilesMethod;
}

/**
 * Snapshot expiry: a commit that keeps the newest `retainLast` snapshots (and always the current
 * one and every ref's, and the parent of every snapshot that took files out — a compaction, a
 * rewrite — within the last `removedGraceMs`, so a search that listed those files just before
 * can still read them), then deletes what only expired snapshots reached — their manifest lists,
 * manifests and data files — and nothing any retained snapshot still names (in any status).
 * Given `context.snapshotsSeen`, a snapshot this process has seen for less than a grace counts
 * as within it too (see retainedSnapshotIds: how long one process has seen it is an age no
 * node's clock, nor a step of its own, moves; by the snapshots' times alone, a failover to a
 * node 20 minutes ahead, or this node's clock stepped forward, deleted a compaction's replaced
 * files at the next expiry, seconds after it).
 * An erasure's rewrite passes a grace of 0: the old values must go at once.
 * What to delete is found incrementally where the history allows it, from the manifest lists and
 * the manifests being deleted, else by reading every manifest of every snapshot
 * ({@link planExpiredFiles}).
 * The commit is built in the step's turn on the table as it is then ({@link tableTurn});
 * deletes happen only after the commit, outside the turn; if the process dies among them, what
 * is left is unreferenced and orphan cleanup removes it once old enough.
 */
export async function expireIcebergSnapshots(context: MaintenanceContext, loaded: LoadedTable, retainLast: number, removedGraceMs = REPLACED_FILE_GRACE_MS, readGraceMs = 0): Promise<ExpiryResult> {
  // Manifest lists and manifests read before the turn serve it (neither changes once written).
  const lists = new ManifestListCache();
  const manifests = new ManifestCache();
  // Only a warm-up: a snapshot a sweep expired meanwhile is simply not read.
  if (context.fence.serialize) await warmUp(context, loaded, retainLast, removedGraceMs, readGraceMs, lists, manifests).catch(() => undefined);
  const turn = await tableTurn(context, loaded, async (base) => {
    const nowMs = context.now();
    const { keepRemovedSinceMs, keepMadeSinceMs } = graceSince(nowMs, removedGraceMs, readGraceMs);
    const seenForMs = sightings(context, base.metadata, true);
    const next = expireSnapshots(base.metadata, {
      retainLast,
      nowMs,
      previousMetadataPath: base.metadataPath,
      metadataLogEntriesMax: context.metadataLogEntriesMax,
      ...(keepRemovedSinceMs === undefined ? {} : { keepRemovedSinceMs }),
      ...(keepMadeSinceMs === undefined ? {} : { keepMadeSinceMs }),
      ...(seenForMs === undefined ? {} : { seenForMs }),
    });
    if (!next) return { loaded: base, expired: 0, plan: undefined };
    const kept = retainedSnapshotIds(base.metadata, retainLast, keepRemovedSinceMs, keepMadeSinceMs, nowMs, seenForMs);
    const plan = await planExpiredFiles(context.objects, context.table, base.metadata, kept, lists, manifests);
    return { loaded: await commitMetadataVersion(context.objects, context.table, base, next, context.fence), expired: base.metadata.snapshots.filter((snapshot) => !kept.has(snapshot['snapshot-id'])).length, plan };
  });
  if (turn.plan === undefined) return { loaded: turn.loaded, snapshotsExpired: 0, filesDeleted: 0 };
  // After the turn: nothing any later commit can name (no retained snapshot reaches them). The
  // data files the incremental method finds are read here too, outside the turn: a sweep waits
  // for no manifest the expiry deletes.
  await context.onStep?.('expiry-committed');
  const keys = deletableKeys(context.table, [...turn.plan.paths, ...(await turn.plan.dataFiles())]);
  await mapBounded(keys, OBJECT_REQUESTS_IN_FLIGHT_MAX, (key) => context.objects.delete(key));
  return { loaded: turn.loaded, snapshotsExpired: turn.expired, filesDeleted: keys.length, filesFoundBy: turn.plan.method };
}

/**
 * Reads before the turn what the turn will read: every snapshot's manifest list, and — only where
 * the incremental method will not apply to the snapshots it would expire now — every manifest, as
 * the reachability method opens them.
 */
async function warmUp(context: MaintenanceContext, loaded: LoadedTable, retainLast: number, removedGraceMs: number, readGraceMs: number, lists: ManifestListCache, manifests: ManifestCache): Promise<void> {
  const { metadata } = loaded;
  const nowMs = context.now();
  const { keepRemovedSinceMs, keepMadeSinceMs } = graceSince(nowMs, removedGraceMs, readGraceMs);
  if (incrementalRefusal(metadata, retainedSnapshotIds(metadata, retainLast, keepRemovedSinceMs, keepMadeSinceMs, nowMs, sightings(context, metadata, false))) === undefined) {
    await mapBounded(metadata.snapshots, OBJECT_REQUESTS_IN_FLIGHT_MAX, (snapshot) => lists.files(context.objects, context.table, snapshot['manifest-list']));
    return;
  }
  for (const snapshot of metadata.snapshots) await snapshotReach(context.objects, context.table, snapshot, manifests, new Set()).catch(() => undefined);
}

/**
 * What {@link expireIcebergSnapshots} with `retainLast` and no grace would delete from the table
 * as `loaded` holds it: every path (manifest list, manifest, data file) that only the snapshots
 * it would expire reach. Read before expiring, so a caller can record the list first.
 */
export async function reachedOnlyByExpiring(context: MaintenanceContext, loaded: LoadedTable, retainLast: number): Promise<string[]> {
  const kept = retainedSnapshotIds(loaded.metadata, retainLast);
  if (loaded.metadata.snapshots.every((snapshot) => kept.has(snapshot['snapshot-id']))) return [];
  const plan = await planExpiredFiles(context.objects, context.table, loaded.metadata, kept, new ManifestListCache(), new ManifestCache());
  return [...plan.paths, ...(await plan.dataFiles())];
}

/**
 * Between maintenance runs a table may grow to this many times `snapshot.retain.last`
 * snapshots; the sweep's commit that reaches it expires back down to `retain.last`. Each
 * snapshot adds about half a KiB to every later `vN.metadata.json`, and a sweep that keeps up
 * with ingest may commit thousands of times between hourly runs: without this bound the file
 * every commit rewrites grows with the commits since the last run.
 */
export const SNAPSHOTS_BETWEEN_RUNS_FACTOR = 2;

/**
 * Snapshot expiry as a sweep runs it between maintenance runs: only when the table holds at
 * least {@link SNAPSHOTS_BETWEEN_RUNS_FACTOR} × `retainLast` snapshots (so it costs a sweep one
 * expiry per `retainLast` commits), then the maintenance step — the same commit, the same safe
 * deletes — except that a snapshot younger than {@link SNAPSHOT_READ_GRACE_MS} stays: back to
 * back, sweeps commit faster than a reader plans. Undefined when not due.
 */
export async function expireOverdueSnapshots(context: MaintenanceContext, loaded: LoadedTable, retainLast: number): Promise<ExpiryResult | undefined> {
  const { snapshots } = loaded.metadata;
  if (snapshots.length < SNAPSHOTS_BETWEEN_RUNS_FACTOR * retainLast) return undefined;
  // Not before half of `retainLast` may go: while snapshots are too young to expire, every
  // commit of a busy sweep would read every snapshot's manifest list (and, where the incremental
  // way does not apply, every manifest) to expire one or none.
  const nowMs = context.now();
  const { keepRemovedSinceMs, keepMadeSinceMs } = graceSince(nowMs, REPLACED_FILE_GRACE_MS, SNAPSHOT_READ_GRACE_MS);
  const seenForMs = sightings(context, loaded.metadata, false);
  if (snapshots.length - retainedSnapshotIds(loaded.metadata, retainLast, keepRemovedSinceMs, keepMadeSinceMs, nowMs, seenForMs).size < Math.ceil(retainLast / 2)) return undefined;
  return expireIcebergSnapshots(context, loaded, retainLast, REPLACED_FILE_GRACE_MS, SNAPSHOT_READ_GRACE_MS);
}

/** What an expiry keeps by age: snapshots made within `readGraceMs` too, when given (none of it for an erasure's, grace 0). */
function graceSince(nowMs: number, removedGraceMs: number, readGraceMs: number): { keepRemovedSinceMs?: number; keepMadeSinceMs?: number } {
  if (removedGraceMs <= 0) return {};
  return { keepRemovedSinceMs: nowMs - removedGraceMs, ...(readGraceMs > 0 ? { keepMadeSinceMs: nowMs - readGraceMs } : {}) };
}

/**
 * How long this process has seen each snapshot of `metadata` (id → ms on `context.monotonicMs`),
 * recording in `context.snapshotsSeen` those it sees now for the first time; undefined without
 * it. Given `forget` (the table as the expiry's turn reads it, the newest there is), the ids no
 * longer in the table are dropped.
 */
function sightings(context: MaintenanceContext, metadata: IcebergTableMetadata, forget: boolean): Map<number, number> | undefined {
  const seen = context.snapshotsSeen;
  if (seen === undefined) return undefined;
  const nowMs = (context.monotonicMs ?? monotonicMs)();
  const ids = new Set(metadata.snapshots.map((snapshot) => snapshot['snapshot-id']));
  if (forget) for (const id of seen.keys()) if (!ids.has(id)) seen.delete(id);
  const seenForMs = new Map<number, number>();
  for (const id of ids) {
    if (!seen.has(id)) seen.set(id, nowMs);
    seenForMs.set(id, nowMs - (seen.get(id) as number));
  }
  return seenForMs;
}
