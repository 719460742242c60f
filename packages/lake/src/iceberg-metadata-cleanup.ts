import { trimMetadataLog } from '@auditlake/format';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { tableTurn, type MaintenanceContext } from './iceberg-maintenance-context.js';
import { metadataFileKey } from './iceberg-table-ref.js';
import type { LoadedTable } from './iceberg-table.js';
import { commitMetadataVersion } from './iceberg-version-commit.js';

export interface MetadataCleanupResult {
  loaded: LoadedTable;
  filesDeleted: number;
}

/** The version number of a `…/v<N>.metadata.json` key or path, else undefined. */
export function metadataVersionOf(key: string): number | undefined {
  const match = /\/v(\d+)\.metadata\.json$/.exec(key);
  return match ? Number(match[1]) : undefined;
}

/**
 * Metadata cleanup: the metadata-log is cut to `previous.versions.max` entries (a commit, only
 * when it is longer), then every `v<N>.metadata.json` older than the oldest version the log
 * still names is deleted. Never the current version or a newer one. The hint is not read: a
 * late hint write of a deposed leader may name a version deleted here, and loadIcebergTable then
 * finds the table by listing (the next commit moves the hint forward again).
 */
export async function cleanIcebergMetadata(context: MaintenanceContext, loaded: LoadedTable): Promise<MetadataCleanupResult> {
  const base = await tableTurn(context, loaded, async (current) => {
    const next = trimMetadataLog(current.metadata, { entriesMax: context.metadataLogEntriesMax, nowMs: context.now(), previousMetadataPath: current.metadataPath });
    return next ? commitMetadataVersion(context.objects, context.table, current, next, context.fence) : current;
  });
  // After the turn: later commits only add newer versions, so what is older stays unnamed.
  const logged = base.metadata['metadata-log'].map((entry) => metadataVersionOf(entry['metadata-file'])).filter((v): v is number => v !== undefined);
  const oldestKept = Math.min(base.version, ...logged);
  const keys = await context.objects.list(metadataFileKey(context.table, 'v'));
  const doomed = keys.filter((key) => {
    const version = metadataVersionOf(key);
    return version !== undefined && version < oldestKept;
  });
  await mapBounded(doomed, OBJECT_REQUESTS_IN_FLIGHT_MAX, (key) => context.objects.delete(key));
  return { loaded: base, filesDeleted: doomed.length };
}
