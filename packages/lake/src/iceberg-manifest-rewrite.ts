import { randomInt, randomUUID } from 'node:crypto';
import { currentSchema, encodeManifest, encodeManifestList, ManifestEntryStatus, manifestFileFor, replaceSnapshot, type ManifestEntry, type ManifestFile } from '@auditlake/format';
import { carriedSummary, tableTurn, type MaintenanceContext } from './iceberg-maintenance-context.js';
import { currentManifests, isLive, ManifestCache } from './iceberg-table-files.js';
import { metadataFileKey } from './iceberg-table-ref.js';
import type { LoadedTable } from './iceberg-table.js';
import { commitMetadataVersion } from './iceberg-version-commit.js';

/** Entries one rewritten manifest holds at most (a manifest entry is about half a KB). */
export const MANIFEST_ENTRIES_MAX = 20_000;

export interface ManifestRewriteResult {
  loaded: LoadedTable;
  manifestsReplaced: number;
  manifestsCreated: number;
}

/**
 * Manifest rewrite (operation `replace`, no data change): every live file of the current
 * snapshot goes into as few manifests as {@link MANIFEST_ENTRIES_MAX} allows, as EXISTING with
 * its original snapshot id and sequence numbers written out, ordered by day; DELETED entries
 * are dropped. The manifest list then names a handful of manifests instead of one per commit.
 * Skipped when the snapshot already has one manifest without DELETED entries. Built and
 * committed in the step's turn on the table as it is then ({@link tableTurn}); no data is read.
 */
export async function rewriteIcebergManifests(context: MaintenanceContext, loaded: LoadedTable): Promise<ManifestRewriteResult> {
  // Read before the turn: in the turn only manifests a sweep added meanwhile are fetched.
  const cache = new ManifestCache();
  // Only a warm-up: a snapshot a sweep expired meanwhile is simply not read.
  if (context.fence.serialize) await currentManifests(context.objects, context.table, loaded.metadata, cache).catch(() => undefined);
  return tableTurn(context, loaded, async (base) => {
    const manifests = await currentManifests(context.objects, context.table, base.metadata, cache);
    const hasDeleted = manifests.some((m) => m.entries.some((e) => !isLive(e)));
    if (manifests.length <= 1 && !hasDeleted) return { loaded: base, manifestsReplaced: 0, manifestsCreated: 0 };
    const live: ManifestEntry[] = manifests
      .flatMap((m) => m.entries.filter(isLive))
      .map((entry) => ({ ...entry, status: ManifestEntryStatus.EXISTING }))
      .sort((a, b) => (a.data_file.partition.event_time_day ?? 0) - (b.data_file.partition.event_time_day ?? 0) || a.data_file.file_path.localeCompare(b.data_file.file_path));
    const snapshotId = randomInt(1, 2 ** 47);
    const attempt = randomUUID();
    const sequenceNumber = base.metadata['last-sequence-number'] + 1;
    const rows: ManifestFile[] = [];
    for (let start = 0, part = 0; start < live.length; start += MANIFEST_ENTRIES_MAX, part++) {
      const entries = live.slice(start, start + MANIFEST_ENTRIES_MAX);
      const bytes = encodeManifest(entries, { schema: currentSchema(base.metadata) });
      const key = metadataFileKey(context.table, `${attempt}-m${part}.avro`);
      await context.objects.put(key, bytes, 'application/octet-stream');
      rows.push(manifestFileFor({ manifestPath: context.objects.url(key), manifestLengthBytes: bytes.byteLength, entries, snapshotId, sequenceNumber }));
    }
    const parentId = base.metadata['current-snapshot-id'];
    const listKey = metadataFileKey(context.table, `snap-${snapshotId}-1-${attempt}.avro`);
    await context.objects.put(listKey, encodeManifestList(rows, { snapshotId, parentSnapshotId: parentId > 0 ? parentId : null, sequenceNumber }), 'application/octet-stream');
    const next = replaceSnapshot(base.metadata, {
      snapshotId,
      manifestListPath: context.objects.url(listKey),
      nowMs: context.now(),
      previousMetadataPath: base.metadataPath,
      addedFiles: { records: 0, files: 0, sizeBytes: 0, partitions: 0 },
      deletedFiles: { records: 0, files: 0, sizeBytes: 0 },
      manifests: { created: rows.length, replaced: manifests.length, kept: 0, entriesProcessed: manifests.reduce((n, m) => n + m.entries.length, 0) },
      summaryExtra: carriedSummary(base.metadata),
      metadataLogEntriesMax: context.metadataLogEntriesMax,
    });
    return { loaded: await commitMetadataVersion(context.objects, context.table, base, next, context.fence), manifestsReplaced: manifests.length, manifestsCreated: rows.length };
  });
}

/**
 * Between maintenance runs a sweep merges the current snapshot's manifests once it names this
 * many (Java's `commit.manifest.min-count-to-merge` default): every commit adds a manifest and
 * copies the whole list, so without a bound a sweep that commits thousands of times between
 * hourly runs would read and write an ever longer manifest list on every commit.
 */
export const MANIFESTS_BETWEEN_RUNS_MAX = 100;

/**
 * The manifest rewrite as a sweep runs it between maintenance runs: only when the current
 * snapshot names at least `manifestsMax` manifests (so a sweep pays one rewrite per that many
 * commits), then exactly the maintenance step. Undefined when not due.
 */
export async function rewriteManifestsIfMany(context: MaintenanceContext, loaded: LoadedTable, manifests: number, manifestsMax = MANIFESTS_BETWEEN_RUNS_MAX): Promise<ManifestRewriteResult | undefined> {
  if (manifests < manifestsMax) return undefined;
  return rewriteIcebergManifests(context, loaded);
}
