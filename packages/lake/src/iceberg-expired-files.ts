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
  const refusal = incrementalRefusal(before);
  if (refusal !== undefined) return reachabilityPlan(objects, table, before, kept, manifests, refusal);
  const listed = new Map<number, ManifestFile[]>();
  await mapBounded(before.snapshots, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (snapshot) => {
    listed.set(snapshot['snapshot-id'], await lists.files(objects, table, snapshot['manifest-list']));
  });
  return incrementalPlan(objects, table, before, kept, listed, manifests);
}

/**
 * Why the incremental method cannot be trusted for this table, or undefined when it can. Its
 * reasoning (see {@link incrementalPlan}) holds only where
 * - every snapshot is in the current snapshot's ancestry, parent after parent with none missing:
 *   a branch or a rolled-back commit may have removed a file the current snapshot still reads
 *   (Iceberg's implementation keeps to the main ancestry for the same reason), and a snapshot
 *   beyond a gap (an earlier expiry kept a compaction's parent, `REPLACED_FILE_GRACE_MS`, and
 *   expired the compaction) can neither be shown to be an ancestor nor have its files' removal
 *   found: the manifest recording it was deleted with the compaction;
 * - every snapshot is our writer's (it carries `auditlake.tiering.writer-id`): the method relies on
 *   how a commit records a file's removal — a DELETED entry in a manifest the removing snapshot
 *   writes and lists, with the file's own sequence numbers, never carried into a later
 *   manifest, and no path ever added twice — which our writers do (a sweep carries manifests;
 *   compaction and erasure write DELETED entries; a manifest rewrite drops DELETED entries and
 *   removes no file), and another engine's manifests are not known to.
 */
export function incrementalRefusal(before: IcebergTableMetadata): string | undefined {
  const ancestry = snapshotAncestry(before);
  if (ancestry.length !== before.snapshots.length) {
    return `${before.snapshots.length - ancestry.length} of ${before.snapshots.length} snapshots are not in the current snapshot's unbroken ancestry`;
  }
  // The interval reasoning below orders snapshots by sequence number, which the spec makes
  // grow from parent to child; a history that breaks that is not reasoned about.
  const disordered = ancestry.find((snapshot, index) => index + 1 < ancestry.length && snapshot['sequence-number'] <= (ancestry[index + 1] as IcebergSnapshot)['sequence-number']);
  if (disordered !== undefined) return `snapshot ${disordered['snapshot-id']} has a sequence number not above its parent's`;
  const foreign = before.snapshots.find((snapshot) => snapshot.summary[WRITER_ID_SUMMARY_KEY] === undefined);
  if (foreign !== undefined) return `snapshot ${foreign['snapshot-id']} is not our writer's (no ${WRITER_ID_SUMMARY_KEY})`;
  return undefined;
}

/**
 * The incremental method, on a history {@link incrementalRefusal} accepts: one line of
 * snapshots, each the child of the one before, ending at the current one (always kept).
 *
 * - A manifest list goes with its expired snapshot (unless a kept snapshot names the same list).
 * - A manifest goes when an expired snapshot lists it and no kept one does (a candidate).
 * - A data file goes when a candidate lists it as DELETED by a snapshot that is not kept, and no
 *   kept snapshot still reads it: none with a sequence number from the file's own (the snapshot
 *   that added it) up to, not including, the removing snapshot's. Kept snapshots are not always
 *   the newest ones — the parent of a compaction stays for `REPLACED_FILE_GRACE_MS`, a ref may
 *   hold an old snapshot — so that interval is checked file by file; Iceberg's implementation,
 *   which expires only the oldest, does not.
 *
 * Why nothing else can go: a data file only expired snapshots reach is named by one of them,
 * S. Walking S's descendants (each in the table: no gaps) to the first kept one, the file is
 * no longer named there, so some snapshot on the way removed it, wrote it DELETED into a
 * manifest it lists, and no kept snapshot lists that manifest (it would name the file): a
 * candidate. Were S's entry already DELETED, that is the removing snapshot's manifest itself.
 * Why nothing kept goes: a kept snapshot newer than the removal lists the file only through
 * that manifest (a candidate, so it does not), one older than the file's addition never named
 * it, and one in between is excluded above. Only candidates with DELETED entries are opened
 * (`deleted_files_count` in the list says which), after the commit.
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
  const keptSequences = keptSnapshots.map((snapshot) => snapshot['sequence-number']);
  // A count the list does not give (another writer's list) means the manifest is opened.
  const withDeletes = [...candidates.values()].filter((file) => file.deleted_files_count !== 0);
  return {
    method: 'incremental',
    paths: [...paths],
    async dataFiles() {
      const found = new Set<string>();
      await mapBounded(withDeletes, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (file) => {
        const entries = await manifests.entries(objects, table, file.manifest_path);
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
          if (keptSequences.some((sequence) => sequence >= addedAt && sequence < removedAt)) continue;
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
