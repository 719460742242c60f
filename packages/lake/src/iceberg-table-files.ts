import { currentSnapshot, decodeManifest, decodeManifestList, ManifestEntryStatus, type IcebergSnapshot, type IcebergTableMetadata, type ManifestEntry, type ManifestFile } from '@auditlake/format';
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
 * snapshot that lists it (expiry walks many snapshots sharing most of their manifests).
 */
export class ManifestCache {
  readonly #entries = new Map<string, ManifestEntry[]>();

  async entries(objects: ObjectStore, table: IcebergTableRef, path: string): Promise<ManifestEntry[]> {
    let entries = this.#entries.get(path);
    if (!entries) {
      entries = decodeManifest(await objects.get(s3Key(table, path))).entries;
      this.#entries.set(path, entries);
    }
    return entries;
  }
}

/** Writes out inherited sequence numbers (spec "Sequence Number Inheritance"), as a rewrite must. */
export function resolveEntry(entry: ManifestEntry, manifest: ManifestFile): ManifestEntry {
  return {
    ...entry,
    snapshot_id: entry.snapshot_id ?? manifest.added_snapshot_id,
    sequence_number: entry.sequence_number ?? manifest.sequence_number,
    file_sequence_number: entry.file_sequence_number ?? manifest.sequence_number,
  };
}

/** The manifests of `snapshot`, fetched at most OBJECT_REQUESTS_IN_FLIGHT_MAX at a time. */
export async function snapshotManifests(objects: ObjectStore, table: IcebergTableRef, snapshot: IcebergSnapshot, cache = new ManifestCache()): Promise<ResolvedManifest[]> {
  const list = decodeManifestList(await objects.get(s3Key(table, snapshot['manifest-list'])));
  return mapBounded(list.files, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (file) => ({
    file,
    entries: (await cache.entries(objects, table, file.manifest_path)).map((entry) => resolveEntry(entry, file)),
  }));
}

/** The manifests of the current snapshot (none for an empty table). */
export async function currentManifests(objects: ObjectStore, table: IcebergTableRef, metadata: IcebergTableMetadata, cache?: ManifestCache): Promise<ResolvedManifest[]> {
  const snapshot = currentSnapshot(metadata);
  return snapshot ? snapshotManifests(objects, table, snapshot, cache) : [];
}

/** True for an entry whose file is in the table as of the manifest's snapshot. */
export function isLive(entry: ManifestEntry): boolean {
  return entry.status !== ManifestEntryStatus.DELETED;
}

/**
 * Every path a snapshot reaches: its manifest list, its manifests and every file they name (any
 * status; with `liveOnly`, only the data files it still reads, not those it lists as DELETED).
 */
export async function snapshotReach(objects: ObjectStore, table: IcebergTableRef, snapshot: IcebergSnapshot, cache: ManifestCache, into: Set<string>, liveOnly = false): Promise<void> {
  into.add(snapshot['manifest-list']);
  for (const manifest of await snapshotManifests(objects, table, snapshot, cache)) {
    into.add(manifest.file.manifest_path);
    for (const entry of manifest.entries) if (!liveOnly || isLive(entry)) into.add(entry.data_file.file_path);
  }
}
