import { randomInt, randomUUID } from 'node:crypto';
import {
  currentSchema,
  currentSnapshot,
  encodeManifestInSlices,
  encodeManifestList,
  ManifestEntryStatus,
  manifestFileFor,
  replaceSnapshot,
  type IcebergTableMetadata,
  type ManifestEntry,
  type ManifestFile,
} from '@auditlake/format';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { carriedSummary, tableTurn, type MaintenanceContext } from './iceberg-maintenance-context.js';
import { isLive, ManifestCache, resolvedManifest, snapshotManifestFiles } from './iceberg-table-files.js';
import { metadataFileKey } from './iceberg-table-ref.js';
import type { LoadedTable } from './iceberg-table.js';
import { commitMetadataVersion } from './iceberg-version-commit.js';

/** Entries one rewritten manifest holds at most (a manifest entry is about half a KB). */
export const MANIFEST_ENTRIES_MAX = 20_000;

/**
 * Manifests of at most this many live entries are merged whatever their size beside the others:
 * rewriting them costs a few ms, and a commit's manifest (one entry per day it touched) is one.
 */
export const MANIFEST_ENTRIES_SMALL = 200;

export interface ManifestRewriteResult {
  loaded: LoadedTable;
  manifestsReplaced: number;
  manifestsCreated: number;
  /** Manifests of the snapshot carried unchanged into the rewrite's. */
  manifestsKept: number;
}

/** Live entries of a manifest, as its manifest-list row counts them. */
function liveEntries(file: ManifestFile): number {
  return file.added_files_count + file.existing_files_count;
}

/**
 * The manifests of a snapshot a rewrite merges, chosen from the manifest list's counts alone (so
 * a rewrite opens no manifest it keeps): every one with DELETED entries (a removal is recorded
 * once, in the snapshot that made it; carried on, it would keep its file from ever going), then,
 * smallest first, each one with no more live entries than those merged so far — or at most
 * {@link MANIFEST_ENTRIES_SMALL} — and fewer than `entriesMax`. Larger ones stay as they are.
 *
 * A manifest is merged only into one at least twice its size, so an entry is rewritten a
 * handful of times in its life (log2 of entriesMax / MANIFEST_ENTRIES_SMALL, ~7) instead of at
 * every rewrite, a rewrite costs about what was committed since the last, and the kept
 * manifests grow geometrically: a table of N live files has about N / entriesMax full ones and
 * a few more. An empty plan when merging would change nothing: no manifest, or one alone
 * without DELETED entries.
 */
export function manifestsToMerge(files: readonly ManifestFile[], entriesMax = MANIFEST_ENTRIES_MAX): ManifestFile[] {
  const merged = files.filter((file) => file.deleted_files_count > 0);
  let pooled = merged.reduce((n, file) => n + liveEntries(file), 0);
  const bySize = files.filter((file) => file.deleted_files_count === 0 && liveEntries(file) < entriesMax).sort((a, b) => liveEntries(a) - liveEntries(b));
  for (const file of bySize) {
    const live = liveEntries(file);
    // The smallest starts the pool when nothing else does: with an empty pool, manifests of
    // more than MANIFEST_ENTRIES_SMALL entries each (a commit touching hundreds of days) were
    // never merged, however many (review).
    if (merged.length > 0 && live > Math.max(pooled, MANIFEST_ENTRIES_SMALL)) break;
    merged.push(file);
    pooled += live;
  }
  const unchanged = merged.length === 0 || (merged.length === 1 && merged[0]!.deleted_files_count === 0);
  return unchanged ? [] : merged;
}

/**
 * Manifest rewrite (operation `replace`, no data change): the manifests {@link manifestsToMerge}
 * picks — those with DELETED entries and the small ones — are merged, their live files written
 * as EXISTING with their original snapshot id and sequence numbers, ordered by day, into as few
 * manifests as {@link MANIFEST_ENTRIES_MAX} allows; DELETED entries are dropped. Every other
 * manifest is carried unchanged (same path, same list row), so the rewrite's cost follows what
 * was committed since the last one, not every file the table holds, and a reader's decoded
 * manifests stay valid. Skipped when there is nothing to merge. Built and committed in the
 * step's turn on the table as it is then ({@link tableTurn}); no data is read.
 */
export async function rewriteIcebergManifests(context: MaintenanceContext, loaded: LoadedTable): Promise<ManifestRewriteResult> {
  // Read before the turn: in the turn only manifests a sweep added meanwhile are fetched.
  const cache = new ManifestCache();
  // Only a warm-up: a snapshot a sweep expired meanwhile is simply not read.
  if (context.fence.serialize) await warmUp(context, loaded, cache).catch(() => undefined);
  return tableTurn(context, loaded, async (base) => {
    const files = await currentManifestFiles(context, base.metadata);
    const merged = manifestsToMerge(files);
    if (merged.length === 0) return { loaded: base, manifestsReplaced: 0, manifestsCreated: 0, manifestsKept: files.length };
    const snapshotId = randomInt(1, 2 ** 47);
    const attempt = randomUUID();
    const sequenceNumber = base.metadata['last-sequence-number'] + 1;
    const rows = await writeMerged(context, base, await mergedEntries(context, merged, cache), { snapshotId, sequenceNumber, attempt });
    const replaced = new Set(merged.map((file) => file.manifest_path));
    const kept = files.filter((file) => !replaced.has(file.manifest_path));
    const parentId = base.metadata['current-snapshot-id'];
    const listKey = metadataFileKey(context.table, `snap-${snapshotId}-1-${attempt}.avro`);
    await context.objects.put(listKey, encodeManifestList([...kept, ...rows], { snapshotId, parentSnapshotId: parentId > 0 ? parentId : null, sequenceNumber }), 'application/octet-stream');
    const next = replaceSnapshot(base.metadata, {
      snapshotId,
      manifestListPath: context.objects.url(listKey),
      nowMs: context.now(),
      previousMetadataPath: base.metadataPath,
      addedFiles: { records: 0, files: 0, sizeBytes: 0, partitions: 0 },
      deletedFiles: { records: 0, files: 0, sizeBytes: 0 },
      manifests: { created: rows.length, replaced: merged.length, kept: kept.length, entriesProcessed: merged.reduce((n, file) => n + liveEntries(file) + file.deleted_files_count, 0) },
      summaryExtra: carriedSummary(base.metadata),
      metadataLogEntriesMax: context.metadataLogEntriesMax,
    });
    return { loaded: await commitMetadataVersion(context.objects, context.table, base, next, context.fence), manifestsReplaced: merged.length, manifestsCreated: rows.length, manifestsKept: kept.length };
  });
}

/** Reads the manifests a rewrite of `loaded` would merge into `cache`. */
async function warmUp(context: MaintenanceContext, loaded: LoadedTable, cache: ManifestCache): Promise<void> {
  await mergedEntries(context, manifestsToMerge(await currentManifestFiles(context, loaded.metadata)), cache);
}

/** The manifest-list rows of the current snapshot (none for an empty table). */
async function currentManifestFiles(context: MaintenanceContext, metadata: IcebergTableMetadata): Promise<ManifestFile[]> {
  const snapshot = currentSnapshot(metadata);
  return snapshot ? snapshotManifestFiles(context.objects, context.table, snapshot) : [];
}

/** The live entries of `files`, as EXISTING with their sequence numbers written out, by day and then path. */
async function mergedEntries(context: MaintenanceContext, files: readonly ManifestFile[], cache: ManifestCache): Promise<ManifestEntry[]> {
  const manifests = await mapBounded(files, OBJECT_REQUESTS_IN_FLIGHT_MAX, (file) => resolvedManifest(context.objects, context.table, file, cache));
  const live: ManifestEntry[] = [];
  for (const manifest of manifests) for (const entry of manifest.entries) if (isLive(entry)) live.push({ ...entry, status: ManifestEntryStatus.EXISTING });
  // Code-unit order, not localeCompare: the same for ASCII paths and ~100 times cheaper.
  return live.sort((a, b) => (a.data_file.partition.event_time_day ?? 0) - (b.data_file.partition.event_time_day ?? 0) || compareStrings(a.data_file.file_path, b.data_file.file_path));
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `entries` written into manifests of MANIFEST_ENTRIES_MAX entries at most: their manifest-list rows. */
async function writeMerged(context: MaintenanceContext, base: LoadedTable, entries: readonly ManifestEntry[], commit: { snapshotId: number; sequenceNumber: number; attempt: string }): Promise<ManifestFile[]> {
  const { snapshotId, sequenceNumber, attempt } = commit;
  const rows: ManifestFile[] = [];
  for (let start = 0, part = 0; start < entries.length; start += MANIFEST_ENTRIES_MAX, part++) {
    const chunk = entries.slice(start, start + MANIFEST_ENTRIES_MAX);
    const bytes = await encodeManifestInSlices(chunk, { schema: currentSchema(base.metadata) });
    const key = metadataFileKey(context.table, `${attempt}-m${part}.avro`);
    await context.objects.put(key, bytes, 'application/octet-stream');
    rows.push(manifestFileFor({ manifestPath: context.objects.url(key), manifestLengthBytes: bytes.byteLength, entries: chunk, snapshotId, sequenceNumber }));
  }
  return rows;
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
 * snapshot names at least `manifestsMax` manifests that a rewrite may merge — full ones (no
 * DELETED entries) stay as they are, so counted they made every sweep of a table past
 * `manifestsMax` full manifests run a rewrite that merged a couple of small ones (review) —
 * then exactly the maintenance step. Undefined when not due or when it merged nothing.
 */
export async function rewriteManifestsIfMany(context: MaintenanceContext, loaded: LoadedTable, manifests: number, manifestsMax = MANIFESTS_BETWEEN_RUNS_MAX): Promise<ManifestRewriteResult | undefined> {
  if (manifests < manifestsMax) return undefined;
  const files = loaded.knownManifestList?.files;
  if (files !== undefined && files.filter((file) => file.deleted_files_count > 0 || liveEntries(file) < MANIFEST_ENTRIES_MAX).length < manifestsMax) return undefined;
  const result = await rewriteIcebergManifests(context, loaded);
  return result.manifestsReplaced === 0 ? undefined : result;
}
