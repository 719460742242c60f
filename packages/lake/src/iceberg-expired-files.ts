import {
  decodeManifestList,
  ManifestEntryStatus,
  snapshotAncestry,
  WRITER_ID_SUMMARY_KEY,
  type IcebergSnapshot,
  type IcebergTableMetadata,
  type ManifestFile,
} from '@auditlake/format';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { ManifestCache, snapshotReach } from './iceberg-table-files.js';
import { s3Key, type IcebergTableRef } from './iceberg-table-ref.js';
import type { ObjectStore } from './object-store.js';

/**
 * Decoded manifest lists by path: a manifest list never changes once written, so one read serves
 * an expiry's warm-up and its turn (and its retries).
 */
export class ManifestListCache {
  readonly #lists = new Map<string, ManifestFile[]>();

  async files(objects: ObjectStore, table: IcebergTableRef, path: string): Promise<ManifestFile[]> {
    let files = this.#lists.get(path);
    if (!files) {
      files = decodeManifestList(await objects.get(s3Key(table, path))).files;
      this.#lists.set(path, files);
    }
    return files;
  }
}

/** Which way an expiry found the files its expired snapshots alone reached. */
export type ExpiredFilesMethod = 'incremental' | 'reachability';

/**
 * The files an expiry deletes once its commit is in. `paths` are known when the plan is made
 * (manifest lists and manifests, and with the reachability method the data files too);
 * `dataFiles()` adds the data files the incremental method finds in the manifests it deletes.
 * Everything it reads is immutable (manifest lists and manifests never change once written), so
 * it may run after the commit, outside the step's turn.
 */
export interface ExpiredFilesPlan {
  method: ExpiredFilesMethod;
  /** Why the incremental method did not apply (the reachability method's reason), else undefined. */
  fallbackReason?: string;
  paths: string[];
  dataFiles(): Promise<string[]>;
}

/**
 * Plans the deletes of an expiry from the table before it (`before`) and the snapshots it keeps:
 * every manifest list, manifest and data file that only expired snapshots reach, and nothing a
 * kept snapshot names in any status (the same set the reachability computation gives, which
 * {@link reachabilityPlan} is).
 *
 * The incremental method (as Iceberg's reference implementation's "incremental file cleanup"
 * when snapshots are expired from one linear history) reads every snapshot's manifest list (one
 * small object each) and opens only the manifests it deletes that hold DELETED entries, instead
 * of every manifest of every snapshot: its cost follows what the expiry removes, not the size of
 * the table times its snapshots. It applies where {@link incrementalRefusal} finds nothing;
 * otherwise the plan is made by reachability, and says why.
 */
export async function planExpiredFiles(objects: ObjectStore, table: IcebergTableRef, before: IcebergTableMetadata, kept: ReadonlySet<number>, lists: ManifestListCache, manifests: ManifestCache): Promise<ExpiredFilesPlan> {
  const refusal = incrementalRefusal(before, kept);
  if (refusal !== undefined) return reachabilityPlan(objects, table, before, kept, manifests, refusal);
  const listed = new Map<number, ManifestFile[]>();
  await mapBounded(before.snapshots, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (snapshot) => {
    listed.set(snapshot['snapshot-id'], await lists.files(objects, table, snapshot['manifest-list']));
  });
  return incrementalPlan(objects, table, before, kept, listed, manifests);
}

/**
 * Why the incremental method cannot be trusted for this expiry, or undefined when it can. Its
 * reasoning (see {@link incrementalPlan}) holds only where
 * - every snapshot it expires is in the current snapshot's ancestry, parent after parent with
 *   none missing: a branch or a rolled-back commit may have removed a file the current snapshot
 *   still reads (Iceberg's implementation keeps to the main ancestry for the same reason), and
 *   beyond a gap the removal of a file may no longer be found — the manifest recording it went
 *   with the snapshot that removed it (an expiry kept a compaction and its parent for
 *   `REPLACED_FILE_GRACE_MS` and expired the sweeps after it: expiring the two later is such a case);
 * - sequence numbers grow along that ancestry, as the spec makes them;
 * - every snapshot is our writer's (it carries `auditlake.tiering.writer-id`): the method relies on
 *   how a commit records a file's removal — a DELETED entry in a manifest the removing snapshot
 *   writes and lists, with the file's own sequence numbers, never carried into a later
 *   manifest, and no path ever added twice — which our writers do (a sweep carries manifests;
 *   compaction and erasure write DELETED entries; a manifest rewrite drops DELETED entries and
 *   removes no file), and another engine's manifests are not known to.
 * A kept snapshot beyond a gap (such a compaction or its parent, or one a tag holds) is allowed: see
 * {@link incrementalPlan} for how it is counted.
 */
export function incrementalRefusal(before: IcebergTableMetadata, kept: ReadonlySet<number>): string | undefined {
  const ancestry = snapshotAncestry(before);
  const onAncestry = new Set(ancestry.map((snapshot) => snapshot['snapshot-id']));
  const offAncestry = before.snapshots.find((snapshot) => !kept.has(snapshot['snapshot-id']) && !onAncestry.has(snapshot['snapshot-id']));
  if (offAncestry !== undefined) return `snapshot ${offAncestry['snapshot-id']}, expiring, is not in the current snapshot's unbroken ancestry`;
  const disordered = ancestry.find((snapshot, index) => index + 1 < ancestry.length && snapshot['sequence-number'] <= (ancestry[index + 1] as IcebergSnapshot)['sequence-number']);
  if (disordered !== undefined) return `snapshot ${disordered['snapshot-id']} has a sequence number not above its parent's`;
  const foreign = before.snapshots.find((snapshot) => snapshot.summary[WRITER_ID_SUMMARY_KEY] === undefined);
  if (foreign !== undefined) return `snapshot ${foreign['snapshot-id']} is not our writer's (no ${WRITER_ID_SUMMARY_KEY})`;
  return undefined;
}

/**
 * The incremental method, on an expiry {@link incrementalRefusal} accepts: every expired
 * snapshot is on one line of snapshots, each the child of the one before, ending at the current
 * one (always kept); kept snapshots may also lie beyond a gap in that line.
 *
 * - A manifest list goes with its expired snapshot (unless a kept snapshot names the same list).
 * - A manifest goes when an expired snapshot lists it and no kept one does (a candidate).
 * - A data file goes when a candidate lists it as DELETED by a snapshot that is not kept, and no
 *   kept snapshot may still read it: none on the line with a sequence number from the file's own
 *   (that of the snapshot that added it) up to, not including, the removal's, and none beyond a
 *   gap from the file's own on. Kept snapshots are not always the newest — a compaction and its
 *   parent stay for `REPLACED_FILE_GRACE_MS`, a tag may hold an old snapshot — so this is
 *   checked file by file; Iceberg's implementation, which expires only the oldest, does not.
 *
 * Why nothing else can go: a data file only expired snapshots reach is named by one of them,
 * S. Walking S's descendants (each in the table: no gaps after an expired snapshot) to the
 * first kept one, the file is no longer named there, so some snapshot on the way removed it,
 * wrote it DELETED into a manifest it lists, and no kept snapshot lists that manifest (it would
 * name the file): a candidate. Were S's entry already DELETED, that manifest is the one S
 * lists. And no kept snapshot reads it: on the line, one newer than the removal lists the file
 * only through that manifest, one older than the file's addition never named it, and one in
 * between is excluded above; a snapshot beyond a gap is older than every expired one and every
 * removal the line records, and it reads a file only if the file is at least as old as it is —
 * the one rule that holds whatever line it was on (which it cannot be shown to be).
 * Why nothing kept goes: the same three cases, with which every file it keeps agrees. Only
 * candidates with DELETED entries are opened (`deleted_files_count` in the list says which).
 */
export function incrementalPlan(objects: ObjectStore, table: IcebergTableRef, before: IcebergTableMetadata, kept: ReadonlySet<number>, listed: ReadonlyMap<number, readonly ManifestFile[]>, manifests: ManifestCache): ExpiredFilesPlan {
  const keptSnapshots = before.snapshots.filter((snapshot) => kept.has(snapshot['snapshot-id']));
  const expired = before.snapshots.filter((snapshot) => !kept.has(snapshot['snapshot-id']));
  // Only snapshots of the table: `kept` may name one already gone (the parent of a compaction
  // kept for its grace after an earlier expiry took it), which reads nothing.
  const keptIds = new Set(keptSnapshots.map((snapshot) => snapshot['snapshot-id']));
  const keptLists = new Set(keptSnapshots.map((snapshot) => snapshot['manifest-list']));
  const keptManifests = new Set<string>();
  for (const snapshot of keptSnapshots) for (const file of filesOf(listed, snapshot)) keptManifests.add(file.manifest_path);
  const paths = new Set<string>();
  const candidates = new Map<string, ManifestFile>();
  for (const snapshot of expired) {
    if (!keptLists.has(snapshot['manifest-list'])) paths.add(snapshot['manifest-list']);
    for (const file of filesOf(listed, snapshot)) {
      if (keptManifests.has(file.manifest_path) || candidates.has(file.manifest_path)) continue;
      candidates.set(file.manifest_path, file);
      paths.add(file.manifest_path);
    }
  }
  const sequenceOf = new Map(before.snapshots.map((snapshot) => [snapshot['snapshot-id'], snapshot['sequence-number']]));
  const onLine = new Set(snapshotAncestry(before).map((snapshot) => snapshot['snapshot-id']));
  const keptReaders = keptSnapshots.map((snapshot) => ({ sequence: snapshot['sequence-number'], onLine: onLine.has(snapshot['snapshot-id']) }));
  // A count the list does not give (another writer's list) means the manifest is opened.
  const withDeletes = [...candidates.values()].filter((file) => file.deleted_files_count !== 0);
  return {
    method: 'incremental',
    paths: [...paths],
    async dataFiles() {
      const found = new Set<string>();
      await mapBounded(withDeletes, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (file) => {
        const entries = await manifests.refs(objects, table, file.manifest_path);
        for (const entry of entries) {
          if (entry.status !== ManifestEntryStatus.DELETED) continue;
          const removedBy = entry.snapshot_id ?? file.added_snapshot_id;
          if (keptIds.has(removedBy)) continue;
          // The removal's sequence number: its snapshot's, or — that snapshot expired in an
          // earlier run — at most the manifest's, which it wrote or which was written after it.
          const removedAt = sequenceOf.get(removedBy) ?? file.sequence_number;
          // A DELETED entry states the file's sequence number (only ADDED ones inherit it); one
          // that does not could be any age, so every older kept snapshot counts.
          const addedAt = entry.file_sequence_number ?? 0;
          if (keptReaders.some((reader) => reader.sequence >= addedAt && (!reader.onLine || reader.sequence < removedAt))) continue;
          found.add(entry.data_file.file_path);
        }
      });
      return [...found];
    },
  };
}

/** The rows of a snapshot's manifest list, read before. */
function filesOf(listed: ReadonlyMap<number, readonly ManifestFile[]>, snapshot: IcebergSnapshot): readonly ManifestFile[] {
  const files = listed.get(snapshot['snapshot-id']);
  if (files === undefined) throw new Error(`assertion failed: the manifest list of snapshot ${snapshot['snapshot-id']} was not read`);
  return files;
}

/**
 * The reachability method: every path the expired snapshots reach (manifest list, manifests and
 * every file they name, in any status) that no kept snapshot reaches. It opens every manifest of
 * every snapshot, kept and expired; it is what {@link planExpiredFiles} falls back to.
 */
export async function reachabilityPlan(objects: ObjectStore, table: IcebergTableRef, before: IcebergTableMetadata, kept: ReadonlySet<number>, manifests: ManifestCache, fallbackReason?: string): Promise<ExpiredFilesPlan> {
  const keptReach = new Set<string>();
  const expiredReach = new Set<string>();
  for (const snapshot of before.snapshots) await snapshotReach(objects, table, snapshot, manifests, kept.has(snapshot['snapshot-id']) ? keptReach : expiredReach);
  const doomed = [...expiredReach].filter((path) => !keptReach.has(path));
  return { method: 'reachability', ...(fallbackReason === undefined ? {} : { fallbackReason }), paths: doomed, dataFiles: () => Promise.resolve([]) };
}
