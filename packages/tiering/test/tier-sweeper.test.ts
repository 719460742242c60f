// Goal: batch.size bounds one commit, not the throughput — a sweep that fills a batch is followed at once by the next until less than a batch is settled, without waiting for the interval — while leadership, close() and status reads interleave between commits.
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { IcebergTierSource, ParquetTierSource, S3Connections, commitMetadataVersion, type IcebergTableRef, type LoadedTable, type ObjectStore, currentManifests, loadIcebergTable, packParquetMarkers, putVersionHint, readNewestCheckpoint, readParquetLog, writeParquetCheckpoint, readTieredSuffix, resolveIcebergTable, readTieredLocations, readTierSegments, runIcebergMaintenance, REPLACED_FILE_GRACE_MS, SNAPSHOT_READ_GRACE_MS, tableWatermark, TIERED_LOCATIONS_META, WATERMARK_META, WATERMARK_TERM_META } from '@auditlake/lake';
import { chainHash, erasureDetailsChunks } from '@auditlake/integrity';
import { currentSnapshot, readWholeAuditParquet, type IcebergTableMetadata } from '@auditlake/format';
import { defaultSettings, encodeEvent, INTEGRITY_ACTIONS, parseSettings, resolveConfig, SELF_SOURCE, type AuditEvent, type EffectiveSettings } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { describe, expect, it, onTestFinished } from 'vitest';
import { MaintenanceScheduler, TIER_TERM_LEARN_MAX, TierSweeper, type TierStatus, type TierSweeperOptions } from '../src/index.js';
import { testSweeper } from './test-sweeper.js';
import { duckdbOverLiveParquet } from './live-parquet.js';
import { commitForeignSnapshotOnTop, routeAwsS3To, useEmbeddedS3 } from '@auditlake/lake/testing';
import { icebergRead } from 'icebird';

const BUCKET = 'sweep';
const HOUR_MS = 3_600_000;
const CREDENTIALS = { accessKeyId: 'ALSWEEPTEST000000001', secretAccessKey: 'sweep-test-secret-0123456789abcdefghij' };
const s3 = useEmbeddedS3('tier-sweeper-', BUCKET, CREDENTIALS);

function settings(path: string, bucket = BUCKET): EffectiveSettings {
  return parseSettings({ ...defaultSettings(resolveConfig()), 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': `s3://${bucket}/${path}`, 'audit.tier.connectionId': 's3' });
}

function ev(i: number): AuditEvent {
  return { eventId: `e${i}`, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp: Date.UTC(2026, 0, 1) + i };
}

/**
 * A store holding `events` events appended `perAppend` at a time, each append in its own ingest
 * millisecond (an injected clock from `ingestFromMs`, in the past so everything is settled):
 * one same-millisecond group per append, whatever the machine's speed.
 */
async function storeWith(events: number, perAppend = 50, ingestFromMs = Date.now() - HOUR_MS): Promise<AuditStore> {
  let ingestMs = ingestFromMs;
  const store = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => ingestMs });
  onTestFinished(() => store.close());
  for (let i = 0; i < events; i += perAppend) {
    await store.append(Array.from({ length: Math.min(perAppend, events - i) }, (_, j) => ev(i + j)));
    ingestMs++;
  }
  return store;
}

/** A store holding `log`'s entries through `throughSeq`, replicated as a standby holds them, and none of its metadata (watermark, tier bookkeeping). */
async function replicaOf(log: AuditStore, throughSeq: number): Promise<AuditStore> {
  const replica = await storeWith(0);
  await replica.applyReplicated(await log.readEncodedBySeq(0, throughSeq), log.termStarts());
  return replica;
}

function sweeper(store: AuditStore, path: string, over: Partial<TierSweeperOptions> = {}): TierSweeper {
  return testSweeper({ store, connections: s3.connections, catalogs: new Map(), settings: () => settings(path), ...over });
}

describe('TierSweeper', () => {
  it('goes on tiering at real speed after the leader clock steps back, in batches of the size asked', async () => {
    const real = Date.now() - 2 * HOUR_MS;
    let wall = real + HOUR_MS; // an hour fast for a while
    let monotonic = 0;
    const store = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => wall, monotonicNow: () => monotonic });
    onTestFinished(() => store.close());
    let n = 0;
    const append = (count: number) => store.append(Array.from({ length: count }, () => ev(n++)));
    await append(10);
    // NTP steps the clock back an hour; ingest goes on for 30 minutes, ten events every 18 s.
    wall = real;
    for (let i = 0; i < 100; i++) {
      wall += 18_000;
      monotonic += 18_000;
      await append(10);
    }
    const entries = await store.readBySeq(0, 2_000);
    // Each append its own millisecond, an hour ahead of the wall clock: not one frozen value.
    expect(new Set(entries.map((e) => e.ingestTs)).size).toBe(101);
    expect(entries.at(-1)!.ingestTs).toBe(real + HOUR_MS + 100 * 18_000);
    const sizes: number[] = [];
    const s = sweeper(store, 'clock-step', { settleMs: 2_000, now: () => wall, onTiered: (batch) => sizes.push(batch.length) });
    // 30 minutes after the step, long before the wall clock catches up with the log: one batch a sweep.
    for (let i = 0; i < 20 && (await s.watermark()).seq < 1_000; i++) await s.sweep();
    // Everything but the newest append, which waits out the settle window like any newest events.
    expect((await s.watermark()).seq).toBe(1_000);
    await s.sweep();
    expect((await s.watermark()).seq).toBe(1_000);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(100);
  });

  it('commits batch after batch at once until less than a batch is left, then waits for the interval', async () => {
    const store = await storeWith(1_030);
    let commits = 0;
    const s = sweeper(store, 'catch-up', { onTiered: () => commits++ });
    s.start(0);
    // The interval is an hour: only going on at once can tier everything now.
    await expect.poll(async () => (await s.watermark()).seq, { timeout: 60_000 }).toBe(1_030);
    expect(await store.countAfter((await s.watermark()).seq)).toBe(0);
    // Eleven commits (ten full, the rest); each batch held at most batch.size events.
    expect(commits).toBeGreaterThanOrEqual(11);
    // The last commit's watermark is visible before that sweep has scheduled the next one: wait for the schedule.
    await expect.poll(async () => (await s.status()).nextAttemptMs).toBeGreaterThan(Date.now() + HOUR_MS / 2);
    const status = await s.status();
    expect(status.lastBatch!.count).toBeLessThanOrEqual(100);
    // New events now wait for the next interval (an hour away).
    await store.append([ev(5_000)]);
    expect(status.nextAttemptMs).toBeGreaterThan(Date.now() + HOUR_MS / 2);
    const before = commits;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(commits).toBe(before);
  });

  it('goes on at once when a group that did not fit cut the batch short of the limit', async () => {
    // Groups of 60 with batch.size 100: every batch holds one group (60), since two would not fit.
    const store = await storeWith(600, 60);
    let commits = 0;
    const s = sweeper(store, 'short-cut', { onTiered: () => commits++ });
    s.start(0);
    // The interval is an hour: waiting for it after a short batch would leave 540 behind.
    await expect.poll(async () => (await s.watermark()).seq, { timeout: 30_000 }).toBe(600);
    expect(commits).toBe(10);
    expect((await s.status()).lastBatch!.count).toBe(60);
  });

  it('a status read as a commit becomes visible never pairs its watermark with the failure before it', async () => {
    const store = await storeWith(10);
    let bucket = 'no-such-bucket';
    const atCommit: Array<Promise<TierStatus>> = [];
    const s: TierSweeper = sweeper(store, 'after-failure', {
      settings: () => settings('after-failure', bucket),
      // Called once the commit's watermark is stored; status() takes its snapshot at once.
      onTiered: () => void atCommit.push(s.status()),
    });
    expect(await s.sweep()).toBe('failed');
    expect((await s.status()).lastError).toMatch(/no-such-bucket|NoSuchBucket|bucket/i);
    bucket = BUCKET;
    expect(await s.sweep()).toBe('tiered');
    expect(atCommit).toHaveLength(1);
    const seen = await atCommit[0]!;
    expect(seen.watermark.seq).toBe(10);
    expect(seen.lastError).toBeNull();
    expect(seen.consecutiveFailures).toBe(0);
  });

  it('stops between commits when it loses leadership or is closed, and status answers meanwhile', async () => {
    const store = await storeWith(2_000);
    let leader = true;
    let commits = 0;
    const s = sweeper(store, 'interleave', {
      isLeader: () => leader,
      onTiered: () => {
        commits++;
        if (commits === 3) leader = false;
      },
    });
    s.start(0);
    await expect.poll(() => commits, { timeout: 60_000 }).toBe(3);
    // Deposed after the third commit: no fourth, and the status is readable at once.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(commits).toBe(3);
    expect((await s.watermark()).seq).toBe(300);

    const store2 = await storeWith(2_000);
    let commits2 = 0;
    const s2 = sweeper(store2, 'closing', { onTiered: () => commits2++ });
    s2.start(0);
    await expect.poll(() => commits2, { timeout: 60_000 }).toBeGreaterThanOrEqual(2);
    const statusStarted = performance.now();
    await s2.status();
    expect(performance.now() - statusStarted).toBeLessThan(5_000);
    await s2.close();
    const atClose = commits2;
    expect(atClose).toBeLessThan(20);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(commits2).toBe(atClose);
  });

  it('a term\'s first sweep fetches only the commit markers written since the sweeper last read them (each marker once, not the whole log each term)', async () => {
    // Counts GETs of commit markers through every bucket the sweeper opens.
    class MarkerGets extends S3Connections {
      gets = 0;
      override bucket(id: string, bucket: string): ObjectStore {
        const objects = super.bucket(id, bucket);
        const get = objects.get.bind(objects);
        objects.get = (key) => {
          if (key.includes('/_auditlake/commits/')) this.gets++;
          return get(key);
        };
        return objects;
      }
    }
    const counting = new MarkerGets(s3.connectionConfigs());
    onTestFinished(() => counting.close());
    const store = await storeWith(80, 10);
    let term = 1;
    const s = sweeper(store, 'marker-reads', { connections: counting, term: () => term, batchSizeMax: 10 });
    /** `commits` sweeps of one batch (ten events, one commit) each. */
    const tierMore = async (commits: number): Promise<void> => {
      for (let i = 0; i < commits; i++) expect(await s.sweep()).toMatch(/^tiered/);
    };
    await tierMore(5);
    term = 2;
    await tierMore(3);
    // Term 3's first sweep reads what term 2's first sweep had not seen: the three commits made since.
    term = 3;
    counting.gets = 0;
    expect(await s.sweep()).toBe('nothing-to-tier');
    expect(counting.gets).toBe(3);
    expect((await s.watermark()).seq).toBe(80);
  });

  it('with maintenance on, expires snapshots between runs once twice snapshot.retain.last have gathered, merges manifests once they reach the bound, and bounds the metadata-log at every commit', async () => {
    const catalogs = new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/warehouse`, connectionId: 's3' }]]);
    const icebergSettings = (table: string, enabled: boolean): EffectiveSettings =>
      parseSettings({
        ...defaultSettings(resolveConfig()),
        'audit.tier.mode': 'iceberg',
        'audit.tier.iceberg.table': table,
        'audit.tier.connectionId': 's3',
        'audit.tier.maintenance.enabled': String(enabled),
        'audit.tier.maintenance.snapshot.retain.last': '3',
        'audit.tier.maintenance.metadata.previous.versions.max': '4',
      });
    const objects = s3.connections.bucket('s3', BUCKET);
    const snapshotCounts = async (table: string, enabled: boolean): Promise<{ snapshots: number[]; manifests: number[] }> => {
      const store = await storeWith(200, 10);
      const ref = resolveIcebergTable(table, catalogs);
      const snapshots: number[] = [];
      const manifests: number[] = [];
      // A sweep a minute and more apart: the expiry between runs leaves younger snapshots (SNAPSHOT_READ_GRACE_MS),
      // by the wall clock and by how long the sweeper has seen them (its monotonic clock goes on with it).
      let clock = Date.now();
      const s = sweeper(store, 'unused', { catalogs, settings: () => icebergSettings(table, enabled), batchSizeMax: 10, manifestsBetweenRunsMax: 5, now: () => clock, monotonicMs: () => clock });
      for (let sweep = 1; sweep <= 20; sweep++) {
        clock += SNAPSHOT_READ_GRACE_MS + 1_000;
        expect(await s.sweep()).toMatch(/^tiered/);
        const loaded = (await loadIcebergTable(objects, ref))!;
        expect(loaded.metadata['metadata-log'].length).toBeLessThanOrEqual(4);
        snapshots.push(loaded.metadata.snapshots.length);
        const current = await currentManifests(objects, ref, loaded.metadata);
        manifests.push(current.length);
        // Whatever was merged or expired, the current snapshot holds every tiered event once.
        const rows = current.flatMap((m) => m.entries.filter((e) => e.status !== 2)).reduce((n, e) => n + Number(e.data_file.record_count), 0);
        expect(rows).toBe(sweep * 10);
      }
      expect((await s.watermark()).seq).toBe(200);
      return { snapshots, manifests };
    };
    const maintained = await snapshotCounts('cat.ns.maintained_events', true);
    // Never more than twice retain.last; back to retain.last after each expiry.
    expect(Math.max(...maintained.snapshots)).toBeLessThanOrEqual(6);
    expect(maintained.snapshots.filter((n) => n === 3).length).toBeGreaterThanOrEqual(3);
    // Merged into one once five gathered.
    expect(Math.max(...maintained.manifests)).toBeLessThanOrEqual(4);
    // With maintenance off the sweep leaves the history alone.
    const unmaintained = await snapshotCounts('cat.ns.unmaintained_events', false);
    expect(unmaintained.snapshots).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(unmaintained.manifests).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  }, 120_000);
});

describe("the sweep's expiry between maintenance runs", () => {
  it("keeps a compaction's replaced files for the grace after the sweeping node's clock stepped 20 minutes forward (by when it saw the compaction, on a monotonic clock), then deletes them", async () => {
    // Goal: a search that listed the files before a compaction can read them for the grace, whatever the sweeping node's wall clock does (review).
    const catalogs = new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/warehouse`, connectionId: 's3' }]]);
    const target = parseSettings({
      ...defaultSettings(resolveConfig()),
      'audit.tier.mode': 'iceberg',
      'audit.tier.iceberg.table': 'cat.ns.stepped_events',
      'audit.tier.connectionId': 's3',
      'audit.tier.maintenance.snapshot.retain.last': '1',
    });
    const objects = s3.connections.bucket('s3', BUCKET);
    const table = resolveIcebergTable('cat.ns.stepped_events', catalogs);
    const store = await storeWith(100, 10);
    let clock = Date.now();
    let monotonic = 0;
    const tick = (ms: number) => {
      clock += ms;
      monotonic += ms;
    };
    const s = sweeper(store, 'unused', { catalogs, settings: () => target, batchSizeMax: 10, now: () => clock, monotonicMs: () => monotonic });
    for (let sweep = 0; sweep < 4; sweep++) {
      tick(SNAPSHOT_READ_GRACE_MS + 1_000);
      expect(await s.sweep()).toMatch(/^tiered/);
    }
    // A maintenance run compacts the four commits' files: a search may have listed them just before.
    const listed = await new IcebergTierSource(s3.connections, { identifier: table.identifier, location: table.location, connectionId: 's3' }).listFiles();
    const run = await runIcebergMaintenance(
      { objects, table, fence: { term: 1, mayCommit: () => true }, now: () => clock },
      { snapshotRetainLast: 1, removeOrphanFiles: false, orphanMinAgeMs: HOUR_MS, targetFileSizeBytes: 16 * 1024 * 1024, metadataPreviousVersionsMax: 100 },
    );
    expect(run.filesRewritten).toBe(listed.length);
    const present = async () => (await Promise.all(listed.map((file) => objects.exists(file.key)))).filter(Boolean).length;
    expect(await present()).toBe(listed.length);
    // The wall clock steps 20 minutes forward, 5 seconds pass: the compaction looks past its
    // grace by the clock, but this sweeper first saw it seconds ago.
    clock += 20 * 60_000;
    for (let sweep = 0; sweep < 3; sweep++) {
      tick(SNAPSHOT_READ_GRACE_MS + 1_000);
      expect(await s.sweep()).toMatch(/^tiered/);
      expect(await present()).toBe(listed.length);
    }
    // Past the grace on both clocks, the next expiry between runs deletes them.
    tick(REPLACED_FILE_GRACE_MS);
    expect(await s.sweep()).toMatch(/^tiered/);
    expect(await present()).toBe(0);
  });
});

describe('TierSweeper in a cluster', () => {
  it('tiers only what every standby holds, so any successor holds every tiered entry', async () => {
    const store = await storeWith(300);
    let held: number | undefined = 120;
    const s = sweeper(store, 'held', { heldThrough: () => held, batchSizeMax: 500 });
    // Appends of 50 share one ingest millisecond: the group 101..150 is cut by the bound and waits whole.
    expect(await s.sweep()).toBe('tiered');
    expect((await s.watermark()).seq).toBe(100);
    expect(await s.sweep()).toBe('nothing-to-tier');
    held = 300;
    expect(await s.sweep()).toBe('tiered');
    expect((await s.watermark()).seq).toBe(300);
    // Without a standby heard from there is no bound.
    await store.append([ev(300)]);
    held = undefined;
    expect(await s.sweep()).toBe('tiered');
    expect((await s.watermark()).seq).toBe(301);
  });
});

describe('TierSweeper on a tier ahead of or apart from its log', () => {
  const catalogs = new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/warehouse`, connectionId: 's3' }]]);
  const modes = {
    parquet: (name: string) => settings(`apart/${name}`),
    iceberg: (name: string) => parseSettings({ ...defaultSettings(resolveConfig()), 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': `cat.apart.${name}`, 'audit.tier.connectionId': 's3' }),
  };

  /**
   * The target `modes[mode](name)` names, named another way: through connection `s3-rotated` (the
   * same endpoint), the Parquet path with a trailing slash, the table through catalog `cat2` (the
   * same warehouse).
   */
  const namedThroughRotated = (mode: 'parquet' | 'iceberg', name: string): EffectiveSettings =>
    mode === 'parquet'
      ? parseSettings({ ...defaultSettings(resolveConfig()), 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': `s3://${BUCKET}/apart/${name}/`, 'audit.tier.connectionId': 's3-rotated' })
      : parseSettings({ ...defaultSettings(resolveConfig()), 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': `cat2.apart.${name}`, 'audit.tier.connectionId': 's3-rotated' });

  /** A log of 20 events (ingested two hours ago) that a sweep tiered whole to `target`: the dead leader's, or a lost node's. */
  async function tieredLog(target: EffectiveSettings): Promise<AuditStore> {
    const log = await storeWith(20, 10, Date.now() - 2 * HOUR_MS);
    const sweeper = testSweeper({ store: log, connections: s3.connections, catalogs, settings: () => target });
    expect(await sweeper.sweep()).toBe('tiered');
    await sweeper.close();
    return log;
  }

  /** A log of 30 events tiered to `target` in two sweeps (20, then 10). */
  async function tieredThrough30(target: EffectiveSettings): Promise<AuditStore> {
    const first = await tieredLog(target);
    const more = testSweeper({ store: first, connections: s3.connections, catalogs, settings: () => target });
    await first.append(Array.from({ length: 10 }, (_, i) => ev(20 + i)));
    expect(await more.sweep()).toBe('tiered');
    await more.close();
    return first;
  }

  /**
   * On an Iceberg target tiered through seq 30 from `first`: a log that is not the tier's (a node
   * whose data was lost) is refused, not tiered again; a copy of `first` that never learnt the
   * watermark (no tier meta) goes on from seq 30, and the table holds seqs 1..35 once each.
   */
  async function expectOtherLogRefusedAndCopyGoesOn(first: AuditStore, target: EffectiveSettings): Promise<void> {
    const other = await storeWith(40, 10);
    const b = testSweeper({ store: other, connections: s3.connections, catalogs, settings: () => target });
    expect(await b.sweep()).toBe('failed');
    expect((await b.status()).lastError).toContain('is tiered through seq 30');
    const copy = await replicaOf(first, 30);
    await copy.append(Array.from({ length: 5 }, (_, i) => ev(30 + i)));
    const c = testSweeper({ store: copy, connections: s3.connections, catalogs, settings: () => target });
    expect(await c.sweep()).toBe('tiered');
    expect((await c.watermark()).seq).toBe(35);
    const rows = [];
    const source = tierSourceOf('iceberg', target);
    for (const file of await source.listFiles()) rows.push(...(await readWholeAuditParquet(await source.open(file))));
    expect(rows.map((row) => row.seq).sort((x, y) => (x ?? 0) - (y ?? 0))).toEqual(Array.from({ length: 35 }, (_, i) => i + 1));
    expect(new Set(rows.map((row) => row.eventId)).size).toBe(35);
  }

  /** The reader's view of the target's committed files, closed when the test finishes. */
  function tierSourceOf(mode: keyof typeof modes, target: EffectiveSettings): ParquetTierSource | IcebergTierSource {
    const source =
      mode === 'parquet'
        ? new ParquetTierSource(s3.connections, { mode: 'parquet', path: target.tierParquetPath, connectionId: 's3' })
        : new IcebergTierSource(s3.connections, resolveIcebergTable(target.tierIcebergTable, catalogs));
    onTestFinished(() => source.close());
    return source;
  }

  /** What the tier holds, one row per seq from 1 (read through the reader's own view of it). */
  async function tieredIds(mode: keyof typeof modes, target: EffectiveSettings, throughSeq: number): Promise<string[]> {
    const source = tierSourceOf(mode, target);
    return (await readTieredSuffix(source, 0, throughSeq)).map((row) => row.eventId);
  }

  /** The `query` of every tiered row, in seq order. */
  async function tieredQueries(mode: keyof typeof modes, target: EffectiveSettings): Promise<string[]> {
    const source = tierSourceOf(mode, target);
    const rows = [];
    for (const file of await source.listFiles()) rows.push(...(await readWholeAuditParquet(await source.open(file))));
    return rows.sort((x, y) => (x.seq ?? 0) - (y.seq ?? 0)).map((row) => row.query);
  }

  /** Orders the outbox's events in `term` and empties it, as a leader's forwarder does. */
  async function orderOutbox(store: AuditStore, term: number): Promise<number> {
    const entries = await store.readOutbox(1000);
    const { stored } = await store.append(entries.map((entry) => JSON.parse(entry.json) as AuditEvent), { sequencer: () => term });
    await store.deleteOutbox(entries.map((entry) => entry.key));
    return stored.length;
  }

  it.each(['parquet', 'iceberg'] as const)(
    '%s: a successor that finds a target tiered further than its log recorded (the leader died before recording its first commit there) records the target with the watermark: retention then deletes nothing the merged reader does not read',
    async (mode) => {
      const target = modes[mode](`unrecorded_${mode}`);
      const dead = await tieredLog(target);
      // The successor holds the dead leader's log, and nothing of its tier bookkeeping.
      const successor = await replicaOf(dead, 20);
      const b = testSweeper({ store: successor, connections: s3.connections, catalogs, settings: () => target, term: () => 2 });
      expect(await b.sweep()).toBe('nothing-to-tier');
      expect((await b.watermark()).seq).toBe(20);
      expect(await readTieredLocations(successor)).toEqual(await readTieredLocations(dead));
      expect(await readTieredLocations(successor)).toHaveLength(1);
    },
  );

  it.each(['parquet', 'iceberg'] as const)(
    '%s: a successor that takes its watermark from the tier records the seqs the tier holds there as tiered segments, the holes of the dead leader\'s batch left out',
    async (mode) => {
      const target = modes[mode](`segments_${mode}`);
      const dead = await storeWith(20, 10, Date.now() - 2 * HOUR_MS);
      // The successor received all 20 entries; the dead leader's retention (tiering was off)
      // then deleted its first five, and it tiered the other fifteen before it died.
      const successor = await replicaOf(dead, 20);
      await dead.pruneBefore(Date.UTC(2026, 0, 1) + 5, 100, async () => true);
      const deadSweeper = testSweeper({ store: dead, connections: s3.connections, catalogs, settings: () => target });
      expect(await deadSweeper.sweep()).toBe('tiered');
      await deadSweeper.close();
      const deadSegments = await readTierSegments(dead);
      expect(deadSegments.map(({ fromSeq, toSeq }) => [fromSeq, toSeq])).toEqual([[6, 20]]);
      const b = testSweeper({ store: successor, connections: s3.connections, catalogs, settings: () => target, term: () => 2 });
      expect(await b.sweep()).toBe('nothing-to-tier');
      expect((await b.watermark()).seq).toBe(20);
      // Without them a verifier excused the tier's missing rows once retention deleted the
      // entries here; taken from this log instead, seqs 1..5 (never tiered) would be called missing.
      expect(await readTierSegments(successor)).toEqual(deadSegments);
      // The bound counts the seqs held (15), not the range's span (20): at 15 they are recorded.
      const warned: string[] = [];
      const bounded = (store: AuditStore, max: number) =>
        testSweeper({ store, connections: s3.connections, catalogs, settings: () => target, term: () => 2, recoveredSegmentSeqsMax: max, log: { info: () => undefined, warn: (_obj, msg) => void warned.push(msg) } });
      const near = await replicaOf(dead, 20);
      expect(await bounded(near, 15).sweep()).toBe('nothing-to-tier');
      expect(await readTierSegments(near)).toEqual(deadSegments);
      expect(warned).toEqual([]);
      // Past the bound, no segment (verify excuses the range, as before).
      const far = await replicaOf(dead, 20);
      const c = bounded(far, 14);
      expect(await c.sweep()).toBe('nothing-to-tier');
      expect((await c.watermark()).seq).toBe(20);
      expect(await readTierSegments(far)).toEqual([]);
      expect(warned).toEqual([expect.stringContaining('seqs 1..20 were tiered by commits this log did not record; the location holds more than 14') as unknown]);
      // The next commit continues the segment.
      await successor.append([ev(100)], { sequencer: () => 2 });
      expect(await b.sweep()).toBe('tiered');
      expect((await readTierSegments(successor)).map(({ fromSeq, toSeq }) => [fromSeq, toSeq])).toEqual([[6, 21]]);
    },
  );

  it('parquet: a first commit whose read-back failed is found made by the retry (taken: OBJECT_EXISTS), and the recovery after it records the target with the watermark', async () => {
    const target = modes.parquet('readback_failed');
    // A bucket whose first GET of a commit marker fails, as an S3 500 would.
    class FailingFirstMarkerGet extends S3Connections {
      failed = 0;
      override bucket(id: string, bucket: string): ObjectStore {
        const objects = super.bucket(id, bucket);
        const get = objects.get.bind(objects);
        objects.get = async (key) => {
          if (this.failed === 0 && key.includes('/_auditlake/commits/')) {
            this.failed++;
            throw new Error('injected: 500 InternalError on the read-back');
          }
          return get(key);
        };
        return objects;
      }
    }
    const failing = new FailingFirstMarkerGet(s3.connectionConfigs());
    onTestFinished(() => failing.close());
    const store = await storeWith(20, 10);
    const s = testSweeper({ store, connections: failing, catalogs, settings: () => target });
    expect(await s.sweep()).toBe('failed');
    expect(failing.failed).toBe(1);
    expect(await s.sweep()).toBe('failed');
    expect((await s.status()).lastError).toContain('commit lost');
    expect(await readTieredLocations(store)).toEqual([]);
    expect(await s.sweep()).toBe('nothing-to-tier');
    expect((await s.watermark()).seq).toBe(20);
    expect(await readTieredLocations(store)).toEqual([{ mode: 'parquet', path: target.tierParquetPath, connectionId: 's3', endpoint: failing.endpointOf('s3') }]);
  });

  it.each(['parquet', 'iceberg'] as const)(
    '%s: a successor whose log lacks what a dead leader tiered stops tiering, and once an admin allows it takes what the tier holds, orders its own entries again after it, and every event is tiered once',
    async (mode) => {
      const target = modes[mode](`successor_${mode}`);
      const dead = await tieredLog(target);
      // The successor received the dead leader's log through seq 12 only, then ordered three of
      // its own in term 2 under seqs the tier holds — one of them e15, which a client re-sent to it.
      const successor = await replicaOf(dead, 12);
      await successor.append([ev(100), ev(101), ev(15)], { sequencer: () => 2 });
      const b = testSweeper({ store: successor, connections: s3.connections, catalogs, settings: () => target, term: () => 2 });
      // Not unasked: the sweep stops and names the way out; the log is as it was.
      expect(await b.sweep()).toBe('failed');
      expect((await b.status()).lastError).toContain("is tiered through seq 20, past the end of this node's log (seq 15)");
      // Nor is the tier's watermark stored as this log's: retention deletes up to it, and these
      // three entries (acknowledged, never tiered) would go on every node (review). Nor is it
      // vouched for in this term, which retention asks before counting term 2's entries (tieredThroughHere).
      expect((await b.watermark()).seq).toBe(0);
      expect(await successor.getMeta(WATERMARK_TERM_META)).toBeUndefined();
      expect((await b.status()).lastError).toContain('tiering stops here until the logs are reconciled: once the tier is checked to hold what that log tiered, POST /admin/audit/tier/adopt {"throughSeq": 20}');
      // Leave for another watermark than the tier's adopts nothing.
      expect(await b.adoptTier(21)).toMatchObject({ adopted: undefined, outcome: 'failed', error: expect.stringContaining('{"throughSeq": 20}') as unknown });
      expect(successor.position).toMatchObject({ lastSeq: 15, lastTerm: 2 });
      expect(successor.outboxCount).toBe(0);
      expect(await readTieredLocations(successor)).toEqual([]);
      expect(await b.adoptTier(20)).toEqual({ adopted: { target: target.tierMode === 'parquet' ? target.tierParquetPath : target.tierIcebergTable, throughSeq: 20, commonSeq: 12, adopted: 8, moved: 3 }, outcome: 'nothing-to-tier', error: null });
      // The location is known at once: retention may delete the adopted entries before the next commit, and the merged reader must find them there.
      expect((await readTieredLocations(successor)).map((location) => location.path)).toEqual([target.tierMode === 'parquet' ? target.tierParquetPath : target.tierIcebergTable]);
      expect((await b.status()).lastError).toBeNull();
      // Adopted: the log holds the tier's entries through its watermark, vouched for in this term.
      expect(await successor.getMeta(WATERMARK_TERM_META)).toBe(2);
      expect(successor.position).toMatchObject({ lastSeq: 20 });
      expect(Buffer.concat(await successor.readEncodedBySeq(0, 20)).equals(Buffer.concat(await dead.readEncodedBySeq(0, 20)))).toBe(true);
      expect(successor.outboxCount).toBe(3);
      expect(await orderOutbox(successor, 2)).toBe(2);
      expect(await b.sweep()).toBe('tiered');
      expect((await b.watermark()).seq).toBe(22);
      const ids = await tieredIds(mode, target, 22);
      expect(ids).toEqual([...Array.from({ length: 20 }, (_, i) => `e${i}`), 'e100', 'e101']);
      // The adopted seqs count as tiered there, as the successor's own commit after them does.
      expect((await readTierSegments(successor)).map(({ fromSeq, toSeq }) => [fromSeq, toSeq])).toEqual([[1, 22]]);
      // The successor's log goes on the tier's chain.
      const [twentieth, next] = [await successor.getBySeq(20), await successor.getBySeq(21)];
      expect(next?.chainHash).toBe(chainHash(twentieth?.chainHash as string, next?.recordHash as string));
    },
  );

  it.each(['parquet', 'iceberg'] as const)(
    "%s: a successor that ordered its own entries in the very millisecond the dead leader's tiered ones were ingested (its clock behind) is told apart by the chain hash, not taken as holding them",
    async (mode) => {
      const target = modes[mode](`same_ms_${mode}`);
      const dead = await tieredLog(target);
      const ingestMs = (await dead.getBySeq(20))?.ingestTs as number;
      const successor = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => ingestMs });
      onTestFinished(() => successor.close());
      await successor.applyReplicated(await dead.readEncodedBySeq(0, 12), dead.termStarts());
      await successor.append(Array.from({ length: 8 }, (_, i) => ev(100 + i)), { sequencer: () => 2 });
      expect((await successor.getBySeq(20))?.ingestTs).toBe(ingestMs);
      const b = testSweeper({ store: successor, connections: s3.connections, catalogs, settings: () => target, term: () => 2 });
      // Taken as this log's, the tier's watermark had the sweep skip the successor's 8 entries
      // (never tiered, then deleted by retention) while the tier held the dead leader's.
      expect(await b.sweep()).toBe('failed');
      expect((await b.status()).lastError).toContain('is tiered through seq 20, but its row at seq 20 has chain hash');
      expect((await b.watermark()).seq).toBe(0);
      expect(await b.adoptTier(20)).toMatchObject({ adopted: { commonSeq: 12, adopted: 8, moved: 8 }, error: null });
      expect(await orderOutbox(successor, 2)).toBe(8);
      expect(await b.sweep()).toBe('tiered');
      expect(await tieredIds(mode, target, 28)).toEqual([...Array.from({ length: 20 }, (_, i) => `e${i}`), ...Array.from({ length: 8 }, (_, i) => `e${100 + i}`)]);
    },
  );

  it.each(['parquet', 'iceberg'] as const)(
    '%s: a node leading again in the same process checks the location again in its new term: a leader between may have tiered entries it never received',
    async (mode) => {
      const target = modes[mode](`again_${mode}`);
      let nowMs = Date.now() - 2 * HOUR_MS;
      const n = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => nowMs });
      onTestFinished(() => n.close());
      await n.append(Array.from({ length: 12 }, (_, i) => ev(i)));
      let term = 1;
      const bN = testSweeper({ store: n, connections: s3.connections, catalogs, settings: () => target, term: () => term });
      expect(await bN.sweep()).toBe('tiered');
      // D leads term 2 with N's 12 entries, tiers 8 of its own and dies before N receives them.
      const d = await replicaOf(n, 12);
      await d.append(Array.from({ length: 8 }, (_, i) => ev(100 + i)), { sequencer: () => 2 });
      const dSweeper = testSweeper({ store: d, connections: s3.connections, catalogs, settings: () => target, term: () => 2 });
      expect(await dSweeper.sweep()).toBe('tiered');
      await dSweeper.close();
      // N leads term 3 in the same process, and orders 8 of its own in D's ingest millisecond.
      nowMs = (await d.getBySeq(20))?.ingestTs as number;
      term = 3;
      await n.append(Array.from({ length: 8 }, (_, i) => ev(200 + i)), { sequencer: () => 3 });
      expect(await bN.sweep()).toBe('failed');
      expect((await bN.status()).lastError).toContain('is tiered through seq 20, but its row at seq 20 has chain hash');
      expect((await bN.watermark()).seq).toBe(12);
    },
  );

  it('iceberg: a commit of this term whose bookkeeping was not stored gets its tier segment at the next sweep, before the commit that continues from it', async () => {
    const target = modes.iceberg('unrecorded_same_term');
    const store = await storeWith(30, 10);
    let failNext = false;
    const putMeta = store.putMeta.bind(store);
    store.putMeta = async (meta) => {
      if (failNext && 'tierSegments' in meta) {
        failNext = false;
        throw new Error('injected: the write of the commit\'s bookkeeping failed');
      }
      return putMeta(meta);
    };
    const s = testSweeper({ store, connections: s3.connections, catalogs, settings: () => target, batchSizeMax: 10 });
    expect(await s.sweep()).toBe('tiered-full');
    failNext = true;
    expect(await s.sweep()).toBe('failed');
    expect((await s.watermark()).seq).toBe(10);
    expect(await s.sweep()).toBe('tiered');
    expect((await s.watermark()).seq).toBe(30);
    expect((await readTierSegments(store)).map(({ fromSeq, toSeq }) => [fromSeq, toSeq])).toEqual([[1, 30]]);
  });

  it('an adoption names the settings records it takes: the changes they state were made on the log that tiered them, not in force on the adopter', async () => {
    const target = modes.parquet('settings_adopted');
    const dead = await storeWith(5, 5, Date.now() - 2 * HOUR_MS);
    await dead.append([{ ...ev(5), source: 'auditlake', action: 'audit:UpdateSettings', resource: 'audit.settings', details: 'audit.redact.keys: password → password,ssn' }]);
    const deadSweeper = testSweeper({ store: dead, connections: s3.connections, catalogs, settings: () => target });
    expect(await deadSweeper.sweep()).toBe('tiered');
    await deadSweeper.close();
    const successor = await replicaOf(dead, 3);
    await successor.append([ev(100)], { sequencer: () => 2 });
    const b = testSweeper({ store: successor, connections: s3.connections, catalogs, settings: () => target, term: () => 2 });
    expect(await b.sweep()).toBe('failed');
    const result = await b.adoptTier(6);
    expect(result.adopted).toMatchObject({ commonSeq: 3, adopted: 3, moved: 1, settingsRecordSeqs: [6] });
  });

  it('rows of a term no cluster reaches (a forged tier) are not adopted and their term is not taken in', async () => {
    const target = modes.parquet('forged_term');
    const forged = await storeWith(0);
    await forged.append([ev(0), ev(1), ev(2)], { sequencer: () => 2 ** 46 });
    const forger = testSweeper({ store: forged, connections: s3.connections, catalogs, settings: () => target, term: () => 2 ** 46 });
    expect(await forger.sweep()).toBe('tiered');
    await forger.close();
    const victim = await storeWith(0);
    await victim.append([ev(100)], { sequencer: () => 1 });
    const learned: number[] = [];
    const b = testSweeper({ store: victim, connections: s3.connections, catalogs, settings: () => target, term: () => 1, learnTerm: async (t) => void learned.push(t) });
    expect(await b.sweep()).toBe('failed');
    const result = await b.adoptTier(3);
    expect(result.adopted).toBeUndefined();
    expect(result.error).toContain(`has term ${2 ** 46}, not before this leader's term 1: no cluster hands out terms past ${TIER_TERM_LEARN_MAX}`);
    expect(learned).toEqual([]);
    expect(victim.position.lastSeq).toBe(1);
  });

  it('a term the cluster itself refuses to take in (far above every term it knows) refuses the adoption in its words', async () => {
    const target = modes.parquet('refused_term');
    const forged = await storeWith(0);
    await forged.append([ev(0), ev(1)], { sequencer: () => 5_000_000 });
    const forger = testSweeper({ store: forged, connections: s3.connections, catalogs, settings: () => target, term: () => 5_000_000 });
    expect(await forger.sweep()).toBe('tiered');
    await forger.close();
    const victim = await storeWith(0);
    await victim.append([ev(100)], { sequencer: () => 1 });
    const refusal = 'term 5000000 is not one a cluster could have reached';
    const b = testSweeper({ store: victim, connections: s3.connections, catalogs, settings: () => target, term: () => 1, learnTerm: async () => Promise.reject(new Error(refusal)) });
    expect(await b.sweep()).toBe('failed');
    const result = await b.adoptTier(2);
    expect(result.adopted).toBeUndefined();
    expect(result.error).toContain(`has term 5000000, not before this leader's term 1: this cluster does not take in term 5000000 (${refusal}), so the bucket holds rows no leader of this cluster wrote; they are not adopted`);
    expect(victim.position.lastSeq).toBe(1);
  });

  it.each(['parquet', 'iceberg'] as const)(
    "%s: a successor leading in a term the tier's rows hold (terms handed out again after the coordinator lost its data) takes the term in, steps down, and adopts in the next term",
    async (mode) => {
      const target = modes[mode](`terms_again_${mode}`);
      const dead = await tieredLog(target);
      const tierTerm = dead.position.lastTerm;
      // A node whose data was lost leads first after the coordinator restarted empty: the same term again.
      const successor = await storeWith(0);
      await successor.append([ev(100), ev(101)], { sequencer: () => tierTerm });
      let term = tierTerm;
      const learned: number[] = [];
      const b = testSweeper({ store: successor, connections: s3.connections, catalogs, settings: () => target, term: () => term, learnTerm: async (t) => void learned.push(t) });
      expect(await b.sweep()).toBe('failed');
      const first = await b.adoptTier(20);
      expect(first.adopted).toBeUndefined();
      expect(first.error).toContain(`the tier's row at seq 1 has term ${tierTerm}, not before this leader's term ${tierTerm}: the cluster handed out those terms again (its coordinator lost its data), so this node took in term ${tierTerm} and stepped down`);
      expect(learned).toEqual([tierTerm]);
      expect(successor.position.lastSeq).toBe(2);
      // The next leader's term is above it (ClusterNode.learnTerm raised the coordinator's floor): the adoption goes through.
      term = tierTerm + 1;
      expect(await b.adoptTier(20)).toMatchObject({ adopted: { throughSeq: 20, commonSeq: 0, adopted: 20, moved: 2 }, error: null });
      expect(successor.position.lastSeq).toBe(20);
    },
  );

  it.each([
    ['parquet', 'shorter', 5, 20],
    ['parquet', 'different', 30, 30],
    ['iceberg', 'shorter', 5, 20],
    ['iceberg', 'different', 30, 30],
  ] as const)('%s: a log that shares nothing with the tier (a %s one: a node whose data was lost) takes all of it when an admin allows, and orders its own again after it', async (mode, name, events, tieredAfter) => {
    const target = modes[mode](`${name}_${mode}`);
    // The first log tiers its 20 events; a second log, not a copy of it (the same ids, other
    // ingest times), is then pointed at the same target.
    await tieredLog(target);
    const second = await storeWith(events, 10);
    const b = testSweeper({ store: second, connections: s3.connections, catalogs, settings: () => target });
    expect(await b.sweep()).toBe('failed');
    // Refused twice: the tier's watermark is never stored as this log's (retention deletes up to it).
    expect(await b.sweep()).toBe('failed');
    expect((await b.watermark()).seq).toBe(0);
    expect(await b.adoptTier(20)).toMatchObject({ adopted: { commonSeq: 0, adopted: 20, moved: events }, outcome: 'nothing-to-tier' });
    expect(second.position.lastSeq).toBe(20);
    expect(second.outboxCount).toBe(events);
    // Its ids the tier holds are already stored; the rest follow the adopted entries.
    expect(await orderOutbox(second, 1)).toBe(tieredAfter - 20);
    expect(await b.sweep()).toBe(tieredAfter > 20 ? 'tiered' : 'nothing-to-tier');
    expect(await tieredIds(mode, target, tieredAfter)).toEqual(Array.from({ length: tieredAfter }, (_, i) => `e${i}`));
  });

  it.each(['parquet', 'iceberg'] as const)('%s: refuses, and changes nothing, when adopting the tier would take more entries than allowed', async (mode) => {
    const target = modes[mode](`toofar_${mode}`);
    const first = await tieredLog(target);
    const second = await storeWith(30, 10);
    const b = testSweeper({ store: second, connections: s3.connections, catalogs, settings: () => target, adoptEntriesMax: 5 });
    expect(await b.adoptTier(20)).toMatchObject({ adopted: undefined, outcome: 'failed' });
    const { lastError } = await b.status();
    expect(lastError).toContain(`is tiered through seq 20, but this node's entry at that seq was ingested at`);
    expect(lastError).toContain('adopting the tier\'s entries would take more than 5');
    expect(lastError).toContain('tiering stops here until the logs are reconciled');
    expect(second.position.lastSeq).toBe(30);
    expect(second.outboxCount).toBe(0);
    // The first log's 20 events are all the tier holds.
    const again = testSweeper({ store: first, connections: s3.connections, catalogs, settings: () => target });
    expect(await again.sweep()).toBe('nothing-to-tier');
  });

  it.each(['parquet', 'iceberg'] as const)('%s: an erasure the dead leader committed but never applied to the tier is applied to the adopted rows and then to the tier', async (mode) => {
    const target = modes[mode](`erased_${mode}`);
    const dead = await storeWith(0, 10, Date.now() - 2 * HOUR_MS);
    await dead.append([{ ...ev(1), query: 'SELECT secret' }, ev(2)]);
    const a = testSweeper({ store: dead, connections: s3.connections, catalogs, settings: () => target });
    expect(await a.sweep()).toBe('tiered');
    // The dead leader records the erasure of e1's query, commits it to the tier, and dies before rewriting the row.
    const [details] = erasureDetailsChunks(['query'], [{ eventId: 'e1', seq: 1 }]);
    await dead.appendEncoded([encodeEvent({ eventId: 'erase-e1', userId: 'admin', source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, resource: 'events:1', decision: '', tables: [], query: '', details: details as string, timestamp: Date.UTC(2026, 0, 2) })]);
    await a.close();
    const dies = testSweeper({
      store: dead,
      connections: s3.connections,
      catalogs,
      settings: () => target,
      onStep: () => {
        throw new Error('the leader died here');
      },
    });
    expect(await dies.sweep()).toBe('failed');
    expect(await tieredQueries(mode, target)).toEqual(['SELECT secret', '', '']);
    await dies.close();

    // A successor that holds nothing (its data was lost) adopts the tier.
    const successor = await storeWith(0);
    const b = testSweeper({ store: successor, connections: s3.connections, catalogs, settings: () => target, term: () => 2 });
    expect(await b.sweep()).toBe('failed');
    expect((await b.adoptTier(3)).adopted).toMatchObject({ commonSeq: 0, adopted: 3 });
    // The adopted row holds the marker, not the value, and the next sweep rewrites the tier's row.
    expect((await successor.getByEventId('e1'))?.query).toBe('[erased by auditlake]');
    expect(await b.sweep()).toBe('nothing-to-tier');
    expect(await tieredQueries(mode, target)).toEqual(['[erased by auditlake]', '', '']);
  });

  it("iceberg: a version hint left behind the table (a commit whose hint write failed) is moved up by the next sweep, with nothing to tier, so icebird reads every event", async () => {
    const target = modes.iceberg('hint_behind');
    const table = resolveIcebergTable(target.tierIcebergTable, catalogs);
    const objects = s3.connections.bucket('s3', BUCKET);
    const log = await tieredThrough30(target);
    const head = (await loadIcebergTable(objects, table))!;
    await putVersionHint(objects, table, head.version - 1);
    const restore = routeAwsS3To(s3.server.url, CREDENTIALS);
    onTestFinished(restore);
    const distinct = async () => new Set(((await icebergRead({ tableUrl: table.location })) as Array<Record<string, unknown>>).map((row) => row['event_id'])).size;
    expect(await distinct()).toBe(20);
    const s = testSweeper({ store: log, connections: s3.connections, catalogs, settings: () => target });
    expect(await s.sweep()).toBe('nothing-to-tier');
    await s.close();
    expect(new TextDecoder().decode(await objects.get(`${table.s3.prefix}/metadata/version-hint.text`))).toBe(String(head.version));
    expect(await distinct()).toBe(30);
  });

  it('iceberg: after another engine committed on top and a maintenance run expired every older snapshot, the table still says where tiering stopped: a log not the tier\'s is refused, a copy of the log without the watermark goes on from it, every event once', async () => {
    const target = parseSettings({ ...defaultSettings(resolveConfig()), 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'cat.apart.foreign_top', 'audit.tier.connectionId': 's3' });
    const table = resolveIcebergTable(target.tierIcebergTable, catalogs);
    const objects = s3.connections.bucket('s3', BUCKET);
    // Two sweeps, so the run's compaction has files to merge.
    const first = await tieredThrough30(target);
    const parent = currentSnapshot((await loadIcebergTable(objects, table))!.metadata)!;
    await commitForeignSnapshotOnTopOf(objects, table);
    // A run that keeps one snapshot.
    const run = await runIcebergMaintenance(
      { objects, table, fence: { term: 1, mayCommit: () => true }, now: Date.now },
      { snapshotRetainLast: 1, removeOrphanFiles: false, orphanMinAgeMs: HOUR_MS, targetFileSizeBytes: 16 * 1024 * 1024, metadataPreviousVersionsMax: 100 },
    );
    expect(run).toMatchObject({ filesRewritten: 2, filesAdded: 1 });
    expect(run.snapshotsExpired).toBeGreaterThan(0);
    expect((await loadIcebergTable(objects, table))!.metadata.snapshots.some((s) => s['snapshot-id'] === parent['snapshot-id'])).toBe(false);

    await expectOtherLogRefusedAndCopyGoesOn(first, target);
  });

  it("iceberg: after another engine committed on top and expired every snapshot of ours itself, the watermark comes from the live files' seq bounds: a log not the tier's is refused, a copy without the watermark goes on from it, every event once", async () => {
    const target = parseSettings({ ...defaultSettings(resolveConfig()), 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'cat.apart.foreign_expiry', 'audit.tier.connectionId': 's3' });
    const table = resolveIcebergTable(target.tierIcebergTable, catalogs);
    const objects = s3.connections.bucket('s3', BUCKET);
    const first = await tieredThrough30(target);
    const foreign = await commitForeignSnapshotOnTopOf(objects, table);
    // The other engine's own expiry (as Spark's expire_snapshots with retain_last 1): only its
    // snapshot is left, and nothing in the table's metadata says where tiering stopped.
    const expired: IcebergTableMetadata = {
      ...foreign.metadata,
      snapshots: foreign.metadata.snapshots.filter((snapshot) => snapshot['snapshot-id'] === FOREIGN_SNAPSHOT_ID),
      'snapshot-log': foreign.metadata['snapshot-log'].filter((entry) => entry['snapshot-id'] === FOREIGN_SNAPSHOT_ID),
      'metadata-log': [...foreign.metadata['metadata-log'], { 'timestamp-ms': foreign.metadata['last-updated-ms'], 'metadata-file': foreign.metadataPath }],
      'last-updated-ms': Math.max(Date.now(), foreign.metadata['last-updated-ms']),
    };
    await commitMetadataVersion(objects, table, foreign, expired, { term: 1, mayCommit: () => true });
    expect(tableWatermark(await loadIcebergTable(objects, table))).toBeUndefined();

    await expectOtherLogRefusedAndCopyGoesOn(first, target);
    // The sweep's snapshot carries the watermark again.
    expect(tableWatermark(await loadIcebergTable(objects, table))?.seq).toBe(35);
  });

  it('refuses, and changes nothing, to adopt rows of a term not before its own (no honest tier holds them)', async () => {
    const target = modes.parquet('ownterm_parquet');
    const first = await tieredLog(target);
    const second = await storeWith(5, 10);
    const term = first.termAt(20);
    const b = testSweeper({ store: second, connections: s3.connections, catalogs, settings: () => target, term: () => term });
    expect(await b.adoptTier(20)).toMatchObject({ adopted: undefined, outcome: 'failed', error: expect.stringContaining(`has term ${term}, not before this leader's term ${term}`) as unknown });
    expect(second.position.lastSeq).toBe(5);
    expect(second.outboxCount).toBe(0);
  });

  it('a node without a coordinator (term 0 always) adopts its own term\'s rows: the tier\'s record of a log it lost', async () => {
    const target = modes.parquet('soletail_parquet');
    await tieredLog(target);
    // Its log lost all but 5 of them (term 0, like the tier's rows).
    const second = await storeWith(5, 10);
    const b = testSweeper({ store: second, connections: s3.connections, catalogs, settings: () => target, term: () => 0, soleWriter: true });
    expect(await b.sweep()).toBe('failed');
    expect(await b.adoptTier(20)).toMatchObject({ adopted: { adopted: 20, moved: 5 }, outcome: 'nothing-to-tier' });
    expect(second.position.lastSeq).toBe(20);
    // A row of a later term than the node's is still refused.
    const later = await storeWith(5, 10);
    const c = testSweeper({ store: later, connections: s3.connections, catalogs, settings: () => target, term: () => -1, soleWriter: true });
    expect(await c.adoptTier(20)).toMatchObject({ adopted: undefined, outcome: 'failed', error: expect.stringContaining('has term 0, not before this leader\'s term -1') as unknown });
  });

  it('adopts from a target whose rows start above seq 1 (tiered to another target before)', async () => {
    const earlier = modes.parquet('before_parquet');
    const later = modes.parquet('later_parquet');
    let target = earlier;
    const dead = await storeWith(30, 10, Date.now() - 2 * HOUR_MS);
    const a = testSweeper({ store: dead, connections: s3.connections, catalogs, settings: () => target, batchSizeMax: 10 });
    expect(await a.sweep()).toBe('tiered-full');
    target = later;
    while ((await a.sweep()) !== 'tiered');
    expect((await a.watermark()).seq).toBe(30);
    await a.close();
    // The later target holds seqs 11..30 only; the successor received 1..15 and ordered two of its own.
    const successor = await replicaOf(dead, 15);
    await successor.append([ev(100), ev(101)], { sequencer: () => 2 });
    const b = testSweeper({ store: successor, connections: s3.connections, catalogs, settings: () => later, term: () => 2 });
    expect(await b.adoptTier(30)).toMatchObject({ adopted: { commonSeq: 15, adopted: 15, moved: 2 }, outcome: 'nothing-to-tier' });
    expect(Buffer.concat(await successor.readEncodedBySeq(0, 30)).equals(Buffer.concat(await dead.readEncodedBySeq(0, 30)))).toBe(true);
  });

  it('after an adoption the next scheduled sweep is due at once, not after the failed sweeps\' backoff', async () => {
    const target = modes.parquet('soon_parquet');
    await tieredLog(target);
    const b = testSweeper({ store: await storeWith(5, 10), connections: s3.connections, catalogs, settings: () => target });
    b.start();
    expect(await b.sweep()).toBe('failed');
    expect((await b.status()).nextAttemptMs).toBeGreaterThan(Date.now() + HOUR_MS / 2);
    expect((await b.adoptTier(20)).adopted).toBeDefined();
    expect((await b.status()).nextAttemptMs).toBeLessThanOrEqual(Date.now());
  });

  /** Every object key under the target's location (its data, commits, metadata): what "nothing written there" is checked by. */
  async function keysAt(mode: keyof typeof modes, target: EffectiveSettings): Promise<string[]> {
    const prefix = mode === 'parquet' ? target.tierParquetPath.slice(`s3://${BUCKET}/`.length) : resolveIcebergTable(target.tierIcebergTable, catalogs).s3.prefix;
    return (await s3.connections.bucket('s3', BUCKET).list(`${prefix}/`)).sort();
  }

  /** The path or table a target names, as tieredLocations and the messages name it. */
  const pathOf = (target: EffectiveSettings): string => (target.tierMode === 'parquet' ? target.tierParquetPath : target.tierIcebergTable);

  it.each(['parquet', 'iceberg'] as const)(
    "%s: a target changed to a location holding another log's history (its newest row at a seq this log holds, with another chain hash) is refused before anything is written there; the other log goes on tiering there, and this one at its own location",
    async (mode) => {
      // Prod tiered its 20 events to its location; staging tiered 40 of its own (the same ids,
      // other ingest times: another history) to its own, and 10 more wait.
      const prodTarget = modes[mode](`prod_${mode}`);
      const stagingTarget = modes[mode](`staging_${mode}`);
      const prod = await tieredLog(prodTarget);
      const staging = await storeWith(40, 10);
      let target = stagingTarget;
      const s = testSweeper({ store: staging, connections: s3.connections, catalogs, settings: () => target });
      expect(await s.sweep()).toBe('tiered');
      await staging.append(Array.from({ length: 10 }, (_, i) => ev(40 + i)));
      const prodKeys = await keysAt(mode, prodTarget);
      const term = await staging.getMeta(WATERMARK_TERM_META);
      // The operator's mistake: staging's target is changed to prod's.
      target = prodTarget;
      expect(await s.sweep()).toBe('failed');
      const { lastError } = await s.status();
      const [prodRow, stagingEntry] = [await prod.getBySeq(20), await staging.getBySeq(20)];
      expect(lastError).toContain(`${pathOf(prodTarget)} holds another log's history, not this node's: its newest tiered row, seq 20, has chain hash ${prodRow!.chainHash!.slice(0, 12)}…, this node's entry at that seq ${stagingEntry!.chainHash!.slice(0, 12)}…`);
      expect(lastError).toContain(`nothing was written to it, and tiering stops until ${mode === 'parquet' ? 'audit.tier.parquet.path' : 'audit.tier.iceberg.table'} names a location of this cluster's own`);
      // Refused again at the next sweep (a refusal is not remembered as checked), and nothing changed anywhere.
      expect(await s.sweep()).toBe('failed');
      expect(await keysAt(mode, prodTarget)).toEqual(prodKeys);
      expect((await s.watermark()).seq).toBe(40);
      expect(await staging.getMeta(WATERMARK_TERM_META)).toBe(term);
      expect((await readTieredLocations(staging)).map((location) => location.path)).toEqual([pathOf(stagingTarget)]);
      // Prod goes on tiering at its location, every event once and only its own.
      await prod.append(Array.from({ length: 5 }, (_, i) => ev(20 + i)));
      const p = testSweeper({ store: prod, connections: s3.connections, catalogs, settings: () => prodTarget });
      expect(await p.sweep()).toBe('tiered');
      expect((await p.watermark()).seq).toBe(25);
      const source = tierSourceOf(mode, prodTarget);
      const rows = await readTieredSuffix(source, 0, 25);
      expect(rows.map((row) => row.chainHash)).toEqual((await prod.readBySeq(0, 25)).map((entry) => entry.chainHash));
      // Nor does staging's table maintenance touch prod's location, registered as its target:
      // it has tiered nothing there (a run compacted prod's Iceberg table, review). Prod's two
      // commits there are what a run would compact and expire.
      const maintenance = new MaintenanceScheduler({
        store: staging,
        connections: s3.connections,
        catalogs,
        settings: () => ({ ...target, maintenanceEnabled: true, maintenanceSnapshotRetainLast: 1 }),
        isLeader: () => true,
        term: () => 1,
        log: { info: () => undefined, warn: () => undefined },
      });
      onTestFinished(() => maintenance.close());
      await maintenance.refresh();
      const prodKeysNow = await keysAt(mode, prodTarget);
      const [run] = await maintenance.runNow('test', pathOf(prodTarget));
      expect(run).toMatchObject({ ok: true, filesRewritten: 0, snapshotsExpired: 0, filesDeleted: 0 });
      expect(await keysAt(mode, prodTarget)).toEqual(prodKeysNow);
      // Pointed back at its own location, staging goes on there.
      target = stagingTarget;
      expect(await s.sweep()).toBe('tiered');
      expect((await s.watermark()).seq).toBe(50);
      expect(await tieredIds(mode, stagingTarget, 50)).toEqual(Array.from({ length: 50 }, (_, i) => `e${i}`));
    },
  );

  it.each(['parquet', 'iceberg'] as const)(
    "%s: where retention deleted the local copy of another log's newest row there, the kept chain hash or the term tells it, or else its rows cannot be shown to be this log's: refused, nothing written",
    async (mode) => {
      const prodTarget = modes[mode](`prod_pruned_${mode}`);
      const prod = await tieredLog(prodTarget);
      const prodKeys = await keysAt(mode, prodTarget);
      const pointedAtProd = async (store: AuditStore): Promise<string> => {
        const s = testSweeper({ store, connections: s3.connections, catalogs, settings: () => modes[mode](`staging_pruned_${mode}_${store.position.lastSeq}`) });
        expect(await s.sweep()).toBe('tiered');
        await s.close();
        const t = testSweeper({ store, connections: s3.connections, catalogs, settings: () => prodTarget });
        expect(await t.sweep()).toBe('failed');
        return (await t.status()).lastError ?? '';
      };
      // Deleted through seq 20 exactly: the store kept the chain hash at the end of that range.
      const anchored = await storeWith(40, 10);
      await anchored.pruneBefore(Date.UTC(2026, 0, 1) + 20, 100, async () => true);
      expect(await anchored.getBySeq(20)).toBeUndefined();
      expect(await pointedAtProd(anchored)).toContain(`its newest tiered row, seq 20, has chain hash ${(await prod.getBySeq(20))!.chainHash!.slice(0, 12)}…, the one this node kept when its retention deleted that seq`);
      // Deleted through seq 25, its own entries of another term: the term tells it.
      const otherTerm = await storeWith(0);
      await otherTerm.append(Array.from({ length: 41 }, (_, i) => ev(i)), { sequencer: () => 7 });
      await otherTerm.pruneBefore(Date.UTC(2026, 0, 1) + 25, 100, async () => true);
      expect(await pointedAtProd(otherTerm)).toContain(`its newest tiered row, seq 20, has term ${prod.termAt(20)}, this node's entry at that seq (deleted by its retention) term 7`);
      // Deleted through seq 25 in the same term: nothing kept tells, and this log never tiered there.
      const unknown = await storeWith(42, 10);
      await unknown.pruneBefore(Date.UTC(2026, 0, 1) + 25, 100, async () => true);
      expect(await pointedAtProd(unknown)).toContain(`${pathOf(prodTarget)} holds tiered rows through seq 20, whose entry this node's retention has deleted, and this log never tiered there: its rows cannot be shown to be this log's history`);
      // Never tiered at all (its retention deleted through seq 25 with tiering off): prod's rows
      // lie past its watermark (0), where they were compared only with entries it still held.
      const neverTiered = await storeWith(42, 10);
      await neverTiered.pruneBefore(Date.UTC(2026, 0, 1) + 25, 100, async () => true);
      const first = testSweeper({ store: neverTiered, connections: s3.connections, catalogs, settings: () => prodTarget });
      expect(await first.sweep()).toBe('failed');
      expect((await first.status()).lastError).toContain(`${pathOf(prodTarget)} is tiered through seq 20, but its row at seq 20, past this node's watermark (seq 0), is one whose entry this node's retention deleted while tiering was off, and this log never tiered there, so nothing shows it is this log's`);
      // The way on is the adoption's, for an admin who checked the tier (a failover's successor
      // whose own retention ran further than its dead leader's meets this refusal too).
      expect((await first.status()).lastError).toContain('POST /admin/audit/tier/adopt {"throughSeq": 20}');
      expect((await first.watermark()).seq).toBe(0);
      expect(await readTieredLocations(neverTiered)).toEqual([]);
      expect(await keysAt(mode, prodTarget)).toEqual(prodKeys);
      expect(await first.adoptTier(20)).toMatchObject({ adopted: { throughSeq: 20 }, error: null });
      expect((await readTieredLocations(neverTiered)).map((location) => location.path)).toEqual([pathOf(prodTarget)]);
    },
  );

  it.each(['parquet', 'iceberg'] as const)(
    '%s: a target changed away and back goes on at the location this log tiered to before — after a restart, and once retention deleted the local copy of its newest row',
    async (mode) => {
      const a = modes[mode](`away_a_${mode}`);
      const b = modes[mode](`away_b_${mode}`);
      const store = await storeWith(30, 10, Date.now() - 2 * HOUR_MS);
      let target = a;
      const s = testSweeper({ store, connections: s3.connections, catalogs, settings: () => target, batchSizeMax: 10 });
      expect(await s.sweep()).toBe('tiered-full');
      target = b;
      while ((await s.sweep()) !== 'tiered');
      expect((await s.watermark()).seq).toBe(30);
      // Back to a, in the same process: it goes on there.
      await store.append(Array.from({ length: 10 }, (_, i) => ev(30 + i)));
      target = a;
      expect(await s.sweep()).toBe('tiered');
      expect((await s.watermark()).seq).toBe(40);
      await s.close();
      // Away to b again and back after a restart, retention having deleted a's newest row (seq 40) here.
      target = b;
      await store.append(Array.from({ length: 10 }, (_, i) => ev(40 + i)));
      const restarted = testSweeper({ store, connections: s3.connections, catalogs, settings: () => target });
      expect(await restarted.sweep()).toBe('tiered');
      await restarted.close();
      await store.pruneBefore(Date.UTC(2026, 0, 1) + 45, 100, async () => true);
      expect(await store.getBySeq(40)).toBeUndefined();
      await store.append(Array.from({ length: 5 }, (_, i) => ev(50 + i)));
      target = a;
      const again = testSweeper({ store, connections: s3.connections, catalogs, settings: () => target });
      expect(await again.sweep()).toBe('tiered');
      expect((await again.watermark()).seq).toBe(55);
      const source = tierSourceOf(mode, a);
      const seqs = (await Promise.all((await source.listFiles()).map(async (file) => readWholeAuditParquet(await source.open(file))))).flat().map((row) => row.seq);
      expect(seqs.sort((x, y) => (x ?? 0) - (y ?? 0))).toEqual([...Array.from({ length: 10 }, (_, i) => i + 1), ...Array.from({ length: 10 }, (_, i) => 31 + i), ...Array.from({ length: 5 }, (_, i) => 51 + i)]);
    },
  );

  it.each(['parquet', 'iceberg'] as const)(
    '%s: a target set back to a place this log tiered to, named another way (another spelling, a second connection to its endpoint, a second catalog over its warehouse), goes on there once retention deleted the local copy of its newest row',
    async (mode) => {
      // Credentials rotated under a new connection id: the same endpoint, so the same buckets.
      const connections = new S3Connections(new Map([...s3.connectionConfigs(), ['s3-rotated', { ...s3.connectionConfigs().get('s3')!, id: 's3-rotated' }]]));
      onTestFinished(() => connections.close());
      const aliasCatalogs = new Map([...catalogs, ['cat2', { name: 'cat2', warehouse: `s3://${BUCKET}/warehouse/`, connectionId: 's3-rotated' }]]);
      const a = modes[mode](`alias_a_${mode}`);
      const aElsewhere = namedThroughRotated(mode, `alias_a_${mode}`);
      const b = modes[mode](`alias_b_${mode}`);
      const store = await storeWith(20, 10, Date.now() - 2 * HOUR_MS);
      let target = a;
      const s = testSweeper({ store, connections, catalogs: aliasCatalogs, settings: () => target });
      expect(await s.sweep()).toBe('tiered');
      target = b;
      await store.append(Array.from({ length: 10 }, (_, i) => ev(20 + i)));
      expect(await s.sweep()).toBe('tiered');
      await s.close();
      // Retention deletes a's newest row here (seq 20); then the target names a again, another way.
      await store.pruneBefore(Date.UTC(2026, 0, 1) + 25, 100, async () => true);
      expect(await store.getBySeq(20)).toBeUndefined();
      await store.append(Array.from({ length: 5 }, (_, i) => ev(30 + i)));
      target = aElsewhere;
      const again = testSweeper({ store, connections, catalogs: aliasCatalogs, settings: () => target });
      expect(await again.sweep()).toBe('tiered');
      expect((await again.status()).lastError).toBeNull();
      expect((await again.watermark()).seq).toBe(35);
      const source = tierSourceOf(mode, a);
      const seqs = (await Promise.all((await source.listFiles()).map(async (file) => readWholeAuditParquet(await source.open(file))))).flat().map((row) => row.seq);
      expect(seqs.sort((x, y) => (x ?? 0) - (y ?? 0))).toEqual([...Array.from({ length: 20 }, (_, i) => i + 1), ...Array.from({ length: 5 }, (_, i) => 31 + i)]);
      // Maintenance registers the place once, under the name the settings give it now (it
      // registered a and its other name, and two runs maintained one table).
      const maintenance = new MaintenanceScheduler({
        store,
        connections,
        catalogs: aliasCatalogs,
        settings: () => ({ ...target, maintenanceEnabled: true }),
        isLeader: () => true,
        term: () => 1,
        log: { info: () => undefined, warn: () => undefined },
      });
      onTestFinished(() => maintenance.close());
      await maintenance.refresh();
      expect(maintenance.registrations().map((registration) => registration.table).sort()).toEqual([pathOf(aElsewhere), pathOf(b)].sort());
      // Another log is still refused there, whatever the place is called.
      const elsewhere = await storeWith(42, 10);
      await elsewhere.pruneBefore(Date.UTC(2026, 0, 1) + 25, 100, async () => true);
      const stranger = testSweeper({ store: elsewhere, connections, catalogs: aliasCatalogs, settings: () => aElsewhere });
      expect(await stranger.sweep()).toBe('failed');
      expect((await stranger.status()).lastError).toContain('those seqs were tiered from a log this node does not hold');
    },
  );

  it.each(['parquet', 'iceberg'] as const)(
    '%s: a place tiered to stays known once its connection is removed (credentials rotated, the old id dropped): recorded with its endpoint, filled in for what an older version recorded',
    async (mode) => {
      const rotatedConfig = { ...s3.connectionConfigs().get('s3')!, id: 's3-rotated' };
      const rotatedOnly = new S3Connections(new Map([['s3-rotated', rotatedConfig]]));
      onTestFinished(() => rotatedOnly.close());
      const rotatedCatalogs = new Map([['cat2', { name: 'cat2', warehouse: `s3://${BUCKET}/warehouse/`, connectionId: 's3-rotated' }]]);
      const a = modes[mode](`gone_a_${mode}`);
      const aRotated = namedThroughRotated(mode, `gone_a_${mode}`);
      const b = modes[mode](`gone_b_${mode}`);
      const store = await storeWith(20, 10, Date.now() - 2 * HOUR_MS);
      let target = a;
      const s = testSweeper({ store, connections: s3.connections, catalogs, settings: () => target });
      expect(await s.sweep()).toBe('tiered');
      expect((await readTieredLocations(store)).map((location) => location.endpoint)).toEqual([s3.connections.endpointOf('s3')]);
      // What an older version recorded: no endpoint. The next commit fills it in.
      await store.putMeta({ [TIERED_LOCATIONS_META]: (await readTieredLocations(store)).map(({ endpoint: _endpoint, ...described }) => described) });
      target = b;
      await store.append(Array.from({ length: 10 }, (_, i) => ev(20 + i)));
      expect(await s.sweep()).toBe('tiered');
      await s.close();
      expect((await readTieredLocations(store)).map((location) => [location.path, location.endpoint])).toEqual([pathOf(a), pathOf(b)].map((path) => [path, s3.connections.endpointOf('s3')]));
      // Retention deletes a's newest row here; the old connection is removed and a named through the new one.
      await store.pruneBefore(Date.UTC(2026, 0, 1) + 25, 100, async () => true);
      expect(await store.getBySeq(20)).toBeUndefined();
      await store.append(Array.from({ length: 5 }, (_, i) => ev(30 + i)));
      target = aRotated;
      const again = testSweeper({ store, connections: rotatedOnly, catalogs: rotatedCatalogs, settings: () => target });
      expect(await again.sweep()).toBe('tiered');
      expect((await again.status()).lastError).toBeNull();
      expect((await again.watermark()).seq).toBe(35);
    },
  );

  it.each(['parquet', 'iceberg'] as const)("%s: a new leader whose log holds the tier's rows (the same hashes) goes on at the same location after a failover", async (mode) => {
    const target = modes[mode](`failover_${mode}`);
    const first = await tieredThrough30(target);
    // The standby received the leader's log and its replicated tier metadata, then leads in term 2.
    const standby = await replicaOf(first, 30);
    await standby.putMeta({ [WATERMARK_META]: await first.getMeta(WATERMARK_META), [TIERED_LOCATIONS_META]: await readTieredLocations(first) });
    await standby.append(Array.from({ length: 5 }, (_, i) => ev(30 + i)), { sequencer: () => 2 });
    const s = testSweeper({ store: standby, connections: s3.connections, catalogs, settings: () => target, term: () => 2 });
    expect(await s.sweep()).toBe('tiered');
    expect((await s.watermark()).seq).toBe(35);
    expect(await tieredIds(mode, target, 35)).toEqual(Array.from({ length: 35 }, (_, i) => `e${i}`));
  });

  it('goes on from a watermark whose entry retention has since deleted', async () => {
    const store = await storeWith(30, 10, Date.now() - 2 * HOUR_MS);
    const target = settings('apart/pruned');
    const s = testSweeper({ store, connections: s3.connections, catalogs, settings: () => target, batchSizeMax: 20 });
    expect(await s.sweep()).toBe('tiered-full');
    await store.pruneBefore(Date.UTC(2026, 0, 1) + 20, 100, async () => true);
    expect(await store.getBySeq(20)).toBeUndefined();
    expect(await s.sweep()).toBe('tiered');
    expect((await s.watermark()).seq).toBe(30);
  });

  for (const checkpointed of [false, true]) {
    it(`a leader crashed after a commit its watermark never replicated; its successor tiered elsewhere and then back: it goes on where the location's log ends${checkpointed ? ' (a checkpoint past its watermark says where)' : ''}, every event once`, async () => {
      const name = checkpointed ? 'crashed-checkpointed' : 'crashed';
      const back = settings(`apart/${name}`);
      const away = settings(`apart/${name}-away`);
      const a = await storeWith(60, 10, Date.now() - 2 * HOUR_MS);
      const leader = testSweeper({ store: a, connections: s3.connections, catalogs, settings: () => back, batchSizeMax: 20, parquetCheckpointEveryCommits: checkpointed ? 2 : 1_000 });
      expect(await leader.sweep()).toBe('tiered-full');
      // The successor's copy of the log holds the watermark of the first commit (seq 20) only.
      const b = await replicaOf(a, 60);
      await b.putMeta({ [WATERMARK_META]: await leader.watermark(), [WATERMARK_TERM_META]: 1 });
      expect(await leader.sweep()).toBe('tiered-full');
      await leader.close();
      const objects = s3.connections.bucket('s3', BUCKET);
      const location = { bucket: BUCKET, prefix: `apart/${name}` };
      expect((await readNewestCheckpoint(objects, location))?.checkpoint.watermark.seq).toBe(checkpointed ? 40 : undefined);
      // The successor tiers 21..30 elsewhere, then is switched back, tiering 20 a batch.
      const elsewhere = testSweeper({ store: b, connections: s3.connections, catalogs, settings: () => away, term: () => 2, batchSizeMax: 10 });
      expect(await elsewhere.sweep()).toBe('tiered-full');
      await elsewhere.close();
      expect((await b.getMeta<{ seq: number }>(WATERMARK_META))?.seq).toBe(30);
      const successor = testSweeper({ store: b, connections: s3.connections, catalogs, settings: () => back, term: () => 2, batchSizeMax: 20 });
      while ((await successor.sweep()) !== 'nothing-to-tier');
      expect((await successor.watermark()).seq).toBe(60);
      // What every reader of the location reads (from its newest checkpoint, if any): seqs 1..60, each once.
      const [counts] = await duckdbOverLiveParquet(s3.connections, { path: back.tierParquetPath, connectionId: 's3' }, s3.dir, 'SELECT count(*)::INT AS n, count(DISTINCT seq)::INT AS d, min(seq)::INT AS lo, max(seq)::INT AS hi FROM {files}');
      expect(counts).toEqual({ n: 60, d: 60, lo: 1, hi: 60 });
      const full = await readParquetLog(objects, location, undefined, { fromCheckpoint: false });
      expect(full.markers.reduce((n, marker) => n + marker.files.reduce((m, file) => m + file.rows, 0), 0)).toBe(60);
    });
  }

  it('a leader whose log read missed commits packed away while it followed (its first commit is refused: a pack holds the key) reads the location afresh and goes on from its end', async () => {
    const target = settings('apart/packed-meanwhile');
    const objects = s3.connections.bucket('s3', BUCKET);
    const location = { bucket: BUCKET, prefix: 'apart/packed-meanwhile' };
    const a = await storeWith(40, 10, Date.now() - 2 * HOUR_MS);
    let term = 1;
    const first = testSweeper({ store: a, connections: s3.connections, catalogs, settings: () => target, term: () => term, batchSizeMax: 20 });
    expect(await first.sweep()).toBe('tiered-full');
    // Another leader, on a copy of the log, tiers 21..40 and maintenance packs its marker away.
    const b = await replicaOf(a, 40);
    await b.putMeta({ [WATERMARK_META]: await first.watermark(), [WATERMARK_TERM_META]: 1 });
    const other = testSweeper({ store: b, connections: s3.connections, catalogs, settings: () => target, term: () => 2, batchSizeMax: 20 });
    expect(await other.sweep()).toBe('tiered');
    await other.close();
    const fence = { term: 2, mayCommit: () => true };
    await writeParquetCheckpoint({ objects, location, fence, now: Date.now }, 1);
    await packParquetMarkers({ objects, location, fence, now: Date.now }, 0, { packSize: 1, perRunMax: 100 });
    await packParquetMarkers({ objects, location, fence, now: () => Date.now() + 10_000 }, 0, { packSize: 1, perRunMax: 100 });
    expect(await objects.list(`${location.prefix}/_auditlake/commits/`)).toEqual([]);
    // The first leader again: its cached log read (read again within KNOWN_LOG_STALE_MS: the orphan
    // age is 0 here, so the pack could go that soon) lists no loose marker after the one it knew.
    term = 3;
    expect(await first.sweep()).toBe('failed');
    expect((await first.status()).lastError).toContain('commit lost');
    expect(await first.sweep()).toBe('nothing-to-tier');
    expect((await first.watermark()).seq).toBe(40);
  });
});

const FOREIGN_SNAPSHOT_ID = 987_654_321;

/** Another engine's commit on top of the table's current version. */
async function commitForeignSnapshotOnTopOf(objects: ObjectStore, table: IcebergTableRef): Promise<LoadedTable> {
  return commitForeignSnapshotOnTop(objects, table, (await loadIcebergTable(objects, table))!, FOREIGN_SNAPSHOT_ID);
}

describe('TierSweeper, Parquet log checkpoints', () => {
  it.each([false, true])('with maintenance %s, superseded checkpoints are deleted by the sweep once their successors are past the orphan age (off) or left to maintenance (on)', async (maintenanceEnabled) => {
    const { LOG_CHECKPOINTS_KEPT } = await import('@auditlake/lake');
    const store = await storeWith(50, 10);
    const path = `checkpoints-maintenance-${String(maintenanceEnabled)}`;
    const target = { ...settings(path), maintenanceEnabled, maintenanceOrphanMinAgeMs: HOUR_MS };
    // The node's and the store's clocks both two hours on: every checkpoint written is past the orphan age.
    const s = testSweeper({ store, connections: s3.connections, catalogs: new Map(), settings: () => target, batchSizeMax: 10, parquetCheckpointEveryCommits: 1, now: () => Date.now() + 2 * HOUR_MS, storeClock: { offsetMs: 2 * HOUR_MS } });
    const objects = s3.connections.bucket('s3', BUCKET);
    const location = { bucket: BUCKET, prefix: path };
    const checkpoints = async () => (await objects.list(`${path}/_auditlake/checkpoints/`)).length;
    for (let i = 1; i <= 5; i++) {
      expect(await s.sweep()).toMatch(/^tiered/);
      // One checkpoint at a time: each commit's is written before the next commit.
      await expect.poll(async () => (await readNewestCheckpoint(objects, location))?.checkpoint.watermark.seq, { timeout: 10_000 }).toBe(i * 10);
      // ...and, with maintenance off, its deletes (which hold the checkpoint turn) before the next commit.
      if (!maintenanceEnabled) await expect.poll(checkpoints, { timeout: 10_000 }).toBe(Math.min(i, LOG_CHECKPOINTS_KEPT));
    }
    await s.close();
    expect(await checkpoints()).toBe(maintenanceEnabled ? 5 : LOG_CHECKPOINTS_KEPT);
    // What remains still reads every event.
    const tier = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/${path}`, connectionId: 's3' });
    onTestFinished(() => tier.close());
    expect((await tier.listFiles()).reduce((n, f) => n + f.rows, 0)).toBe(50);
  });

  it('with maintenance off, a close() while the sweep deletes a backlog of superseded checkpoints sends no further delete and does not wait for the backlog', async () => {
    const { ObjectStore: Store, checkpointKey } = await import('@auditlake/lake');
    const { readNewestCheckpoint: newest } = await import('@auditlake/lake');
    const store = await storeWith(400, 10);
    const path = 'checkpoints-backlog';
    const location = { bucket: BUCKET, prefix: path };
    const objects = s3.connections.bucket('s3', BUCKET);
    let closing = false;
    let sentAfterClose = 0;
    let sent = 0;
    // eslint-disable-next-line @typescript-eslint/unbound-method -- called back with its own `this` below
    const original = Store.prototype.delete;
    Store.prototype.delete = async function (this: InstanceType<typeof Store>, key: string) {
      if (key.includes('/_auditlake/checkpoints/')) {
        sent++;
        if (closing) sentAfterClose++;
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
      return original.call(this, key);
    };
    onTestFinished(() => {
      Store.prototype.delete = original;
    });
    const target = { ...settings(path), maintenanceEnabled: false, maintenanceOrphanMinAgeMs: HOUR_MS };
    const s = testSweeper({ store, connections: s3.connections, catalogs: new Map(), settings: () => target, batchSizeMax: 200, parquetCheckpointEveryCommits: 1, now: () => Date.now() + 2 * HOUR_MS, storeClock: { offsetMs: 2 * HOUR_MS } });
    expect(await s.sweep()).toMatch(/^tiered/);
    await expect.poll(async () => (await newest(objects, location))?.checkpoint.watermark.seq, { timeout: 10_000 }).toBe(200);
    // A location that had maintenance off for long: 150 superseded checkpoints (older seqs than the first).
    for (let seq = 1; seq <= 150; seq++) await objects.put(checkpointKey(location, seq), '{}', 'application/json');
    expect(await s.sweep()).toMatch(/^tiered/);
    await expect.poll(() => sent, { timeout: 10_000 }).toBeGreaterThan(0);
    closing = true;
    await s.close();
    expect(sentAfterClose).toBe(0);
    // The rest is left for the next checkpoint's deletes.
    expect((await objects.list(`${path}/_auditlake/checkpoints/`)).length).toBeGreaterThan(100);
  });

  it('starts a checkpoint of the log every few commits in the background: a sweep never waits for it', async () => {
    const { ObjectStore: Store, readNewestCheckpoint, readParquetLog, liveParquetFiles, checkParquetCheckpoint } = await import('@auditlake/lake');
    const store = await storeWith(60, 10);
    // Every checkpoint create is held until the test lets it go.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held = 0;
    // eslint-disable-next-line @typescript-eslint/unbound-method -- called back with its own `this` below
    const original = Store.prototype.putIfAbsent;
    Store.prototype.putIfAbsent = async function (this: ObjectStore, key: string, body: Uint8Array | string, type: string) {
      if (key.includes('/_auditlake/checkpoints/')) {
        held++;
        await gate;
      }
      return original.call(this, key, body, type);
    };
    onTestFinished(() => {
      Store.prototype.putIfAbsent = original;
    });
    const s = sweeper(store, 'checkpointed', { batchSizeMax: 10, parquetCheckpointEveryCommits: 2 });
    // Six commits go through while the first checkpoint try waits to be written.
    for (let i = 0; i < 6; i++) expect(await s.sweep()).toMatch(/^tiered/);
    await expect.poll(() => held).toBe(1);
    const objects = s3.connections.bucket('s3', BUCKET);
    const location = { bucket: BUCKET, prefix: 'checkpointed' };
    expect(await readNewestCheckpoint(objects, location)).toBeUndefined();
    release();
    await expect.poll(async () => (await readNewestCheckpoint(objects, location))?.checkpoint.watermark.seq, { timeout: 10_000 }).toBeGreaterThanOrEqual(20);
    const full = await readParquetLog(objects, location, undefined, { fromCheckpoint: false });
    expect(await checkParquetCheckpoint(objects, location, full)).toBeDefined();
    const tier = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/checkpointed`, connectionId: 's3' });
    onTestFinished(() => tier.close());
    const files = await tier.listFiles();
    expect(files.map((f) => f.key).sort()).toEqual(liveParquetFiles(full).files.map((f) => f.key).sort());
    expect(files.reduce((n, f) => n + f.rows, 0)).toBe(60);
  });
});
