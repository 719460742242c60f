// Goal: snapshot expiry finds what to delete incrementally (manifest lists, then only the manifests
// it deletes that hold DELETED entries) and deletes exactly what the full reachability
// computation would, over random seeded sequences of sweep commits, compactions, manifest
// rewrites, erasures, tags and commits of another engine; icebird reads every retained snapshot
// completely after each expiry. And an expiry opens the manifests it deletes with DELETED
// entries, not every manifest of the table.
import { seededRandom } from '@auditlake/model';
import { retainedSnapshotIds, type IcebergTableMetadata, type TieredEvent } from '@auditlake/format';
import { icebergRead } from 'icebird';
import { describe, expect, it, onTestFinished } from 'vitest';
import { commitForeignSnapshotOnTop, routeAwsS3To, twoDayEvents, useEmbeddedS3 } from '../src/testing/index.js';
import {
  commitIcebergBatch,
  commitMetadataVersion,
  compactIcebergTable,
  ensureIcebergTable,
  expireIcebergSnapshots,
  ManifestCache,
  purgeReplacedFiles,
  REPLACED_FILE_GRACE_MS,
  resolveIcebergTable,
  rewriteIcebergManifests,
  rewriteIcebergRows,
  SNAPSHOT_READ_GRACE_MS,
  type IcebergTableRef,
  type LoadedTable,
  type MaintenanceContext,
  type ObjectStore,
} from '../src/index.js';
import { ManifestListCache, reachabilityPlan } from '../src/iceberg-expired-files.js';
import { deletableKeys } from '../src/iceberg-table-ref.js';

const BUCKET = 'lake';
const T0 = Date.UTC(2026, 4, 1);
const CREDENTIALS = { accessKeyId: 'ALEXPIRYINCRTEST0001', secretAccessKey: 'expiry-incremental-secret-0123456789ab' };
const s3 = useEmbeddedS3('iceberg-expiry-incremental-', BUCKET, CREDENTIALS);
const fence = { term: 1, mayCommit: () => true };
const MARKER = '[erased by auditlake]';

function tableRef(name: string): IcebergTableRef {
  return resolveIcebergTable(`cat.ops.${name}`, new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
}

/** Every key of the table's objects. */
async function tableKeys(objects: ObjectStore, table: IcebergTableRef): Promise<Set<string>> {
  return new Set(await objects.list(`${table.s3.prefix}/`));
}

/** icebird reads snapshot `snapshotId` of `metadata` (as the current one): every event of seqs 1..seqMax exactly once. */
async function expectSnapshotReadsEvents(table: IcebergTableRef, metadata: IcebergTableMetadata, snapshotId: number, seqMax: number, label: string): Promise<void> {
  const rows = (await icebergRead({ tableUrl: table.location, metadata: { ...metadata, 'current-snapshot-id': snapshotId } as never })) as Array<Record<string, unknown>>;
  const ids = rows.map((row) => String(row['event_id']));
  expect(ids.length, `${label}: rows of snapshot ${snapshotId}`).toBe(seqMax);
  expect(new Set(ids).size, `${label}: distinct events of snapshot ${snapshotId}`).toBe(seqMax);
}

/** The erasure of seq `seq`'s query, as the sweep's erasure rewrites a row. */
function eraseQueryOf(seq: number): { seqs: number[]; rewrite: (row: TieredEvent) => TieredEvent | undefined; properties: Record<string, string> } {
  return { seqs: [seq], rewrite: (row) => (row.seq === seq && row.query !== MARKER ? { ...row, query: MARKER } : undefined), properties: {} };
}

type Step = 'sweep' | 'compaction' | 'manifest-rewrite' | 'erasure' | 'tag' | 'foreign' | 'expiry';
const STEPS: Array<[Step, number]> = [
  ['sweep', 40],
  ['compaction', 12],
  ['manifest-rewrite', 8],
  ['erasure', 4],
  ['tag', 2],
  ['foreign', 2],
  ['expiry', 32],
];

function pickStep(random: () => number): Step {
  let at = random() * STEPS.reduce((sum, [, weight]) => sum + weight, 0);
  for (const [step, weight] of STEPS) {
    at -= weight;
    if (at < 0) return step;
  }
  return 'expiry';
}

/**
 * Runs `steps` random steps on a new table, checking each expiry against the reachability
 * computation and every retained snapshot with icebird; returns how the expiries found their files.
 */
async function randomHistory(seed: number, steps: number): Promise<{ incremental: number; reachability: number; deleted: number }> {
  const random = seededRandom(seed);
  const table = tableRef(`prop${seed}`);
  const objects = s3.connections.bucket('s3', BUCKET);
  // A manual clock, moved by every step: the grace periods (a compaction's parent kept for
  // REPLACED_FILE_GRACE_MS, young snapshots for SNAPSHOT_READ_GRACE_MS) come and go.
  let clock = T0 + 30 * 86_400_000;
  const context: MaintenanceContext = { objects, table, fence, now: () => clock, metadataLogEntriesMax: 100 };
  let loaded: LoadedTable = await ensureIcebergTable(objects, table, clock);
  let seqMax = 0;
  let tags = 0;
  let foreignId = 1_000_000 + seed * 1000;
  // Events each snapshot holds (its watermark): every snapshot holds every event tiered before it.
  const eventsOf = new Map<number, number>();
  const tally = { incremental: 0, reachability: 0, deleted: 0 };
  const sweep = async (): Promise<void> => {
    const count = 1 + Math.floor(random() * 4);
    const committed = await commitIcebergBatch(objects, table, loaded, twoDayEvents(T0, seqMax + 1, count), { ...fence, nowMs: clock, writerId: 'test' });
    seqMax += count;
    loaded = committed.loaded;
  };
  await sweep();
  eventsOf.set(loaded.metadata['current-snapshot-id'], seqMax);
  for (let step = 0; step < steps; step++) {
    clock += [1_000, 20_000, 90_000, 300_000, 20 * 60_000][Math.floor(random() * 5)] as number;
    const kind = pickStep(random);
    const label = `seed ${seed}, step ${step} (${kind})`;
    // EXPIRY_TRACE=1 prints each step with the table's snapshots (id<parent:operation).
    if (process.env['EXPIRY_TRACE']) console.log(label, loaded.metadata.snapshots.map((s) => `${s['snapshot-id']}<${s['parent-snapshot-id'] ?? '-'}:${s.summary['operation']}`).join(' '));
    if (kind === 'sweep') await sweep();
    else if (kind === 'compaction') loaded = (await compactIcebergTable(context, loaded, 16 * 1024 * 1024)).loaded;
    else if (kind === 'manifest-rewrite') loaded = (await rewriteIcebergManifests(context, loaded)).loaded;
    else if (kind === 'erasure') {
      const rewritten = await rewriteIcebergRows(context, loaded, eraseQueryOf(1 + Math.floor(random() * seqMax)));
      loaded = (await purgeReplacedFiles(context, rewritten.loaded)).loaded;
      // The purge's expiry (every snapshot but the current one, no grace) reads nothing expired.
      for (const snapshot of loaded.metadata.snapshots) await expectSnapshotReadsEvents(table, loaded.metadata, snapshot['snapshot-id'], eventsOf.get(snapshot['snapshot-id']) ?? seqMax, label);
    } else if (kind === 'tag') {
      // Another engine tags a snapshot of the table (an old one, as an audit would).
      const snapshots = loaded.metadata.snapshots;
      const target = snapshots[Math.floor(random() * snapshots.length)]!['snapshot-id'];
      const refs = { ...loaded.metadata.refs, [`tag${tags++}`]: { 'snapshot-id': target, type: 'tag' as const } };
      loaded = await commitMetadataVersion(objects, table, loaded, { ...loaded.metadata, refs, 'last-updated-ms': Math.max(clock, loaded.metadata['last-updated-ms'] + 1) }, fence);
    } else if (kind === 'foreign') loaded = await commitForeignSnapshotOnTop(objects, table, loaded, foreignId++, fence);
    else {
      const retainLast = 1 + Math.floor(random() * 4);
      const readGraceMs = random() < 0.5 ? 0 : SNAPSHOT_READ_GRACE_MS;
      // What the full computation deletes, on the same table and the same kept snapshots.
      const kept = retainedSnapshotIds(loaded.metadata, retainLast, clock - REPLACED_FILE_GRACE_MS, readGraceMs > 0 ? clock - readGraceMs : undefined, clock);
      const full = await reachabilityPlan(objects, table, loaded.metadata, kept, new ManifestCache());
      const before = await tableKeys(objects, table);
      const expiry = await expireIcebergSnapshots(context, loaded, retainLast, REPLACED_FILE_GRACE_MS, readGraceMs);
      loaded = expiry.loaded;
      const after = await tableKeys(objects, table);
      const deleted = [...before].filter((key) => !after.has(key)).sort();
      // (An erasure's purge deletes the files it replaced itself: a snapshot may still name one gone.)
      const expected = expiry.snapshotsExpired === 0 ? [] : deletableKeys(table, full.paths).filter((key) => before.has(key)).sort();
      expect(deleted, `${label}: deleted by the expiry (${expiry.filesFoundBy ?? 'nothing expired'}) vs the full computation`).toEqual(expected);
      if (expiry.filesFoundBy) tally[expiry.filesFoundBy]++;
      tally.deleted += deleted.length;
      for (const snapshot of loaded.metadata.snapshots) await expectSnapshotReadsEvents(table, loaded.metadata, snapshot['snapshot-id'], eventsOf.get(snapshot['snapshot-id']) ?? -1, label);
    }
    const current = loaded.metadata['current-snapshot-id'];
    if (!eventsOf.has(current)) eventsOf.set(current, seqMax);
  }
  return tally;
}

/** Counts the GETs of manifests (`…-m<n>.avro`) and manifest lists (`snap-…`) made through `objects`. */
function countingGets(objects: ObjectStore): { objects: ObjectStore; manifests: string[]; lists: string[] } {
  const counts = { manifests: [] as string[], lists: [] as string[] };
  const counting = new Proxy(objects, {
    get(target, name) {
      if (name === 'get') {
        return (key: string) => {
          const file = key.slice(key.lastIndexOf('/') + 1);
          if (/-m\d+\.avro$/.test(file)) counts.manifests.push(key);
          else if (file.startsWith('snap-')) counts.lists.push(key);
          return target.get(key);
        };
      }
      const value = Reflect.get(target, name, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { objects: counting, ...counts };
}

/** `7` or `1..40` as seeds; undefined when not given. */
function seedsFrom(text: string | undefined): number[] | undefined {
  if (text === undefined) return undefined;
  const [first, last = first] = text.split('..').map(Number) as [number, number?];
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}

describe('incremental snapshot expiry', () => {
  // A failing seed replays with EXPIRY_SEED=<seed>; EXPIRY_SEED=<first>..<last> runs a range.
  const seeds = seedsFrom(process.env['EXPIRY_SEED']) ?? [11, 23, 37, 41];
  const tallies: Array<{ incremental: number; reachability: number }> = [];
  for (const seed of seeds) {
    it(`deletes what the full computation deletes, and icebird reads every retained snapshot, over a random history (seed ${seed})`, async () => {
      onTestFinished(routeAwsS3To(s3.server.url, CREDENTIALS));
      const tally = await randomHistory(seed, 60);
      console.log(`seed ${seed}: ${tally.incremental} expiries incremental, ${tally.reachability} by reachability, ${tally.deleted} objects deleted`);
      tallies.push(tally);
      expect(tally.deleted).toBeGreaterThan(0);
    }, 300_000);
  }

  it('the random histories above took both ways: incremental, and by reachability where it does not apply', () => {
    expect(tallies.reduce((sum, tally) => sum + tally.incremental, 0)).toBeGreaterThan(0);
    expect(tallies.reduce((sum, tally) => sum + tally.reachability, 0)).toBeGreaterThan(0);
  });

  it('a snapshot kept beyond a gap (a compaction\'s parent for its grace, a tagged one) leaves expiries incremental; expiring one beyond a gap falls back to reachability', async () => {
    const table = tableRef('gaps');
    const objects = s3.connections.bucket('s3', BUCKET);
    let clock = T0 + 30 * 86_400_000;
    const context: MaintenanceContext = { objects, table, fence, now: () => clock, metadataLogEntriesMax: 100 };
    let loaded = await ensureIcebergTable(objects, table, clock);
    let seqMax = 0;
    const sweeps = async (count: number): Promise<void> => {
      for (let c = 0; c < count; c++) {
        clock += 1_000;
        loaded = (await commitIcebergBatch(objects, table, loaded, twoDayEvents(T0, seqMax + 1, 2), { ...fence, nowMs: clock, writerId: 'test' })).loaded;
        seqMax += 2;
        eventsOf.set(loaded.metadata['current-snapshot-id'], seqMax);
      }
    };
    const eventsOf = new Map<number, number>();
    const methods: string[] = [];
    /** Expires down to 2 (with the grace), checks the deletes against the full computation and icebird against every kept snapshot. */
    const expire = async (): Promise<void> => {
      const kept = retainedSnapshotIds(loaded.metadata, 2, clock - REPLACED_FILE_GRACE_MS, undefined, clock);
      const full = await reachabilityPlan(objects, table, loaded.metadata, kept, new ManifestCache());
      const before = await tableKeys(objects, table);
      const expiry = await expireIcebergSnapshots(context, loaded, 2);
      loaded = expiry.loaded;
      const after = await tableKeys(objects, table);
      expect([...before].filter((key) => !after.has(key)).sort()).toEqual(deletableKeys(table, full.paths).sort());
      methods.push(expiry.filesFoundBy ?? 'nothing');
    };
    await sweeps(4);
    const parent = loaded.metadata['current-snapshot-id'];
    clock += 1_000;
    loaded = (await compactIcebergTable(context, loaded, 16 * 1024 * 1024)).loaded;
    await sweeps(3);
    // The compaction and its parent stay for the grace, the sweep after it goes: one unbroken line, incremental.
    await expire();
    expect(loaded.metadata.snapshots.map((snapshot) => snapshot['snapshot-id'])).toContain(parent);
    // Another engine tags the oldest snapshot left after three more sweeps.
    await sweeps(3);
    const tagged = loaded.metadata['current-snapshot-id'];
    loaded = await commitMetadataVersion(objects, table, loaded, { ...loaded.metadata, refs: { ...loaded.metadata.refs, audit: { 'snapshot-id': tagged, type: 'tag' } }, 'last-updated-ms': clock }, fence);
    // Past the grace, the compaction and its parent, beyond the gap the expired sweep left, expire: by reachability.
    await sweeps(3);
    clock += REPLACED_FILE_GRACE_MS;
    await expire();
    expect(loaded.metadata.snapshots.map((snapshot) => snapshot['snapshot-id'])).not.toContain(parent);
    // The tagged snapshot stays, beyond the gap its expired descendants leave: incremental.
    await sweeps(3);
    await expire();
    await sweeps(3);
    await expire();
    expect(loaded.metadata.snapshots.map((snapshot) => snapshot['snapshot-id'])).toContain(tagged);
    expect(methods).toEqual(['incremental', 'reachability', 'incremental', 'incremental']);
    onTestFinished(routeAwsS3To(s3.server.url, CREDENTIALS));
    for (const snapshot of loaded.metadata.snapshots) await expectSnapshotReadsEvents(table, loaded.metadata, snapshot['snapshot-id'], eventsOf.get(snapshot['snapshot-id']) ?? -1, 'after the expiries');
  }, 120_000);

  it('opens only the manifests it deletes that hold DELETED entries, not every manifest of the table', async () => {
    const table = tableRef('opened');
    const objects = s3.connections.bucket('s3', BUCKET);
    const context: MaintenanceContext = { objects, table, fence, now: Date.now, metadataLogEntriesMax: 100 };
    let loaded = await ensureIcebergTable(objects, table, T0);
    let seqMax = 0;
    const sweeps = async (count: number): Promise<void> => {
      for (let c = 0; c < count; c++) {
        loaded = (await commitIcebergBatch(objects, table, loaded, twoDayEvents(T0, seqMax + 1, 2), { ...fence, nowMs: Date.now(), writerId: 'test' })).loaded;
        seqMax += 2;
      }
    };
    // 30 commits, a compaction (it rewrites each of their manifests with its files DELETED), a
    // manifest rewrite (which drops those), then 40 more commits.
    await sweeps(30);
    loaded = (await compactIcebergTable(context, loaded, 16 * 1024 * 1024)).loaded;
    loaded = (await rewriteIcebergManifests(context, loaded)).loaded;
    await sweeps(40);
    const distinctManifests = new Set<string>();
    const lists = new ManifestListCache();
    for (const snapshot of loaded.metadata.snapshots) for (const file of await lists.files(objects, table, snapshot['manifest-list'])) distinctManifests.add(file.manifest_path);
    // The manifests the expiry deletes that hold DELETED entries, from the manifest lists alone.
    const kept = retainedSnapshotIds(loaded.metadata, 24);
    const keptManifests = new Set<string>();
    const candidatesWithDeletes = new Set<string>();
    for (const snapshot of loaded.metadata.snapshots) if (kept.has(snapshot['snapshot-id'])) for (const file of await lists.files(objects, table, snapshot['manifest-list'])) keptManifests.add(file.manifest_path);
    for (const snapshot of loaded.metadata.snapshots) {
      if (kept.has(snapshot['snapshot-id'])) continue;
      for (const file of await lists.files(objects, table, snapshot['manifest-list'])) if (!keptManifests.has(file.manifest_path) && file.deleted_files_count > 0) candidatesWithDeletes.add(file.manifest_path);
    }
    expect(candidatesWithDeletes.size).toBeGreaterThan(0);

    const counted = countingGets(objects);
    const expiry = await expireIcebergSnapshots({ ...context, objects: counted.objects }, loaded, 24, 0);
    console.log(`manifests opened: ${counted.manifests.length} of the ${distinctManifests.size} the table's ${loaded.metadata.snapshots.length} snapshots list`);
    // Of the manifests only those candidates, each once; each manifest list once.
    expect(new Set(counted.manifests)).toEqual(new Set([...candidatesWithDeletes].map((path) => path.slice(`s3://${BUCKET}/`.length))));
    expect(counted.manifests.length).toBe(candidatesWithDeletes.size);
    expect(counted.manifests.length * 2).toBeLessThan(distinctManifests.size);
    expect(counted.lists.length).toBe(loaded.metadata.snapshots.length);
    expect(expiry.snapshotsExpired).toBe(loaded.metadata.snapshots.length - 24);
    expect(expiry.filesFoundBy).toBe('incremental');
    // The compacted files' data is gone with them; the table still reads every event once.
    onTestFinished(routeAwsS3To(s3.server.url, CREDENTIALS));
    await expectSnapshotReadsEvents(table, expiry.loaded.metadata, expiry.loaded.metadata['current-snapshot-id'], seqMax, 'after the expiry');
  }, 120_000);
});
