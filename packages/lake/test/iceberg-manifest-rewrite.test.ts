// Goal: a manifest rewrite merges only the manifests with DELETED entries and the small ones, leaving a large manifest as it is (same path, same list row, never fetched), so its cost follows what was committed since the last rewrite — over a long history an entry is rewritten a handful of times and the manifests stay few; a rewrite with nothing to merge commits nothing; the table stays whole for icebird and DuckDB.
import { currentSnapshot, decodeManifestList, type ManifestFile } from '@auditlake/format';
import type { StoredEvent } from '@auditlake/model';
import { icebergRead } from 'icebird';
import { describe, expect, it, onTestFinished } from 'vitest';
import { duckdbOverObjects, routeAwsS3To, twoDayEvents, useEmbeddedS3 } from '../src/testing/index.js';
import {
  commitIcebergBatch,
  compactIcebergTable,
  currentManifests,
  ensureIcebergTable,
  loadIcebergTable,
  MANIFEST_ENTRIES_MAX,
  MANIFEST_ENTRIES_SMALL,
  manifestsToMerge,
  resolveIcebergTable,
  rewriteIcebergManifests,
  rewriteManifestsIfMany,
  s3Key,
  type IcebergTableRef,
  type LoadedTable,
  type MaintenanceContext,
  type ObjectStore,
} from '../src/index.js';

const BUCKET = 'lake';
const T0 = Date.UTC(2026, 0, 1);
const DAY_MS = 86_400_000;
const CREDENTIALS = { accessKeyId: 'ALREWRITETEST0000001', secretAccessKey: 'rewrite-test-secret-0123456789abcdefgh' };
const s3 = useEmbeddedS3('iceberg-manifest-rewrite-', BUCKET, CREDENTIALS);
const fence = { term: 1, mayCommit: () => true };

/** A manifest-list row as the planner reads it: only its counts and path matter. */
function row(path: string, live: number, deleted = 0): ManifestFile {
  return {
    manifest_path: path,
    manifest_length: 1,
    partition_spec_id: 0,
    content: 0,
    sequence_number: 1,
    min_sequence_number: 1,
    added_snapshot_id: 1,
    added_files_count: 0,
    existing_files_count: live,
    deleted_files_count: deleted,
    added_rows_count: 0,
    existing_rows_count: live,
    deleted_rows_count: deleted,
    partitions: null,
    key_metadata: null,
  };
}

const paths = (files: readonly ManifestFile[]) => files.map((file) => file.manifest_path).sort();

describe('manifestsToMerge', () => {
  it('merges the small manifests and those with DELETED entries; a full one never, a larger one only into one at least its size; nothing when merging changes nothing', () => {
    const full = row('full', MANIFEST_ENTRIES_MAX);
    const ones = [row('a', 1), row('b', 1), row('c', 1)];
    expect(paths(manifestsToMerge([full, row('large', 5_000), ...ones]))).toEqual(['a', 'b', 'c']);
    expect(paths(manifestsToMerge([full, row('small', MANIFEST_ENTRIES_SMALL), ...ones]))).toEqual(['a', 'b', 'c', 'small']);
    // 400 entries from small ones take in a manifest of 300, not one of 5,000.
    const many = Array.from({ length: 100 }, (_, i) => row(`s${i}`, 4));
    expect(paths(manifestsToMerge([full, row('large', 5_000), row('mid', 300), ...many]))).toEqual(paths([row('mid', 300), ...many]));
    // DELETED entries are merged whatever the size, and what they bring takes in as much again.
    expect(paths(manifestsToMerge([row('full-with-deleted', MANIFEST_ENTRIES_MAX - 1, 1), row('large', 5_000), full]))).toEqual(['full-with-deleted', 'large']);
    expect(paths(manifestsToMerge([full, row('only-deleted', 0, 3)]))).toEqual(['only-deleted']);
    // Nothing to gain: no manifest, one alone, full ones.
    expect(manifestsToMerge([])).toEqual([]);
    expect(manifestsToMerge([row('alone', 10)])).toEqual([]);
    expect(manifestsToMerge([full, row('alone', 10)])).toEqual([]);
    expect(manifestsToMerge([full, row('full2', MANIFEST_ENTRIES_MAX + 5)])).toEqual([]);
    // Manifests of more than MANIFEST_ENTRIES_SMALL entries each (commits touching hundreds of
    // days) merge among themselves: the smallest starts the pool (review: none was ever merged).
    expect(paths(manifestsToMerge([row('p', 300), row('q', 300), full]))).toEqual(['p', 'q']);
    const wide = Array.from({ length: 150 }, (_, i) => row(`w${String(i).padStart(3, '0')}`, 250));
    expect(manifestsToMerge(wide)).toHaveLength(150);
    expect(manifestsToMerge([row('five', 5_000), row('nine', 9_000)])).toEqual([]);
  });

  it('is not run between maintenance runs for manifests it would keep: a table of more full manifests than the bound is not rewritten at every sweep', async () => {
    const fullOnes = Array.from({ length: 5 }, (_, i) => row(`full${i}`, MANIFEST_ENTRIES_MAX));
    const loaded = { version: 1, metadataPath: 'unused', metadata: {}, knownManifestList: { path: 'list', files: [...fullOnes, row('new', 2)] } } as unknown as LoadedTable;
    const untouchable = { get objects(): never { throw new Error('the rewrite must not run'); } } as unknown as MaintenanceContext;
    expect(await rewriteManifestsIfMany(untouchable, loaded, 6, 4)).toBeUndefined();
  });

  it('over a long history rewrites each entry a handful of times and keeps the manifests few: a rewrite costs what was committed since the last', () => {
    // 2,000 rewrites, each after 100 commits of 2 files (one manifest each): 400,000 files.
    let files: ManifestFile[] = [];
    let next = 0;
    let rewritten = 0;
    let mostManifests = 0;
    let mostRewritten = 0;
    for (let run = 0; run < 2_000; run++) {
      for (let c = 0; c < 100; c++) files.push(row(`m${next++}`, 2));
      const merged = manifestsToMerge(files);
      const entries = merged.reduce((n, file) => n + file.existing_files_count, 0);
      rewritten += entries;
      mostRewritten = Math.max(mostRewritten, entries);
      const done = new Set(merged.map((file) => file.manifest_path));
      files = files.filter((file) => !done.has(file.manifest_path));
      for (let start = 0; start < entries; start += MANIFEST_ENTRIES_MAX) files.push(row(`m${next++}`, Math.min(MANIFEST_ENTRIES_MAX, entries - start)));
      mostManifests = Math.max(mostManifests, files.length);
    }
    const total = files.reduce((n, file) => n + file.existing_files_count, 0);
    expect(total).toBe(400_000);
    // Rewriting every live entry each time would be ~400 million; log2(20,000 / 200) ≈ 7 per entry.
    expect(rewritten / total).toBeLessThan(10);
    expect(mostRewritten).toBeLessThanOrEqual(2 * MANIFEST_ENTRIES_MAX);
    // 20 full manifests and a few more, never one per commit.
    expect(mostManifests).toBeLessThan(total / MANIFEST_ENTRIES_MAX + 20);
    console.log(`rewrites of 400,000 files: ${(rewritten / total).toFixed(2)} rewrites an entry, at most ${mostRewritten} entries a rewrite, at most ${mostManifests} manifests`);
  });
});

function tableRef(name: string): IcebergTableRef {
  return resolveIcebergTable(`cat.ops.${name}`, new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
}

/** One event a day for `days` days from T0, seqs from `firstSeq`: one data file a day. */
function dailyEvents(firstSeq: number, days: number): StoredEvent[] {
  return Array.from({ length: days }, (_, i) => {
    const seq = firstSeq + i;
    return { eventId: `e${seq}`, userId: 'u', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: `q${seq}`, details: '', timestamp: T0 + i * DAY_MS + seq, ingestTs: T0 + 400 * DAY_MS + seq, seq, term: 1 };
  });
}

/** The keys of the manifests `objects` is asked for from now on. */
function manifestGets(objects: ObjectStore): { objects: ObjectStore; keys: string[] } {
  const keys: string[] = [];
  const counting = new Proxy(objects, {
    get(target, name) {
      if (name === 'get') {
        return (key: string) => {
          if (/-m\d+\.avro$/.test(key)) keys.push(key);
          return target.get(key);
        };
      }
      const value = Reflect.get(target, name, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { objects: counting, keys };
}

async function listedFiles(objects: ObjectStore, table: IcebergTableRef, loaded: LoadedTable): Promise<ManifestFile[]> {
  return decodeManifestList(await objects.get(s3Key(table, currentSnapshot(loaded.metadata)!['manifest-list']))).files;
}

/** Every event id icebird reads from the current snapshot, with how often; and DuckDB's count over its live files. */
async function expectEveryEventOnce(table: IcebergTableRef, objects: ObjectStore, seqMax: number): Promise<void> {
  onTestFinished(routeAwsS3To(s3.server.url, CREDENTIALS));
  const rows = (await icebergRead({ tableUrl: table.location })) as Array<Record<string, unknown>>;
  expect(rows.length).toBe(seqMax);
  expect(new Set(rows.map((r) => String(r['event_id']))).size).toBe(seqMax);
  const loaded = (await loadIcebergTable(objects, table))!;
  const live = (await currentManifests(objects, table, loaded.metadata)).flatMap((m) => m.entries.filter((e) => e.status !== 2).map((e) => s3Key(table, e.data_file.file_path)));
  const [counted] = await duckdbOverObjects(objects, live, s3.dir, 'SELECT count(*)::INTEGER AS n, count(DISTINCT event_id)::INTEGER AS d FROM {files}');
  expect({ n: Number(counted?.['n']), d: Number(counted?.['d']) }).toEqual({ n: seqMax, d: seqMax });
}

/**
 * A table whose first commit spans 250 days (a manifest of 250 entries, more than a small one),
 * then `smallCommits` commits of two days each; `listed`: the list's rows after the first commit.
 */
async function largeThenSmall(name: string, smallCommits: number) {
  const table = tableRef(name);
  const objects = s3.connections.bucket('s3', BUCKET);
  const context: MaintenanceContext = { objects, table, fence, now: Date.now, metadataLogEntriesMax: 100 };
  const days = MANIFEST_ENTRIES_SMALL + 50;
  let loaded = await ensureIcebergTable(objects, table, T0);
  loaded = (await commitIcebergBatch(objects, table, loaded, dailyEvents(1, days), { ...fence, nowMs: Date.now(), writerId: 'test' })).loaded;
  const listed = await listedFiles(objects, table, loaded);
  let seqMax = days;
  for (let c = 0; c < smallCommits; c++) {
    loaded = (await commitIcebergBatch(objects, table, loaded, twoDayEvents(T0, seqMax + 1, 2), { ...fence, nowMs: Date.now(), writerId: 'test' })).loaded;
    seqMax += 2;
  }
  return { table, objects, context, days, loaded, seqMax, listed };
}

describe('rewriteIcebergManifests', () => {
  it('leaves a large manifest as it is (same path and row, never fetched), merges the small ones after it, and commits nothing when nothing is left to merge', async () => {
    const { table, objects, context, days, ...made } = await largeThenSmall('keeps_large', 5);
    const { loaded, seqMax } = made;
    const [large] = made.listed;
    expect(large?.added_files_count).toBe(days);
    expect(await listedFiles(objects, table, loaded)).toHaveLength(6);

    const gets = manifestGets(objects);
    const result = await rewriteIcebergManifests({ ...context, objects: gets.objects }, loaded);
    expect(result).toMatchObject({ manifestsReplaced: 5, manifestsCreated: 1, manifestsKept: 1 });
    expect(gets.keys.some((key) => large!.manifest_path.endsWith(key))).toBe(false);
    expect(gets.keys).toHaveLength(5);
    const after = await listedFiles(objects, table, result.loaded);
    expect(after).toHaveLength(2);
    // Carried row for row: readers' decoded copies of it stay valid.
    expect(after.find((file) => file.manifest_path === large!.manifest_path)).toEqual(large);
    expect(after.find((file) => file.manifest_path !== large!.manifest_path)).toMatchObject({ existing_files_count: 10, added_files_count: 0, deleted_files_count: 0 });
    expect(currentSnapshot(result.loaded.metadata)!.summary).toMatchObject({ operation: 'replace', 'manifests-created': '1', 'manifests-replaced': '5', 'manifests-kept': '1', 'entries-processed': '10' });
    await expectEveryEventOnce(table, objects, seqMax);

    // Nothing small beside the one just written: no commit, no manifest read.
    const again = manifestGets(objects);
    const unchanged = await rewriteIcebergManifests({ ...context, objects: again.objects }, result.loaded);
    expect(unchanged).toMatchObject({ manifestsReplaced: 0, manifestsCreated: 0, manifestsKept: 2 });
    expect(unchanged.loaded.version).toBe(result.loaded.version);
    expect(again.keys).toEqual([]);
  }, 180_000);

  it('merges a manifest with DELETED entries whatever its size, dropping them: a compaction of two days in the large manifest', async () => {
    const { table, objects, context, days, ...made } = await largeThenSmall('merges_deleted', 3);
    const { loaded, seqMax } = made;
    // The first two days have four files each: compacted, the large manifest is rewritten with two DELETED.
    const compacted = await compactIcebergTable(context, loaded, 16 * 1024 * 1024);
    expect(compacted.filesRewritten).toBe(8);
    const before = await listedFiles(objects, table, compacted.loaded);
    expect(before.some((file) => file.deleted_files_count === 2 && file.existing_files_count === days - 2)).toBe(true);

    const result = await rewriteIcebergManifests(context, compacted.loaded);
    const after = await listedFiles(objects, table, result.loaded);
    expect(after.every((file) => file.deleted_files_count === 0)).toBe(true);
    expect(after.reduce((n, file) => n + file.added_files_count + file.existing_files_count, 0)).toBe(days - 2 + 2);
    expect(result.manifestsReplaced).toBe(before.length);
    await expectEveryEventOnce(table, objects, seqMax);
  }, 180_000);
});
