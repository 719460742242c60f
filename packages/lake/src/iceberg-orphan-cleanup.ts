import { deleteWhileLeader } from './fenced-delete.js';
import { tableTurn, type MaintenanceContext } from './iceberg-maintenance-context.js';
import { ManifestCache, snapshotReach } from './iceberg-table-files.js';
import { versionHintKey, type IcebergTableRef } from './iceberg-table-ref.js';
import type { LoadedTable } from './iceberg-table.js';
import type { ListedObject } from './object-store.js';
import { joinKey } from './s3-location.js';
import { orphanCutoffMs } from './store-clock.js';

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/** A commit attempt's id in our object names: a random UUID, prefixed by the leader term in later writers. */
const ATTEMPT = `(?:t\\d+-)?${UUID}`;

/**
 * The names our writers give objects under `<table>/data/`, relative to it: a day's directory
 * (`event_time_day=YYYY-MM-DD`), then a sweep's file (`<first seq>-t<term>-<8 hex>.parquet`, or
 * `<first seq>-<8 hex>.parquet` before terms were in the name), a compaction's
 * (`compacted-<attempt>-<n>.parquet`) or an erasure rewrite's (`rewritten-<attempt>-<n>.parquet`).
 */
const DATA_FILE_NAME = new RegExp(`^event_time_day=\\d{4}-\\d{2}-\\d{2}/(?:\\d{16,}-(?:t\\d+-)?[0-9a-f]{8}|(?:compacted|rewritten)-${ATTEMPT}-\\d+)\\.parquet$`);

/**
 * The names our writers give objects under `<table>/metadata/`, relative to it: `v<N>.metadata.json`,
 * manifest lists (`snap-<snapshot id>-<attempt number>-<attempt>.avro`) and manifests
 * (`<attempt>-m<n>.avro`, `<attempt>-<attempt number>-m<n>.avro`). Never `version-hint.text`.
 */
const METADATA_FILE_NAME = new RegExp(`^(?:v\\d+\\.metadata\\.json|snap-\\d+-\\d+-${ATTEMPT}\\.avro|${ATTEMPT}(?:-\\d+)?-m\\d+\\.avro)$`);

/**
 * Whether `key` is an object this table's writers could have written (see {@link DATA_FILE_NAME},
 * {@link METADATA_FILE_NAME}). Orphan cleanup considers nothing else: the table's folders may hold
 * what is not the table's — another tier location nested below `data/`, an engine's statistics
 * files — and those are not its to delete.
 */
export function isIcebergWriterObject(table: Pick<IcebergTableRef, 's3'>, key: string): boolean {
  const data = joinKey(table.s3.prefix, 'data/');
  const metadata = joinKey(table.s3.prefix, 'metadata/');
  if (key.startsWith(data)) return DATA_FILE_NAME.test(key.slice(data.length));
  if (key.startsWith(metadata)) return METADATA_FILE_NAME.test(key.slice(metadata.length));
  return false;
}

/**
 * Orphan cleanup: objects under the table's `data/` and `metadata/` named as our writers name
 * them ({@link isIcebergWriterObject}) that nothing retained refers to — not the current metadata
 * file, a metadata-log file, the hint, a statistics or partition-statistics file, nor any manifest
 * list, manifest or data file of a retained snapshot (any status) — and whose S3 `LastModified`
 * (as the listing gives it) is at least `minAgeMs` before the earlier of `context.now()` and the
 * store's clock (`context.storeNow`), the guard that spares a commit still being written (its
 * files look unreferenced until it lands). Losers of a commit race, files of a crashed commit and
 * leftovers of an interrupted expiry end here. Objects of other names — another engine's, another
 * tier location's nested below `data/` — are never deleted.
 *
 * The objects are listed first, outside the step's turn; what is referenced is read in the turn
 * ({@link tableTurn}) from the table as it is then. A sweep of this process writes its files
 * only while it holds the commit lock and has committed or abandoned them before it lets go, so
 * a file listed before the turn is, at the turn, either named by the table or never will be;
 * a file written after the listing is not considered. The deletes follow the turn, each only
 * while `fence.mayCommit()` holds: a deposed leader stops (`AUDIT_NOT_LEADER`) rather than delete
 * what its successor is writing.
 */
export async function removeIcebergOrphans(context: MaintenanceContext, loaded: LoadedTable, minAgeMs: number): Promise<number> {
  const { objects, table } = context;
  const listed: ListedObject[] = [...(await objects.listObjects(joinKey(table.s3.prefix, 'data/'))), ...(await objects.listObjects(joinKey(table.s3.prefix, 'metadata/')))];
  const cutoffMs = await orphanCutoffMs(context.now(), minAgeMs, context.storeNow);
  // A listing without LastModified (0) tells no age: never a candidate.
  const candidates = listed.filter((object) => object.lastModifiedMs > 0 && object.lastModifiedMs <= cutoffMs && isIcebergWriterObject(table, object.key));
  if (candidates.length === 0) return 0;
  const cache = new ManifestCache();
  // Read before the turn: in the turn only what a sweep added meanwhile is fetched.
  if (context.fence.serialize) await referencedBy(context, loaded, cache).catch(() => undefined);
  const referenced = await tableTurn(context, loaded, (current) => referencedBy(context, current, cache));
  const orphans = candidates.filter((object) => !referenced.has(objects.url(object.key)));
  return deleteWhileLeader(
    objects,
    orphans.map((object) => object.key),
    context.fence,
    `orphan cleanup of ${table.identifier}`,
  );
}

/** Every object URL `loaded` refers to: metadata files it logs, the hint, statistics files, and all its snapshots reach. */
async function referencedBy(context: MaintenanceContext, loaded: LoadedTable, cache: ManifestCache): Promise<Set<string>> {
  const { objects, table } = context;
  const referenced = new Set<string>([loaded.metadataPath, objects.url(versionHintKey(table))]);
  for (const entry of loaded.metadata['metadata-log']) referenced.add(entry['metadata-file']);
  // Statistics files another engine recorded (spec "Table Statistics", "Partition Statistics").
  for (const field of ['statistics', 'partition-statistics']) {
    const entries = loaded.metadata[field];
    if (!Array.isArray(entries)) continue;
    for (const entry of entries as unknown[]) {
      const path = typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>)['statistics-path'] : undefined;
      if (typeof path === 'string') referenced.add(path);
    }
  }
  for (const snapshot of loaded.metadata.snapshots) await snapshotReach(objects, table, snapshot, cache, referenced);
  return referenced;
}

/** Bytes stored under the table's location (data and metadata), for a run's before/after figures. */
export async function tableBytes(context: MaintenanceContext): Promise<number> {
  const objects = await context.objects.listObjects(joinKey(context.table.s3.prefix, ''));
  return objects.reduce((sum, object) => sum + object.bytes, 0);
}
