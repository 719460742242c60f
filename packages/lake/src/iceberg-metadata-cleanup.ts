import { trimMetadataLog } from '@auditlake/format';
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
  // Oldest first, one at a time: the versions left are always one unbroken run up to the
  // current one, wherever the deletes stop (a crash, a lost lease). A reader probes forward from
  // the hint and stops at the first version missing; deleted in parallel and in the listing's
  // order (v1, v10, v11, …, v2), a gap above a version still there had a stale hint load an old
  // version, and a commit on it fork the table below the newest (review).
  doomed.sort((a, b) => (metadataVersionOf(a) as number) - (metadataVersionOf(b) as number));
  for (const key of doomed) await context.objects.delete(key);
  return { loaded: base, filesDeleted: doomed.length };
}
