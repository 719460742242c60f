import {
  currentSnapshot,
  decodeManifestInSlices,
  decodeManifestList,
  decodeManifestRefsInSlices,
  ManifestEntryStatus,
  type IcebergSnapshot,
  type IcebergTableMetadata,
  type ManifestEntry,
  type ManifestEntryRef,
  type ManifestFile,
} from '@auditlake/format';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { s3Key, type IcebergTableRef } from './iceberg-table-ref.js';
import type { ObjectStore } from './object-store.js';

/** A manifest of a snapshot with its entries, sequence numbers resolved (none inherited). */
export interface ResolvedManifest {
  file: ManifestFile;
  entries: ManifestEntry[];
}

/**
 * Decoded manifests by path: a manifest never changes once written, so one read serves every
 * snapshot that lists it (expiry walks many snapshots sharing most of their manifests). Reads
 * of one path at once share one decode. Decoding gives the event loop a turn every few ms
 * ({@link decodeManifestInSlices}): at 20,000 entries a manifest is ~0.5 s of decoding, which
 * held a leader's lease renewals back when done in one stretch.
 */
export class ManifestCache {
  readonly #entries = new Map<string, Promise<ManifestEntry[]>>();
  readonly #refs = new Map<string, Promise<readonly ManifestEntryRef[]>>();

  entries(objects: ObjectStore, table: IcebergTableRef, path: string): Promise<ManifestEntry[]> {
    return memoized(this.#entries, path, () => readManifestEntries(objects, table, path));
  }

  /**
   * The entries as far as finding files needs them ({@link ManifestEntryRef}): a few hundred
   * bytes an entry where a whole one is several KB, so orphan cleanup and expiry, which walk
   * every manifest of many snapshots, hold little. Whole entries already read serve too.
   */
  refs(objects: ObjectStore, table: IcebergTableRef, path: string): Promise<readonly ManifestEntryRef[]> {
    const whole = this.#entries.get(path);
    if (whole) return whole;
    return memoized(this.#refs, path, async () => (await decodeManifestRefsInSlices(await objects.get(s3Key(table, path)))).entries);
  }
}

/** The value of `key` in `cache`, made by `make` once; a failed one is not kept (the next call asks again). */
function memoized<T>(cache: Map<string, Promise<T>>, key: string, make: () => Promise<T>): Promise<T> {
  let value = cache.get(key);
  if (!value) {
    value = make();
    cache.set(key, value);
    value.catch(() => cache.delete(key));
  }
  return value;
}

/** A manifest's entries as written (sequence numbers not resolved), decoded in slices. */
async function readManifestEntries(objects: ObjectStore, table: IcebergTableRef, path: string): Promise<ManifestEntry[]> {
  return (await decodeManifestInSlices(await objects.get(s3Key(table, path)))).entries;
}

/**
 * Writes out inherited sequence numbers (spec "Sequence Number Inheritance"), as a rewrite must.
 * An entry with nothing to inherit (every EXISTING or DELETED one, and ADDED ones a writer gave
 * numbers) is returned as it is: copying 20,000 of them on every walk of a snapshot was
 * allocation for nothing. Entries are shared, never changed in place. Only ADDED entries inherit
 * sequence numbers (the snapshot id any entry may): an EXISTING or DELETED one without them is
 * another writer's mistake, refused (AUDIT_TABLE_INVALID) — given the manifest's numbers, a
 * rewrite would have written invented ones out for good (review).
 */
export function resolveEntry(entry: ManifestEntry, manifest: ManifestFile): ManifestEntry {
  if (entry.snapshot_id !== null && entry.sequence_number !== null && entry.file_sequence_number !== null) return entry;
  if (entry.status !== ManifestEntryStatus.ADDED && (entry.sequence_number === null || entry.file_sequence_number === null)) {
    throw new AuditError(
      AuditErrorCode.TABLE_INVALID,
      `Iceberg manifest ${manifest.manifest_path} is not usable: its ${entry.status === ManifestEntryStatus.EXISTING ? 'EXISTING' : 'DELETED'} entry for ${entry.data_file.file_path} has no sequence number, which only ADDED entries may inherit (spec "Sequence Number Inheritance")`,
    );
  }
  return {
    ...entry,
    snapshot_id: entry.snapshot_id ?? manifest.added_snapshot_id,
    sequence_number: entry.sequence_number ?? manifest.sequence_number,
    file_sequence_number: entry.file_sequence_number ?? manifest.sequence_number,
  };
}

/** One manifest of a manifest list with its entries, sequence numbers resolved. */
export async function resolvedManifest(objects: ObjectStore, table: IcebergTableRef, file: ManifestFile, cache: ManifestCache): Promise<ResolvedManifest> {
  return { file, entries: (await cache.entries(objects, table, file.manifest_path)).map((entry) => resolveEntry(entry, file)) };
}

/** The rows of `snapshot`'s manifest list: one per manifest, with its counts. */
export async function snapshotManifestFiles(objects: ObjectStore, table: IcebergTableRef, snapshot: IcebergSnapshot): Promise<ManifestFile[]> {
  return decodeManifestList(await objects.get(s3Key(table, snapshot['manifest-list']))).files;
}

/** The manifests of `snapshot`, fetched at most OBJECT_REQUESTS_IN_FLIGHT_MAX at a time. */
export async function snapshotManifests(objects: ObjectStore, table: IcebergTableRef, snapshot: IcebergSnapshot, cache = new ManifestCache()): Promise<ResolvedManifest[]> {
  return mapBounded(await snapshotManifestFiles(objects, table, snapshot), OBJECT_REQUESTS_IN_FLIGHT_MAX, (file) => resolvedManifest(objects, table, file, cache));
}

/** The manifests of the current snapshot (none for an empty table). */
export async function currentManifests(objects: ObjectStore, table: IcebergTableRef, metadata: IcebergTableMetadata, cache?: ManifestCache): Promise<ResolvedManifest[]> {
  const snapshot = currentSnapshot(metadata);
  return snapshot ? snapshotManifests(objects, table, snapshot, cache) : [];
}

/** True for an entry whose file is in the table as of the manifest's snapshot. */
export function isLive(entry: Pick<ManifestEntry, 'status'>): boolean {
  return entry.status !== ManifestEntryStatus.DELETED;
}

/**
 * Every path a snapshot reaches: its manifest list, its manifests and every file they name (any
 * status; with `liveOnly`, only the data files it still reads, not those it lists as DELETED).
 * Reads only the entries' refs (`cache.refs`).
 */
export async function snapshotReach(objects: ObjectStore, table: IcebergTableRef, snapshot: IcebergSnapshot, cache: ManifestCache, into: Set<string>, liveOnly = false): Promise<void> {
  into.add(snapshot['manifest-list']);
  const files = await snapshotManifestFiles(objects, table, snapshot);
  const manifests = await mapBounded(files, OBJECT_REQUESTS_IN_FLIGHT_MAX, (file) => cache.refs(objects, table, file.manifest_path));
  files.forEach((file, index) => {
    into.add(file.manifest_path);
    for (const entry of manifests[index] ?? []) if (!liveOnly || isLive(entry)) into.add(entry.data_file.file_path);
  });
}
