// Goal: a maintenance run (compaction, manifest rewrite, snapshot expiry, metadata cleanup, orphan cleanup) leaves a table that icebird reads with every event exactly once and DuckDB agrees over the current snapshot's files; each step is its own commit with v2 sequence numbers and the watermark kept; a stray old file is removed and a young one kept; the hint-less listing finds a version past 1,000 keys.
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { COMMITTED_AT_SUMMARY_KEY, currentSnapshot, readWatermarkFromMetadata, snapshotMadeAtMs, type IcebergSnapshot, type IcebergTableMetadata } from '@auditlake/format';
import { AuditErrorCode, INTEGRITY_ACTIONS, SELF_SOURCE, type StoredEvent } from '@auditlake/model';
import { icebergRead } from 'icebird';
import { describe, expect, it, onTestFinished } from 'vitest';
import { commitForeignSnapshotOnTop, routeAwsS3To, twoDayEvents, useEmbeddedS3, vanishingOnRead } from '../src/testing/index.js';
import {
  cleanIcebergMetadata,
  commitIcebergBatch,
  compactIcebergTable,
  currentManifests,
  ensureIcebergTable,
  IcebergTierSource,
  expireIcebergSnapshots,
  expireOverdueSnapshots,
  joinKey,
  loadIcebergTable,
  metadataFileKey,
  metadataVersionKey,
  putVersionHint,
  removeIcebergOrphans,
  REPLACED_FILE_GRACE_MS,
  resolveIcebergTable,
  runIcebergMaintenance,
  s3Key,
  SNAPSHOT_READ_GRACE_MS,
  tableWatermark,
  versionHintKey,
  type IcebergTableRef,
  type MaintenanceContext,
  type ObjectStore,
} from '../src/index.js';

const BUCKET = 'lake';
const T0 = Date.UTC(2026, 4, 1);
const DAY_MS = 86_400_000;
const CREDENTIALS = { accessKeyId: 'ALMAINTENANCETEST001', secretAccessKey: 'maintenance-test-secret-0123456789abcd' };
const s3 = useEmbeddedS3('iceberg-maintenance-', BUCKET, CREDENTIALS);

/** Events firstSeq.. over two days (alternating), ingest order = seq order. */
const events = (firstSeq: number, count: number): StoredEvent[] => twoDayEvents(T0, firstSeq, count, { denyEvery: 3 });

const fence = { term: 1, mayCommit: () => true };

/** A table with `commits` sweep commits of `perCommit` events each. */
async function tableWith(name: string, commits: number, perCommit: number): Promise<{ table: IcebergTableRef; objects: ObjectStore; seqMax: number }> {
  const table = resolveIcebergTable(`cat.ops.${name}`, new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
  const objects = s3.connections.bucket('s3', BUCKET);
  let loaded = await ensureIcebergTable(objects, table, T0);
  for (let c = 0; c < commits; c++) {
    await commitIcebergBatch(objects, table, loaded, events(1 + c * perCommit, perCommit), { ...fence, nowMs: Date.now(), writerId: 'test' });
    loaded = (await loadIcebergTable(objects, table))!;
  }
  return { table, objects, seqMax: commits * perCommit };
}

function context(table: IcebergTableRef, objects: ObjectStore, over: Partial<MaintenanceContext> = {}): MaintenanceContext {
  return { objects, table, fence, now: Date.now, metadataLogEntriesMax: 100, ...over };
}

/** icebird resolves s3:// to AWS hosts and cannot sign: point those requests at the local endpoint, signed, for this test. */
function routeS3(): void {
  onTestFinished(routeAwsS3To(s3.server.url, CREDENTIALS));
}

/** Every event id icebird reads, with how often. */
async function icebirdIds(table: IcebergTableRef): Promise<Map<string, number>> {
  routeS3();
  const rows = (await icebergRead({ tableUrl: table.location })) as Array<Record<string, unknown>>;
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(String(row['event_id']), (counts.get(String(row['event_id'])) ?? 0) + 1);
  return counts;
}

/** DuckDB over exactly the current snapshot's live files (downloaded). */
async function duckdbIds(table: IcebergTableRef, objects: ObjectStore): Promise<{ rows: number; distinct: number }> {
  const loaded = (await loadIcebergTable(objects, table))!;
  const files = (await currentManifests(objects, table, loaded.metadata)).flatMap((m) => m.entries.filter((e) => e.status !== 2).map((e) => e.data_file.file_path));
  const local = await mkdtemp(join(s3.dir, 'duck-'));
  const paths: string[] = [];
  for (const [i, path] of files.entries()) {
    const target = join(local, `${i}.parquet`);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, await objects.get(path.slice(`s3://${BUCKET}/`.length)));
    paths.push(target);
  }
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const list = paths.map((p) => `'${p}'`).join(',');
    const result = (await connection.runAndReadAll(`SELECT count(*)::INTEGER AS n, count(DISTINCT event_id)::INTEGER AS d FROM read_parquet([${list}])`)).getRowObjectsJson();
    return { rows: Number(result[0]?.['n']), distinct: Number(result[0]?.['d']) };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

function expectEveryEventOnce(counts: Map<string, number>, seqMax: number): void {
  expect(counts.size).toBe(seqMax);
  for (let seq = 1; seq <= seqMax; seq++) expect(counts.get(`e${seq}`), `e${seq}`).toBe(1);
}

/** A table whose first sweep commit tiered a signed checkpoint record, with `foreign` commits of another engine (no auditlake.* keys) on top. */
async function foreignTopped(name: string, commits: number, perCommit: number, foreign: number): Promise<{ table: IcebergTableRef; objects: ObjectStore; seqMax: number; carrierId: number }> {
  const table = resolveIcebergTable(`cat.ops.${name}`, new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
  const objects = s3.connections.bucket('s3', BUCKET);
  let loaded = await ensureIcebergTable(objects, table, T0);
  for (let c = 0; c < commits; c++) {
    const batch = events(1 + c * perCommit, perCommit);
    if (c === 0) batch[perCommit - 1] = { ...batch[perCommit - 1]!, source: SELF_SOURCE, action: INTEGRITY_ACTIONS.checkpoint, details: CHECKPOINT_TEXT };
    loaded = (await commitIcebergBatch(objects, table, loaded, batch, { ...fence, nowMs: Date.now(), writerId: 'test' })).loaded;
  }
  const carrierId = loaded.metadata['current-snapshot-id'];
  // Another engine's commits without data change, carrying none of our keys.
  for (let f = 0; f < foreign; f++) loaded = await commitForeignSnapshotOnTop(objects, table, loaded, 900_000 + f, fence);
  return { table, objects, seqMax: commits * perCommit, carrierId };
}

const CHECKPOINT_TEXT = '{"seq":20,"signed":"checkpoint-under-test"}';

/** The table's current metadata as stored, parsed as plain JSON (not by the reader under test). */
async function storedMetadata(table: IcebergTableRef, objects: ObjectStore): Promise<IcebergTableMetadata> {
  const hint = Number(new TextDecoder().decode(await objects.get(versionHintKey(table))));
  return JSON.parse(new TextDecoder().decode(await objects.get(metadataVersionKey(table, hint)))) as IcebergTableMetadata;
}

function storedCurrent(metadata: IcebergTableMetadata): IcebergSnapshot {
  return metadata.snapshots.find((snapshot) => snapshot['snapshot-id'] === metadata['current-snapshot-id'])!;
}

describe('Iceberg maintenance', () => {
  it('files a compaction took out stay readable for REPLACED_FILE_GRACE_MS, even at snapshot.retain.last=1: a search that listed them just before the run reads them after it', async () => {
    const { table, objects } = await tableWith('grace', 4, 10);
    const source = new IcebergTierSource(s3.connections, { identifier: table.identifier, location: table.location, connectionId: 's3' });
    const listed = await source.listFiles();
    let clock = Date.now();
    const policy = { snapshotRetainLast: 1, removeOrphanFiles: true, orphanMinAgeMs: 3 * DAY_MS, targetFileSizeBytes: 16 * 1024 * 1024, metadataPreviousVersionsMax: 5 };
    const figures = await runIcebergMaintenance(context(table, objects, { now: () => clock }), policy);
    expect(figures.filesRewritten).toBe(listed.length);
    for (const file of listed) expect(await objects.exists(file.key)).toBe(true);
    // What the search listed is still read, though the table moved on.
    for (const file of listed) {
      const bytes = await source.open(file);
      expect(new TextDecoder().decode(await bytes.slice(bytes.byteLength - 4))).toBe('PAR1');
    }
    // Past the grace, the next run's expiry deletes them.
    clock += REPLACED_FILE_GRACE_MS + 1;
    await runIcebergMaintenance(context(table, objects, { now: () => clock }), policy);
    for (const file of listed) expect(await objects.exists(file.key)).toBe(false);
  });

  for (const { how, name, offsetMs, seen } of [
    { how: 'the same node, its clock unchanged (no seen map)', name: 'grace_same', offsetMs: 0, seen: 'none' },
    { how: 'the same node, its clock stepped back 5 minutes (no seen map)', name: 'grace_back', offsetMs: -5 * 60_000, seen: 'none' },
    { how: 'the same node, its clock stepped forward 20 minutes', name: 'grace_forward', offsetMs: 20 * 60_000, seen: 'same process' },
    { how: 'a failover to a node whose clock is 20 minutes ahead', name: 'grace_failover', offsetMs: 20 * 60_000, seen: 'new process' },
  ] as const) {
    it(`a compaction's replaced files stay readable for the grace whatever the clocks of the next run: ${how}, seconds later, deletes none; 25 minutes on, the run deletes them (review)`, async () => {
      // Goal: the next run within the grace keeps a compaction's replaced files, however its clock differs from the compacting run's (within the skew nodes' clocks may have).
      const { table, objects } = await tableWith(name, 4, 10);
      const source = new IcebergTierSource(s3.connections, { identifier: table.identifier, location: table.location, connectionId: 's3' });
      const listed = await source.listFiles();
      const policy = { snapshotRetainLast: 1, removeOrphanFiles: false, orphanMinAgeMs: 3 * DAY_MS, targetFileSizeBytes: 16 * 1024 * 1024, metadataPreviousVersionsMax: 5 };
      const startMs = Date.now();
      let elapsedMs = 0;
      // What the maintenance scheduler passes: the snapshots its process has seen, on a monotonic clock.
      const seenBy = (snapshotsSeen: Map<number, number>) => ({ snapshotsSeen, monotonicMs: () => elapsedMs });
      const first = seen === 'none' ? {} : seenBy(new Map());
      const next = seen === 'new process' ? seenBy(new Map()) : first;
      expect((await runIcebergMaintenance(context(table, objects, { now: () => startMs, ...first }), policy)).filesRewritten).toBe(listed.length);
      elapsedMs = 5_000;
      await runIcebergMaintenance(context(table, objects, { now: () => startMs + elapsedMs + offsetMs, ...next }), policy);
      // The search that listed them before the compaction reads them all.
      for (const file of listed) {
        const bytes = await source.open(file);
        expect(new TextDecoder().decode(await bytes.slice(bytes.byteLength - 4))).toBe('PAR1');
      }
      elapsedMs = 25 * 60_000;
      await runIcebergMaintenance(context(table, objects, { now: () => startMs + elapsedMs + offsetMs, ...next }), policy);
      for (const file of listed) expect(await objects.exists(file.key)).toBe(false);
    });
  }

  it("a compaction's replaced files stay readable for the grace under the expiry between runs, however often it expires: each time it keeps the compaction and its parent (review)", async () => {
    // Goal: an expiry within the grace keeps the compaction itself too, so the next one still knows its parent names files removed within the grace.
    const { table, objects } = await tableWith('grace_between_runs', 4, 10);
    const source = new IcebergTierSource(s3.connections, { identifier: table.identifier, location: table.location, connectionId: 's3' });
    const listed = await source.listFiles();
    let clock = Date.now();
    const steps = context(table, objects, { now: () => clock });
    const policy = { snapshotRetainLast: 1, removeOrphanFiles: false, orphanMinAgeMs: 3 * DAY_MS, targetFileSizeBytes: 16 * 1024 * 1024, metadataPreviousVersionsMax: 5 };
    await runIcebergMaintenance(steps, policy);
    // Sweeps commit, two minutes apart, and each time the expiry between runs is due.
    let loaded = (await loadIcebergTable(objects, table))!;
    for (let c = 0; c < 3; c++) {
      clock += 2 * 60_000;
      loaded = (await commitIcebergBatch(objects, table, loaded, events(41 + c * 2, 2), { ...fence, nowMs: clock, writerId: 'auditlake:test' })).loaded;
      expect((await expireOverdueSnapshots(steps, loaded, 1))?.snapshotsExpired).toBeGreaterThan(0);
      loaded = (await loadIcebergTable(objects, table))!;
      for (const file of listed) expect(await objects.exists(file.key)).toBe(true);
    }
    clock += REPLACED_FILE_GRACE_MS;
    loaded = (await commitIcebergBatch(objects, table, loaded, events(47, 2), { ...fence, nowMs: clock, writerId: 'auditlake:test' })).loaded;
    await expireOverdueSnapshots(steps, loaded, 1);
    for (const file of listed) expect(await objects.exists(file.key)).toBe(false);
    expectEveryEventOnce(await icebirdIds(table), 48);
  });

  it('compacts, rewrites manifests, expires snapshots, cleans metadata and orphans: every event once, for icebird and DuckDB', async () => {
    const { table, objects, seqMax } = await tableWith('full', 30, 20);
    const before = (await loadIcebergTable(objects, table))!;
    expect(before.metadata.snapshots).toHaveLength(30);
    // A stray file a crashed sweep left (named as the sweep names its files): old enough only in the second run.
    const stray = joinKey(table.s3.prefix, 'data/event_time_day=2026-05-01/0000000000000999-t1-0badcafe.parquet');
    await objects.put(stray, 'not parquet');

    const policy = { snapshotRetainLast: 3, removeOrphanFiles: true, orphanMinAgeMs: 3 * DAY_MS, targetFileSizeBytes: 16 * 1024 * 1024, metadataPreviousVersionsMax: 5 };
    const figures = await runIcebergMaintenance(context(table, objects), policy);
    expect(figures.filesRewritten).toBe(60); // 30 commits × 2 days
    expect(figures.filesAdded).toBe(2); // one per day
    expect(figures.snapshotsExpired).toBeGreaterThanOrEqual(29);
    expect(figures.filesDeleted).toBeGreaterThan(0);
    expect(figures.orphansDeleted).toBe(0);
    expect(figures.bytesAfter).toBeLessThan(figures.bytesBefore);
    expect(await objects.exists(stray)).toBe(true); // young: kept

    const after = (await loadIcebergTable(objects, table))!;
    expect(after.metadata.snapshots.length).toBeLessThanOrEqual(3);
    const current = currentSnapshot(after.metadata)!;
    expect(current.summary['operation']).toBe('replace');
    expect(readWatermarkFromMetadata(after.metadata)?.seq).toBe(BigInt(seqMax));
    expect(after.metadata['last-sequence-number']).toBe(32); // 30 appends + compaction + manifest rewrite
    expect(after.metadata['metadata-log'].length).toBeLessThanOrEqual(5);
    expect((await currentManifests(objects, table, after.metadata)).length).toBe(1);
    expect(current.summary['total-records']).toBe(String(seqMax));
    // Old metadata files beyond the log are gone; the first versions no longer exist.
    expect(await objects.exists(metadataVersionKey(table, 1))).toBe(false);

    expectEveryEventOnce(await icebirdIds(table), seqMax);
    expect(await duckdbIds(table, objects)).toEqual({ rows: seqMax, distinct: seqMax });

    // Four days later the stray is an orphan; everything the table references stays.
    const orphans = await removeIcebergOrphans(context(table, objects, { now: () => Date.now() + 4 * DAY_MS }), after, policy.orphanMinAgeMs);
    expect(orphans).toBeGreaterThanOrEqual(1);
    expect(await objects.exists(stray)).toBe(false);
    expectEveryEventOnce(await icebirdIds(table), seqMax);

    // A second run finds little to do and keeps the table whole.
    const again = await runIcebergMaintenance(context(table, objects), policy);
    expect(again.filesRewritten).toBe(0);
    expectEveryEventOnce(await icebirdIds(table), seqMax);
  }, 180_000); // Sixty commits, a full run and two independent reads: slow on a loaded machine.

  it('a sweep commit that loses its version to a compaction re-applies itself on the new version: every event once, for icebird and DuckDB, and the watermark its own', async () => {
    const { table, objects, seqMax } = await tableWith('sweep_races_compaction', 6, 20);
    const loaded = (await loadIcebergTable(objects, table))!;
    let filesRewritten = 0;
    // The compaction commits after the sweep's files are written and before its commit: the sweep's version is taken.
    const result = await commitIcebergBatch(objects, table, loaded, events(seqMax + 1, 30), {
      ...fence,
      nowMs: Date.now(),
      writerId: 'test',
      afterWrite: async () => {
        filesRewritten = (await compactIcebergTable(context(table, objects), loaded, 16 * 1024 * 1024)).filesRewritten;
      },
    });
    expect(filesRewritten).toBe(12);
    expect(result.version).toBe(loaded.version + 2);
    const after = (await loadIcebergTable(objects, table))!;
    expect(tableWatermark(after)?.seq).toBe(seqMax + 30);
    // The compaction holds: its two files and the sweep's two, none of the twelve it replaced.
    const live = (await currentManifests(objects, table, after.metadata)).flatMap((m) => m.entries.filter((e) => e.status !== 2));
    expect(live.length).toBe(4);
    expectEveryEventOnce(await icebirdIds(table), seqMax + 30);
    expect(await duckdbIds(table, objects)).toEqual({ rows: seqMax + 30, distinct: seqMax + 30 });
  }, 120_000);

  /** The objects under the table written since `before` (listed then) that its current snapshot does not name: none after a compaction that did not swap. */
  async function unreferencedSince(table: IcebergTableRef, objects: ObjectStore, before: ReadonlySet<string>): Promise<{ added: number; unreferenced: string[] }> {
    const root = metadataFileKey(table, '').replace(/metadata\/$/, '');
    const after = (await loadIcebergTable(objects, table))!;
    const manifests = await currentManifests(objects, table, after.metadata);
    const referenced = new Set([
      s3Key(table, currentSnapshot(after.metadata)!['manifest-list']),
      ...manifests.map((m) => s3Key(table, m.file.manifest_path)),
      ...manifests.flatMap((m) => m.entries.filter((e) => e.status !== 2).map((e) => s3Key(table, e.data_file.file_path))),
    ]);
    const added = (await objects.list(root)).filter((key) => !before.has(key) && !key.endsWith('.metadata.json') && !key.endsWith('version-hint.text'));
    return { added: added.length, unreferenced: added.filter((key) => !referenced.has(key)) };
  }

  const tableObjects = async (table: IcebergTableRef, objects: ObjectStore) => new Set(await objects.list(metadataFileKey(table, '').replace(/metadata\/$/, '')));

  it('a compaction whose swap is refused (another writer replaced its files first) deletes what it wrote at once, not after the orphan age', async () => {
    const { table, objects, seqMax } = await tableWith('refused_swap', 6, 20);
    const loaded = (await loadIcebergTable(objects, table))!;
    const before = await tableObjects(table, objects);
    // Another compaction of the same files commits after this one wrote its files, before its swap.
    let winner = 0;
    const onStep = async (step: string) => {
      if (step === 'compaction-written' && winner === 0) winner = (await compactIcebergTable(context(table, objects), loaded, 16 * 1024 * 1024)).filesRewritten;
    };
    const result = await compactIcebergTable(context(table, objects, { onStep }), loaded, 16 * 1024 * 1024);
    expect({ winner, loser: result.filesRewritten }).toEqual({ winner: 12, loser: 0 });
    // Every object written since is the winner's and referenced by the table: none of the
    // loser's data files or manifests is left (they may hold values an erasure removed).
    const { added, unreferenced } = await unreferencedSince(table, objects, before);
    expect(added).toBeGreaterThan(0);
    expect(unreferenced).toEqual([]);
    expectEveryEventOnce(await icebirdIds(table), seqMax);
  }, 120_000);

  it('a compaction whose leader is deposed before its swap deletes what it wrote, and fails saying so', async () => {
    const { table, objects, seqMax } = await tableWith('deposed_swap', 6, 20);
    const loaded = (await loadIcebergTable(objects, table))!;
    const before = await tableObjects(table, objects);
    let leading = true;
    const onStep = (step: string) => void (step === 'compaction-written' && (leading = false));
    const run = compactIcebergTable(context(table, objects, { onStep, fence: { term: 1, mayCommit: () => leading } }), loaded, 16 * 1024 * 1024);
    await expect(run).rejects.toMatchObject({ code: AuditErrorCode.NOT_LEADER });
    expect(await unreferencedSince(table, objects, before)).toEqual({ added: 0, unreferenced: [] });
    expectEveryEventOnce(await icebirdIds(table), seqMax);
  }, 120_000);

  it('a file replaced and deleted while the compaction reads (an erasure\'s overwrite) leaves the group to the next pass; one lost outright fails the run naming it', async () => {
    const { table, objects, seqMax } = await tableWith('vanished_input', 6, 20);
    const loaded = (await loadIcebergTable(objects, table))!;
    const liveFiles = async (t: IcebergTableRef) => (await currentManifests(objects, t, (await loadIcebergTable(objects, t))!.metadata)).flatMap((m) => m.entries.filter((e) => e.status !== 2).map((e) => e.data_file));
    const [first] = await liveFiles(table);
    // Another writer swaps the table's files and deletes the first at once, as this compaction fetches it.
    const swapped = vanishingOnRead(objects, s3Key(table, first!.file_path), () => compactIcebergTable(context(table, objects), loaded, 16 * 1024 * 1024));
    const result = await compactIcebergTable(context(table, swapped), loaded, 16 * 1024 * 1024);
    expect(result.filesRewritten).toBe(0);
    expect(await liveFiles(table)).toHaveLength(2);
    expectEveryEventOnce(await icebirdIds(table), seqMax);

    // A live file that is simply gone is lost data: its day is left as it is, the other day is
    // compacted, and the run does every other step, then fails naming the file.
    const lost = await tableWith('lost_input', 6, 20);
    const [gone] = await liveFiles(lost.table);
    await objects.delete(s3Key(lost.table, gone!.file_path));
    const pass = await compactIcebergTable(context(lost.table, objects), (await loadIcebergTable(objects, lost.table))!, 16 * 1024 * 1024);
    expect({ filesRewritten: pass.filesRewritten, lostFiles: pass.lostFiles }).toEqual({ filesRewritten: 6, lostFiles: [gone!.file_path] });
    const policy = { snapshotRetainLast: 1, removeOrphanFiles: true, orphanMinAgeMs: 3 * DAY_MS, targetFileSizeBytes: 16 * 1024 * 1024, metadataPreviousVersionsMax: 5 };
    const snapshotsBefore = (await loadIcebergTable(objects, lost.table))!.metadata.snapshots?.length ?? 0;
    await expect(runIcebergMaintenance(context(lost.table, objects), policy)).rejects.toThrow(
      `a live data file of cat.ops.lost_input does not exist: ${gone!.file_path}; its rows are missing from the tier (the rest of this run was done)`,
    );
    // The rest was done: older snapshots expired.
    expect((await loadIcebergTable(objects, lost.table))!.metadata.snapshots?.length ?? 0).toBeLessThan(snapshotsBefore);
  }, 120_000);

  it('a sweep commit that loses to another sweep of the same events is refused, not re-applied: nothing tiered twice', async () => {
    const { table, objects, seqMax } = await tableWith('sweep_races_sweep', 2, 20);
    const loaded = (await loadIcebergTable(objects, table))!;
    const late = commitIcebergBatch(objects, table, loaded, events(seqMax + 1, 30), {
      ...fence,
      nowMs: Date.now(),
      writerId: 'deposed',
      afterWrite: async () => {
        await commitIcebergBatch(objects, table, loaded, events(seqMax + 1, 30), { ...fence, term: 2, nowMs: Date.now(), writerId: 'successor' });
      },
    });
    await expect(late).rejects.toMatchObject({ code: AuditErrorCode.OBJECT_EXISTS });
    const after = (await loadIcebergTable(objects, table))!;
    expect(after.version).toBe(loaded.version + 1);
    expectEveryEventOnce(await icebirdIds(table), seqMax + 30);
  }, 120_000);

  it('on a table another engine committed on top of, every maintenance snapshot carries the watermark and the checkpoint of the newest ancestor that has them: nothing is lost when that ancestor expires', async () => {
    const { table, objects, seqMax } = await foreignTopped('foreign_top_run', 6, 20, 2);
    const before = (await loadIcebergTable(objects, table))!;
    const mark = tableWatermark(before);
    expect(mark?.seq).toBe(seqMax);
    const policy = { snapshotRetainLast: 1, removeOrphanFiles: false, orphanMinAgeMs: 3 * DAY_MS, targetFileSizeBytes: 16 * 1024 * 1024, metadataPreviousVersionsMax: 100 };
    const figures = await runIcebergMaintenance(context(table, objects), policy);
    expect(figures.filesRewritten).toBe(12);
    expect(figures.snapshotsExpired).toBeGreaterThanOrEqual(6);

    // Read as stored: every snapshot the run made holds our keys itself. Besides them only the
    // compaction's parent is left, kept for REPLACED_FILE_GRACE_MS (a search may still read the
    // files it names).
    const stored = await storedMetadata(table, objects);
    const current = storedCurrent(stored);
    expect(current.summary['operation']).toBe('replace');
    expect(stored.snapshots.every((snapshot) => snapshot.summary['operation'] === 'replace')).toBe(true);
    const made = stored.snapshots.filter((snapshot) => snapshot.summary['spark.app.id'] === undefined);
    expect(stored.snapshots.filter((snapshot) => !made.includes(snapshot)).map((snapshot) => snapshot['snapshot-id'])).toEqual([900_001]);
    for (const snapshot of made) {
      expect(snapshot.summary).toMatchObject({
        'auditlake.tiering.watermark': String(seqMax),
        'auditlake.tiering.watermark-ingest-ts': String(mark!.ingestTs),
        'auditlake.tiering.writer-id': 'test',
        'auditlake.tiering.leader-term': '1',
        'auditlake.integrity.checkpoint': CHECKPOINT_TEXT,
      });
    }
    expect(tableWatermark(await loadIcebergTable(objects, table))).toEqual(mark);
    expectEveryEventOnce(await icebirdIds(table), seqMax);

    // The next sweep goes on from the watermark: every event once.
    const after = (await loadIcebergTable(objects, table))!;
    await commitIcebergBatch(objects, table, after, events(seqMax + 1, 20), { ...fence, nowMs: Date.now(), writerId: 'test', afterSeq: Number(tableWatermark(after)!.seq) });
    expectEveryEventOnce(await icebirdIds(table), seqMax + 20);
  }, 120_000);

  it('snapshot expiry keeps the newest snapshot carrying the watermark, and every snapshot between it and the current one, when the current one has none', async () => {
    const { table, objects, seqMax, carrierId } = await foreignTopped('foreign_top_expiry', 4, 20, 2);
    const loaded = (await loadIcebergTable(objects, table))!;
    const expiry = await expireIcebergSnapshots(context(table, objects), loaded, 1);
    expect(expiry.snapshotsExpired).toBe(3); // the three sweeps before the carrier
    const stored = await storedMetadata(table, objects);
    expect(stored.snapshots.map((snapshot) => snapshot['snapshot-id']).sort()).toEqual([carrierId, 900_000, 900_001].sort());
    expect(storedCurrent(stored)['snapshot-id']).toBe(900_001);
    expect(tableWatermark(await loadIcebergTable(objects, table))?.seq).toBe(seqMax);
    // The sweep's own expiry between runs keeps them too.
    expect((await expireOverdueSnapshots(context(table, objects), expiry.loaded, 1))?.snapshotsExpired ?? 0).toBe(0);
    expect((await storedMetadata(table, objects)).snapshots.map((snapshot) => snapshot['snapshot-id']).sort()).toEqual([carrierId, 900_000, 900_001].sort());
    expectEveryEventOnce(await icebirdIds(table), seqMax);
  }, 120_000);

  it('a sweep commit on top of another engine\'s commit carries the newest signed checkpoint of the ancestors', async () => {
    const { table, objects, seqMax } = await foreignTopped('foreign_top_sweep', 2, 20, 1);
    const loaded = (await loadIcebergTable(objects, table))!;
    await commitIcebergBatch(objects, table, loaded, events(seqMax + 1, 20), { ...fence, nowMs: Date.now(), writerId: 'test', afterSeq: seqMax });
    expect(storedCurrent(await storedMetadata(table, objects)).summary).toMatchObject({
      'auditlake.tiering.watermark': String(seqMax + 20),
      'auditlake.integrity.checkpoint': CHECKPOINT_TEXT,
    });
    expectEveryEventOnce(await icebirdIds(table), seqMax + 20);
  }, 120_000);

  it('finds the newest version by listing past 1,000 metadata files when the hint is missing', async () => {
    const { table, objects } = await tableWith('many', 1, 5);
    const real = await objects.get(metadataVersionKey(table, 2));
    // Versions 3..1004 as placeholders, 1005 the real metadata; no hint.
    for (let start = 3; start <= 1004; start += 50) {
      await Promise.all(Array.from({ length: Math.min(50, 1005 - start) }, (_, i) => objects.put(metadataVersionKey(table, start + i), '{}')));
    }
    await objects.put(metadataVersionKey(table, 1005), real);
    await objects.delete(versionHintKey(table));
    expect((await objects.list(metadataFileKey(table, 'v'))).length).toBe(1005);
    const loaded = await loadIcebergTable(objects, table);
    expect(loaded?.version).toBe(1005);
  });

  it('reads past a hint naming a version metadata cleanup deleted (a deposed leader\'s late hint write): every reader and writer finds the newest version, and the next commit moves the hint on', async () => {
    const { table, objects, seqMax } = await tableWith('stale_hint', 6, 5);
    const policy = { snapshotRetainLast: 1, removeOrphanFiles: false, orphanMinAgeMs: 3 * DAY_MS, targetFileSizeBytes: 16 * 1024 * 1024, metadataPreviousVersionsMax: 1 };
    await runIcebergMaintenance(context(table, objects), policy);
    const newest = (await loadIcebergTable(objects, table))!.version;
    expect(await objects.exists(metadataVersionKey(table, 2))).toBe(false);
    // The deposed leader's hint for its version 2, in flight all along, lands last.
    await putVersionHint(objects, table, 2);
    const loaded = await loadIcebergTable(objects, table);
    expect(loaded?.version).toBe(newest);
    const source = new IcebergTierSource(s3.connections, { identifier: table.identifier, location: table.location, connectionId: 's3' });
    expect((await source.listFiles()).reduce((rows, file) => rows + file.rows, 0)).toBe(seqMax);
    // Maintenance loads it too (it threw, as the sweep's first load did).
    await runIcebergMaintenance(context(table, objects), policy);
    await commitIcebergBatch(objects, table, (await loadIcebergTable(objects, table))!, events(seqMax + 1, 5), { ...fence, nowMs: Date.now(), writerId: 'test' });
    const committed = (await loadIcebergTable(objects, table))!.version;
    expect(Number(new TextDecoder().decode(await objects.get(versionHintKey(table))))).toBe(committed);
    // Another engine, which trusts the hint, reads every event once.
    const ids = await icebirdIds(table);
    expect(ids.size).toBe(seqMax + 5);
    expect([...ids.values()].every((count) => count === 1)).toBe(true);
  });

  it('deletes old metadata versions oldest first, so a cleanup stopped part-way leaves no gap a stale hint could stop at', async () => {
    const { table, objects, seqMax } = await tableWith('cleanup_gap', 16, 5);
    const newest = (await loadIcebergTable(objects, table))!;
    expect(newest.version).toBe(17);
    // The cleanup's process dies after its sixth delete.
    let deletes = 0;
    const del = objects.delete.bind(objects);
    objects.delete = async (key: string) => {
      if (++deletes > 6) throw new Error('killed');
      return del(key);
    };
    try {
      await expect(cleanIcebergMetadata(context(table, objects, { metadataLogEntriesMax: 2 }), newest)).rejects.toThrow('killed');
    } finally {
      objects.delete = del;
    }
    const left = (await objects.list(metadataFileKey(table, 'v'))).flatMap((key) => /\/v(\d+)\.metadata\.json$/.exec(key)?.[1] ?? []).map(Number).sort((a, b) => a - b);
    expect(left[0]).toBeGreaterThan(1);
    expect(left).toEqual(Array.from({ length: left.length }, (_, i) => (left[0] as number) + i));
    // A deposed leader's hint for version 9, still there, lands: the table loads at its newest.
    await putVersionHint(objects, table, 9);
    const loaded = (await loadIcebergTable(objects, table))!;
    expect(loaded.version).toBe(left.at(-1));
    expect(tableWatermark(loaded)?.seq).toBe(seqMax);
  });

  it('keeps every metadata.json within 64 KiB over 150 sweep commits with maintenance after 100, the sweep expiring overdue snapshots between runs', async () => {
    const table = resolveIcebergTable('cat.ops.bounded_metadata_events', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/warehouse`, connectionId: 's3' }]]));
    const objects = s3.connections.bucket('s3', BUCKET);
    // The defaults: snapshot.retain.last 24, metadata.previous.versions.max 100.
    const policy = { snapshotRetainLast: 24, removeOrphanFiles: true, orphanMinAgeMs: 3 * DAY_MS, targetFileSizeBytes: 16 * 1024 * 1024, metadataPreviousVersionsMax: 100 };
    // A sweep every 10 s (the default interval): the expiry between runs keeps the last minute's.
    let clock = Date.now();
    const steps = context(table, objects, { metadataLogEntriesMax: policy.metadataPreviousVersionsMax, now: () => clock });
    const perCommit = 4;
    const commits = 150;
    let loaded = await ensureIcebergTable(objects, table, T0);
    let largestBytes = 0;
    let largestSnapshots = 0;
    let expiries = 0;
    for (let c = 0; c < commits; c++) {
      clock += 10_000;
      // As the sweep commits (the real writer id, the log bounded by the setting), then expires what is overdue.
      const result = await commitIcebergBatch(objects, table, loaded, events(1 + c * perCommit, perCommit), {
        ...fence,
        nowMs: clock,
        writerId: `auditlake:${table.identifier}`,
        metadataLogEntriesMax: policy.metadataPreviousVersionsMax,
      });
      largestBytes = Math.max(largestBytes, (await objects.head(metadataVersionKey(table, result.version)))!.bytes);
      largestSnapshots = Math.max(largestSnapshots, result.loaded.metadata.snapshots.length);
      if (await expireOverdueSnapshots(steps, result.loaded, policy.snapshotRetainLast)) expiries++;
      if (c + 1 === 100) await runIcebergMaintenance(steps, policy);
      loaded = (await loadIcebergTable(objects, table))!;
      largestBytes = Math.max(largestBytes, (await objects.head(metadataVersionKey(table, loaded.version)))!.bytes);
    }
    expect(largestBytes).toBeLessThanOrEqual(64 * 1024);
    expect(largestSnapshots).toBeLessThanOrEqual(2 * policy.snapshotRetainLast);
    expect(expiries).toBeGreaterThanOrEqual(4);
    expect(loaded.metadata['metadata-log'].length).toBeLessThanOrEqual(policy.metadataPreviousVersionsMax);
    expect(readWatermarkFromMetadata(loaded.metadata)?.seq).toBe(BigInt(commits * perCommit));
    // Expired between runs, yet every event is in the table exactly once.
    expectEveryEventOnce(await icebirdIds(table), commits * perCommit);
  }, 240_000); // 150 commits, a run and an independent read: slow on a loaded machine.

  it('the expiry between runs leaves a snapshot younger than SNAPSHOT_READ_GRACE_MS: a reader that loaded the metadata still reads its manifest list', async () => {
    const table = resolveIcebergTable('cat.ops.read_grace_events', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/warehouse`, connectionId: 's3' }]]));
    const objects = s3.connections.bucket('s3', BUCKET);
    let clock = Date.now();
    const steps = context(table, objects, { now: () => clock });
    let loaded = await ensureIcebergTable(objects, table, clock);
    // A reader loads the table after the first commit, to plan from its current snapshot.
    loaded = (await commitIcebergBatch(objects, table, loaded, events(1, 4), { ...fence, nowMs: clock, writerId: 'auditlake:test' })).loaded;
    const planned = currentSnapshot(loaded.metadata)!;
    const manifestList = s3Key(table, planned['manifest-list']);
    expect(await objects.exists(manifestList)).toBe(true);
    // Back-to-back sweeps commit on top; at snapshot.retain.last 1 the expiry is due at once.
    for (let c = 1; c < 4; c++) loaded = (await commitIcebergBatch(objects, table, loaded, events(1 + c * 4, 4), { ...fence, nowMs: clock + c, writerId: 'auditlake:test' })).loaded;
    expect(await expireOverdueSnapshots(steps, loaded, 1)).toBeUndefined();
    expect(await objects.exists(manifestList)).toBe(true);
    // A minute on, the reader has long planned: expired, its manifest list deleted.
    clock += SNAPSHOT_READ_GRACE_MS + 10;
    const expired = await expireOverdueSnapshots(steps, (await loadIcebergTable(objects, table))!, 1);
    expect(expired?.snapshotsExpired).toBe(3);
    expect(await objects.exists(manifestList)).toBe(false);
    expectEveryEventOnce(await icebirdIds(table), 16);
  });

  it('after one commit stamped by a clock a year ahead, the expiry between runs still bounds the snapshots, by when each was made, a young one kept for its reader', async () => {
    const table = resolveIcebergTable('cat.ops.clock_ahead_events', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/warehouse`, connectionId: 's3' }]]));
    const objects = s3.connections.bucket('s3', BUCKET);
    const YEAR_MS = 365 * 86_400_000;
    let clock = Date.now();
    const steps = context(table, objects, { now: () => clock });
    let loaded = await ensureIcebergTable(objects, table, clock);
    const retainLast = 24;
    // The first commit's clock is a year ahead; every later one is right, 10 s apart. Every
    // later snapshot is stamped after the first (the log stays in order): a year ahead too.
    let largestSnapshots = 0;
    let largestBytes = 0;
    for (let c = 0; c < 200; c++) {
      const nowMs = c === 0 ? clock + YEAR_MS : clock;
      loaded = (await commitIcebergBatch(objects, table, loaded, events(1 + c * 2, 2), { ...fence, nowMs, writerId: 'auditlake:test' })).loaded;
      const expired = await expireOverdueSnapshots(steps, loaded, retainLast);
      if (expired) loaded = expired.loaded;
      largestSnapshots = Math.max(largestSnapshots, loaded.metadata.snapshots.length);
      largestBytes = Math.max(largestBytes, (await objects.head(metadataVersionKey(table, loaded.version)))!.bytes);
      clock += 10_000;
    }
    // Before, every snapshot counted as younger than a minute and none expired: 200 snapshots, 167 KB.
    expect(largestSnapshots).toBeLessThanOrEqual(2 * retainLast);
    expect(largestBytes).toBeLessThanOrEqual(64 * 1024);
    const current = currentSnapshot(loaded.metadata)!;
    expect(current['timestamp-ms']).toBeGreaterThan(clock);
    // The stamp is a year ahead; the time it was made is recorded beside it, and is what ages count from.
    expect(snapshotMadeAtMs(current)).toBe(clock - 10_000);
    expect(current.summary[COMMITTED_AT_SUMMARY_KEY]).toBe(String(clock - 10_000));
    // A reader's grace still holds by that time: back-to-back commits within a minute are all kept...
    const planned = currentSnapshot(loaded.metadata)!;
    for (let c = 0; c < 2 * retainLast; c++) loaded = (await commitIcebergBatch(objects, table, loaded, events(401 + c * 2, 2), { ...fence, nowMs: clock + c, writerId: 'auditlake:test' })).loaded;
    expect(await expireOverdueSnapshots(steps, loaded, retainLast)).toBeDefined();
    loaded = (await loadIcebergTable(objects, table))!;
    expect(loaded.metadata.snapshots.map((snapshot) => snapshot['snapshot-id'])).toContain(planned['snapshot-id']);
    expect(await objects.exists(s3Key(table, planned['manifest-list']))).toBe(true);
    // ...and a minute on they may go.
    clock += SNAPSHOT_READ_GRACE_MS + 10;
    await expireOverdueSnapshots(steps, loaded, retainLast);
    expect((await loadIcebergTable(objects, table))!.metadata.snapshots.map((snapshot) => snapshot['snapshot-id'])).not.toContain(planned['snapshot-id']);
    expectEveryEventOnce(await icebirdIds(table), 2 * 200 + 4 * retainLast);
  }, 240_000);
});
