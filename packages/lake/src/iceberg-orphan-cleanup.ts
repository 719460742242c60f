import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import type { MaintenanceContext } from './iceberg-maintenance-context.js';
import { ManifestCache, snapshotReach } from './iceberg-table-files.js';
import { versionHintKey } from './iceberg-table-ref.js';
import type { LoadedTable } from './iceberg-table.js';
import type { ListedObject } from './object-store.js';
import { joinKey } from './s3-location.js';

/**
 * Orphan cleanup: objects under the table's `data/` and `metadata/` that nothing retained refers
 * to — not the current metadata file, a metadata-log file, the hint, nor any manifest list,
 * manifest or data file of a retained snapshot (any status) — and older than `minAgeMs`, the
 * guard that spares a commit still being written (its files look unreferenced until it lands).
 * Losers of a commit race, files of a crashed commit and leftovers of an interrupted expiry end
 * here.
 */
export async function removeIcebergOrphans(context: MaintenanceContext, loaded: LoadedTable, minAgeMs: number): Promise<number> {
  const { objects, table } = context;
  const referenced = new Set<string>([loaded.metadataPath, objects.url(versionHintKey(table))]);
  for (const entry of loaded.metadata['metadata-log']) referenced.add(entry['metadata-file']);
  const cache = new ManifestCache();
  for (const snapshot of loaded.metadata.snapshots) await snapshotReach(objects, table, snapshot, cache, referenced);
  const listed: ListedObject[] = [...(await objects.listObjects(joinKey(table.s3.prefix, 'data/'))), ...(await objects.listObjects(joinKey(table.s3.prefix, 'metadata/')))];
  const cutoffMs = context.now() - minAgeMs;
  const orphans = listed.filter((object) => !referenced.has(objects.url(object.key)) && object.lastModifiedMs <= cutoffMs);
  await mapBounded(orphans, OBJECT_REQUESTS_IN_FLIGHT_MAX, (object) => objects.delete(object.key));
  return orphans.length;
}

/** Bytes stored under the table's location (data and metadata), for a run's before/after figures. */
export async function tableBytes(context: MaintenanceContext): Promise<number> {
  const objects = await context.objects.listObjects(joinKey(context.table.s3.prefix, ''));
  return objects.reduce((sum, object) => sum + object.bytes, 0);
}
