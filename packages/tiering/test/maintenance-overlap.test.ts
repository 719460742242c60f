// Goal: a maintenance run and the sweep share the node's commit lock and encoder pool, and each step of a run holds the lock for one turn only — a sweep asked for while a run reads and encodes its compaction commits at once (it does not wait for the run), and a run whose every turn comes right after a sweep's commit, under back-to-back sweeps, finishes with no failed step and no lost commit; icebird reads every event exactly once with the watermark at the last tiered event.
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { S3Connections, TIERED_LOCATIONS_META, TierEncodePool, currentManifests, joinKey, loadIcebergTable, resolveIcebergTable, tableWatermark, type ObjectStore } from '@auditlake/lake';
import { defaultSettings, parseSettings, resolveConfig, type AuditEvent, type EffectiveSettings } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { icebergRead } from 'icebird';
import { describe, expect, it, onTestFinished } from 'vitest';
import { routeAwsS3To, useEmbeddedS3 } from '@auditlake/lake/testing';
import { COMPACTION_DEFERRAL_MAX_MS, CommitLock, MaintenanceScheduler, TierSweeper, type MaintenanceRun } from '../src/index.js';
import { SteppedClock } from './stepped-cron-clock.js';

const BUCKET = 'overlap';
const HOUR_MS = 3_600_000;
const CREDENTIALS = { accessKeyId: 'ALOVERLAPTEST0000001', secretAccessKey: 'overlap-test-secret-0123456789abcdefgh' };
const TABLE = 'cat.ns.overlap_events';
const s3 = useEmbeddedS3('maintenance-overlap-', BUCKET, CREDENTIALS);
const catalogs = new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/warehouse`, connectionId: 's3' }]]);

function settings(overrides: Record<string, string> = {}): EffectiveSettings {
  return parseSettings({
    ...defaultSettings(resolveConfig()),
    'audit.tier.mode': 'iceberg',
    'audit.tier.iceberg.table': TABLE,
    'audit.tier.connectionId': 's3',
    // Never by cron during the test: runs are asked for.
    'audit.tier.maintenance.cron': '0 0 1 1 *',
    ...overrides,
  });
}

/** S3 connections that count commits made and lost: `v<N>.metadata.json` creates, and those refused because the version was taken. */
class LostCommitCounter extends S3Connections {
  committed = 0;
  lost = 0;

  override bucket(id: string, bucket: string): ObjectStore {
    const objects = super.bucket(id, bucket);
    const putIfAbsent = objects.putIfAbsent.bind(objects);
    objects.putIfAbsent = async (key, body, contentType) => {
      const created = await putIfAbsent(key, body, contentType);
      if (key.endsWith('.metadata.json')) {
        if (created) this.committed++;
        else this.lost++;
      }
      return created;
    };
    return objects;
  }
}

/**
 * The node's commit lock as maintenance sees it, with a sweep committed at the start of every
 * turn (by a second sweeper over the same store and table, inside the turn): each step then
 * finds the table moved since it last read it, the worst a back-to-back sweep can do.
 */
class SweepFirstLock extends CommitLock {
  readonly #shared: CommitLock;
  readonly #sweep: () => Promise<unknown>;
  /** Turns this lock gave maintenance (each after a sweep). */
  sweptTurns = 0;

  constructor(shared: CommitLock, sweep: () => Promise<unknown>) {
    super();
    this.#shared = shared;
    this.#sweep = sweep;
  }

  override run<T>(fn: () => Promise<T>): Promise<T> {
    return this.#shared.run(async () => {
      this.sweptTurns++;
      await this.#sweep();
      return fn();
    });
  }
}

/** When `table`'s cron fires next on `scheduler`. */
function nextRunMs(scheduler: MaintenanceScheduler, table: string): number {
  const next = scheduler.registrations().find((registration) => registration.table === table)?.nextRunMs;
  if (next == null) throw new Error(`no cron registered for ${table}`);
  return next;
}

function ev(i: number): AuditEvent {
  return { eventId: `e${i}`, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp: Date.UTC(2026, 0, 1) + i };
}

/** icebird's count of rows and distinct event ids, its s3:// requests routed to the endpoint, signed. */
async function icebird(location: string): Promise<{ rows: number; distinct: number }> {
  const restore = routeAwsS3To(s3.server.url, CREDENTIALS);
  try {
    const rows = (await icebergRead({ tableUrl: location })) as Array<Record<string, unknown>>;
    return { rows: rows.length, distinct: new Set(rows.map((r) => r['event_id'])).size };
  } finally {
    restore();
  }
}

describe('maintenance beside the sweep', () => {
  it('a sweep asked for while a run reads and encodes its compaction commits without waiting for the run; the swap then lands on the sweep\'s version; every event is read once', async () => {
    let ingestMs = Date.now() - HOUR_MS;
    const store = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => ingestMs });
    onTestFinished(() => store.close());
    // One same-millisecond group of 10 per append: batches of 20 cut at group boundaries.
    for (let i = 0; i < 200; i += 10) {
      await store.append(Array.from({ length: 10 }, (_, j) => ev(i + j)));
      ingestMs++;
    }
    const encoder = new TierEncodePool();
    onTestFinished(() => encoder.close());
    const commitLock = new CommitLock();
    const log = { info: () => undefined, warn: () => undefined };
    const common = { store, connections: s3.connections, catalogs, settings, isLeader: () => true, term: () => 1, log, commitLock, encoder };
    const sweeper = new TierSweeper({ ...common, intervalMs: HOUR_MS, batchSizeMax: 20, settleMs: 0, backoffInitialMs: HOUR_MS, backoffMaxMs: HOUR_MS });
    onTestFinished(() => sweeper.close());
    let paused = false;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const scheduler = new MaintenanceScheduler({
      ...common,
      onStep: (step) => {
        if (step !== 'compaction-written') return;
        paused = true;
        return gate;
      },
    });
    onTestFinished(() => scheduler.close());
    // Registered last, so it runs first: a failed test must not leave the run paused (close() waits for it).
    onTestFinished(() => release());
    const objects = s3.connections.bucket('s3', BUCKET);
    const ref = resolveIcebergTable(TABLE, catalogs);

    // Five sweeps: five small files of one day.
    for (let n = 0; n < 5; n++) expect(await sweeper.sweep()).toBe('tiered-full');
    await scheduler.refresh();
    let finished = false;
    const run = scheduler.runNow('test').then((records) => {
      finished = true;
      return records;
    });
    await expect.poll(() => paused, { timeout: 60_000 }).toBe(true);
    const before = (await loadIcebergTable(objects, ref))!.version;

    // The run is paused with its compacted file written, outside the lock: a sweep commits now.
    let swept: string | undefined;
    void sweeper.sweep().then((outcome) => (swept = outcome));
    await expect.poll(() => swept, { timeout: 60_000 }).toBe('tiered-full');
    expect(finished).toBe(false);
    const afterSweep = (await loadIcebergTable(objects, ref))!;
    expect(afterSweep.version).toBe(before + 1);
    release();
    const [record] = await run;
    expect(record).toMatchObject({ ok: true, error: null, filesRewritten: 5, filesAdded: 1 });
    // The swap was built on the sweep's version: the replace snapshot's parent is the sweep's append.
    const afterRun = (await loadIcebergTable(objects, ref))!;
    const snapshot = (id: number | null | undefined) => afterRun.metadata.snapshots.find((snap) => snap['snapshot-id'] === id);
    const replace = afterRun.metadata.snapshots.find((snap) => snap.summary['operation'] === 'replace' && Number(snap.summary['deleted-data-files'] ?? 0) === 5);
    expect(replace).toBeDefined();
    expect(replace?.['parent-snapshot-id']).toBe(afterSweep.metadata['current-snapshot-id']);
    expect(snapshot(replace?.['parent-snapshot-id'])?.summary['operation']).toBe('append');
    // The rest, then the independent read: every event once, the watermark at the last.
    while ((await sweeper.sweep()) === 'tiered-full');
    const loaded = (await loadIcebergTable(objects, ref))!;
    expect(tableWatermark(loaded)?.seq).toBe(200);
    const live = (await currentManifests(objects, ref, loaded.metadata)).flatMap((m) => m.entries.filter((e) => e.status !== 2));
    expect(live.reduce((n, e) => n + e.data_file.record_count, 0)).toBe(200);
    expect(await icebird(ref.location)).toEqual({ rows: 200, distinct: 200 });
  }, 180_000);

  it('a run whose every turn comes right after a sweep commit, under back-to-back sweeps, finishes every step with no lost commit; orphan cleanup with every file past its minimum age spares every sweep file', async () => {
    let ingestMs = Date.now() - HOUR_MS;
    const store = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => ingestMs });
    onTestFinished(() => store.close());
    let appended = 0;
    const append = async () => {
      // One same-millisecond group of 10 per append (ids taken before the await: two appenders run at once).
      const first = appended;
      appended += 10;
      await store.append(Array.from({ length: 10 }, (_, j) => ev(first + j)));
      ingestMs++;
    };
    for (let n = 0; n < 20; n++) await append();
    const table = `${TABLE}_turns`;
    // Every step has work: 2 snapshots kept, and orphan cleanup's clock two hours on, so every file is past the
    // least minimum age (one hour) and any unreferenced one is removed (a sweep's files must survive that).
    const tableSettings = () => settings({ 'audit.tier.iceberg.table': table, 'audit.tier.maintenance.snapshot.retain.last': '2', 'audit.tier.maintenance.orphan.min.age.ms': String(HOUR_MS) });
    const encoder = new TierEncodePool();
    onTestFinished(() => encoder.close());
    const counted = new LostCommitCounter(s3.connectionConfigs());
    onTestFinished(() => counted.close());
    const shared = new CommitLock();
    const log = { info: () => undefined, warn: () => undefined };
    const common = { store, connections: s3.connections, catalogs, settings: tableSettings, isLeader: () => true, term: () => 1, log, encoder };
    const sweeperOptions = { intervalMs: HOUR_MS, batchSizeMax: 20, settleMs: 0, backoffInitialMs: HOUR_MS, backoffMaxMs: HOUR_MS };
    const sweeper = new TierSweeper({ ...common, ...sweeperOptions, commitLock: shared });
    onTestFinished(() => sweeper.close());
    // The sweep that commits at the start of every maintenance turn, inside it (its own lock, so no deadlock).
    const inTurn = new TierSweeper({ ...common, ...sweeperOptions, commitLock: new CommitLock() });
    onTestFinished(() => inTurn.close());
    let turnSweeps = 0;
    const lock = new SweepFirstLock(shared, async () => {
      await append();
      expect(await inTurn.sweep()).toMatch(/^tiered/);
      turnSweeps++;
    });
    // Maintenance commits through the counting connections: a step that loses a version shows.
    const scheduler = new MaintenanceScheduler({ ...common, connections: counted, commitLock: lock, now: () => Date.now() + 2 * HOUR_MS });
    onTestFinished(() => scheduler.close());
    const objects = s3.connections.bucket('s3', BUCKET);
    const ref = resolveIcebergTable(table, catalogs);

    // Ten small files, then the run with sweeps back to back beside it (each a new batch).
    for (let n = 0; n < 10; n++) expect(await sweeper.sweep()).toMatch(/^tiered/);
    await scheduler.refresh();
    let done = false;
    let loopSweeps = 0;
    const loop = (async () => {
      while (!done) {
        await append();
        // Its events may already be tiered by the sweep at the start of a maintenance turn.
        const outcome = await sweeper.sweep();
        expect(outcome).not.toBe('failed');
        if (outcome.startsWith('tiered')) loopSweeps++;
      }
    })();
    const [record] = await scheduler.runNow('test');
    done = true;
    await loop;
    expect(record).toMatchObject({ ok: true, error: null });
    expect(record!.filesRewritten).toBeGreaterThanOrEqual(10);
    // Compaction and manifest rewrite committed at least (expiry has work only if the sweeps left some).
    expect(counted.committed).toBeGreaterThanOrEqual(2);
    // Every turn came right after a sweep's commit, and no maintenance commit lost its version.
    expect(lock.sweptTurns).toBeGreaterThanOrEqual(5);
    expect(turnSweeps).toBe(lock.sweptTurns);
    expect(counted.lost).toBe(0);
    expect(loopSweeps).toBeGreaterThan(0);

    // The rest, then the independent read: every event once, the watermark at the last.
    while ((await sweeper.sweep()) === 'tiered-full');
    const loaded = (await loadIcebergTable(objects, ref))!;
    expect(tableWatermark(loaded)?.seq).toBe(appended);
    const live = (await currentManifests(objects, ref, loaded.metadata)).flatMap((m) => m.entries.filter((e) => e.status !== 2));
    expect(live.reduce((n, e) => n + e.data_file.record_count, 0)).toBe(appended);
    expect(await icebird(ref.location)).toEqual({ rows: appended, distinct: appended });
  }, 300_000);

  it('a scheduled run while the tier is behind leaves compaction for later (its other steps run), for at most an hour since the table was last compacted; a run asked for compacts; a restarted node reads that time from the table', async () => {
    let ingestMs = Date.now() - HOUR_MS;
    const store = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => ingestMs });
    onTestFinished(() => store.close());
    const append = async (from: number, count: number) => {
      for (let i = from; i < from + count; i += 10) {
        await store.append(Array.from({ length: 10 }, (_, j) => ev(i + j)));
        ingestMs++;
      }
    };
    const table = 'cat.ns.deferred_events';
    const tableSettings = () => settings({ 'audit.tier.iceberg.table': table });
    const log = { info: () => undefined, warn: () => undefined };
    const common = { store, connections: s3.connections, catalogs, settings: tableSettings, isLeader: () => true, term: () => 1, log };
    const sweeper = new TierSweeper({ ...common, intervalMs: HOUR_MS, batchSizeMax: 20, settleMs: 0, backoffInitialMs: HOUR_MS, backoffMaxMs: HOUR_MS });
    onTestFinished(() => sweeper.close());
    // Three small files of one day.
    await append(0, 60);
    while ((await sweeper.sweep()) === 'tiered-full');
    let nowMs = Date.now();
    let behind: string | undefined = 'the tier is 12000 events behind (more than 2 batches)';
    const runs: MaintenanceRun[] = [];
    const cronClock = new SteppedClock(Date.now());
    const scheduler = new MaintenanceScheduler({ ...common, now: () => nowMs, cronClock, compactionDeferral: () => Promise.resolve(behind), onRun: (run) => Promise.resolve(void runs.push(run)) });
    onTestFinished(() => scheduler.close());
    await scheduler.refresh();
    // What cron does at its time.
    const tick = async (expected: number) => {
      cronClock.fireAt(nextRunMs(scheduler, table));
      await expect.poll(() => runs.length, { timeout: 60_000 }).toBe(expected);
      return runs[expected - 1] as MaintenanceRun;
    };

    expect(await tick(1)).toMatchObject({ ok: true, trigger: 'cron', compactionDeferred: behind, filesRewritten: 0, filesAdded: 0 });
    const [asked] = await scheduler.runNow('admin');
    expect(asked).toMatchObject({ ok: true, trigger: 'admin', compactionDeferred: null, filesRewritten: 3, filesAdded: 1 });
    // Two more small files beside the compacted one (small too).
    await append(60, 40);
    while ((await sweeper.sweep()) === 'tiered-full');
    nowMs += COMPACTION_DEFERRAL_MAX_MS - 1;
    expect(await tick(3)).toMatchObject({ ok: true, compactionDeferred: behind, filesRewritten: 0 });
    // An hour after the last compaction, the tier still behind: compacted all the same.
    nowMs += 1;
    expect(await tick(4)).toMatchObject({ ok: true, compactionDeferred: null, filesRewritten: 3, filesAdded: 1 });
    // Caught up: compacted at once.
    await append(100, 40);
    while ((await sweeper.sweep()) === 'tiered-full');
    behind = undefined;
    expect(await tick(5)).toMatchObject({ ok: true, compactionDeferred: null, filesRewritten: 3, filesAdded: 1 });
    const objects = s3.connections.bucket('s3', BUCKET);
    const ref = resolveIcebergTable(table, catalogs);

    // A restarted node knows nothing of the runs before it: it reads the last compaction from
    // the table's newest snapshot that replaced data files, not from its own start.
    await scheduler.close();
    const compactedAt = Math.max(...((await loadIcebergTable(objects, ref))?.metadata.snapshots ?? []).filter((sn) => sn.summary['operation'] === 'replace' && sn.summary['deleted-data-files'] !== '0').map((sn) => sn['timestamp-ms']));
    await append(140, 40);
    while ((await sweeper.sweep()) === 'tiered-full');
    behind = 'the tier is 12000 events behind (more than 2 batches)';
    const restartedTick = async (restartedAtMs: number, connections = s3.connections) => {
      const restartedRuns: MaintenanceRun[] = [];
      const restartedCron = new SteppedClock(Date.now());
      const restarted = new MaintenanceScheduler({ ...common, connections, now: () => restartedAtMs, cronClock: restartedCron, compactionDeferral: () => Promise.resolve(behind), onRun: (run) => Promise.resolve(void restartedRuns.push(run)) });
      try {
        await restarted.refresh();
        restartedCron.fireAt(nextRunMs(restarted, table));
        await expect.poll(() => restartedRuns.length, { timeout: 60_000 }).toBe(1);
        return restartedRuns[0] as MaintenanceRun;
      } finally {
        await restarted.close();
      }
    };
    // Restarted ten minutes after that compaction: still deferred.
    expect(await restartedTick(compactedAt + 10 * 60_000)).toMatchObject({ ok: true, compactionDeferred: behind, filesRewritten: 0 });
    // Restarted an hour after it with the bucket unreachable (nothing listens on port 1): the run
    // fails, and until the table can be read the hour counts from the registration, so the
    // record still says compaction waits for the tier (it once said nothing while S3 was down).
    const unreachable = new S3Connections(new Map([['s3', { id: 's3', endpoint: 'http://127.0.0.1:1', region: 'us-east-1', ...CREDENTIALS, forcePathStyle: true }]]));
    onTestFinished(() => unreachable.close());
    const failed = await restartedTick(compactedAt + COMPACTION_DEFERRAL_MAX_MS, unreachable);
    expect(failed).toMatchObject({ ok: false, compactionDeferred: behind, filesRewritten: 0 });
    expect(failed.error).toMatch(/ECONNREFUSED|connect/i);
    // Restarted an hour after it: compacted, though the tier is behind (before, a restart counted the hour from itself).
    expect(await restartedTick(compactedAt + COMPACTION_DEFERRAL_MAX_MS)).toMatchObject({ ok: true, compactionDeferred: null, filesRewritten: 3, filesAdded: 1 });
    // Restarted with a clock ten minutes behind the last compaction's time (stepped back since,
    // or the node that compacted ran ahead): that time cannot say an hour has not passed, so
    // compaction is not deferred (it was, until this clock caught up: a whole excursion).
    await append(180, 40);
    while ((await sweeper.sweep()) === 'tiered-full');
    const lastCompacted = Math.max(...((await loadIcebergTable(objects, ref))?.metadata.snapshots ?? []).filter((sn) => sn.summary['operation'] === 'replace' && sn.summary['deleted-data-files'] !== '0').map((sn) => sn['timestamp-ms']));
    expect(await restartedTick(lastCompacted - 10 * 60_000)).toMatchObject({ ok: true, compactionDeferred: null, filesRewritten: 3, filesAdded: 1 });
    behind = undefined;
    expect(await icebird(ref.location)).toEqual({ rows: 220, distinct: 220 });
    const loaded = await loadIcebergTable(objects, ref);
    expect(loaded && tableWatermark(loaded)?.seq).toBe(220);
  }, 180_000);

  it('a run before the first sweep created the table has nothing to do; a table that received events and lost its metadata fails the run, naming it', async () => {
    const store = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => Date.now() - HOUR_MS });
    onTestFinished(() => store.close());
    const table = 'cat.ns.not_yet';
    const log = { info: () => undefined, warn: () => undefined };
    const scheduler = new MaintenanceScheduler({ store, connections: s3.connections, catalogs, settings: () => settings({ 'audit.tier.iceberg.table': table }), isLeader: () => true, term: () => 1, log });
    onTestFinished(() => scheduler.close());
    await scheduler.refresh();
    const [early] = await scheduler.runNow('test');
    expect(early).toMatchObject({ table, ok: true, error: null, filesRewritten: 0, snapshotsExpired: 0, orphansDeleted: 0 });

    // Once the location received events, a missing table is an error worth a failed run.
    const ref = resolveIcebergTable(table, catalogs);
    await store.putMeta({ [TIERED_LOCATIONS_META]: [{ mode: 'iceberg', path: ref.identifier, location: ref.location, connectionId: ref.connectionId }] });
    const [late] = await scheduler.runNow('test');
    expect(late).toMatchObject({ table, ok: false, error: `table ${table} has no metadata at ${ref.location}` });
  });

  it('a run is listed only once its audit record is written: one seen in the registrations can be searched for at once', async () => {
    const store = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => Date.now() - HOUR_MS });
    onTestFinished(() => store.close());
    const table = 'cat.ns.listed_after_record';
    let release!: () => void;
    const recorded = new Promise<void>((resolve) => (release = resolve));
    let recording = false;
    const log = { info: () => undefined, warn: () => undefined };
    const scheduler = new MaintenanceScheduler({ store, connections: s3.connections, catalogs, settings: () => settings({ 'audit.tier.iceberg.table': table }), isLeader: () => true, term: () => 1, log, onRun: async () => {
      recording = true;
      await recorded;
    } });
    onTestFinished(() => scheduler.close());
    onTestFinished(() => release());
    await scheduler.refresh();
    const run = scheduler.runNow('test');
    await expect.poll(() => recording).toBe(true);
    expect(scheduler.registrations()[0]?.runs).toEqual([]);
    release();
    await run;
    expect(scheduler.registrations()[0]?.runs).toHaveLength(1);
  });

  it('a run record says how many compaction passes ran and how many small files the last left: none and null when compaction was deferred or the run failed', async () => {
    // Each append in an ingest millisecond of its own: the sweep's batches of 20 are three files.
    let ingestMs = Date.now() - HOUR_MS;
    const store = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => ingestMs++ });
    onTestFinished(() => store.close());
    const table = 'cat.ns.passes_events';
    const log = { info: () => undefined, warn: () => undefined };
    const common = { store, connections: s3.connections, catalogs, settings: () => settings({ 'audit.tier.iceberg.table': table }), isLeader: () => true, term: () => 1, log };
    const sweeper = new TierSweeper({ ...common, intervalMs: HOUR_MS, batchSizeMax: 20, settleMs: 0, backoffInitialMs: HOUR_MS, backoffMaxMs: HOUR_MS });
    onTestFinished(() => sweeper.close());
    for (let i = 0; i < 60; i += 20) await store.append(Array.from({ length: 20 }, (_, j) => ev(i + j)));
    while ((await sweeper.sweep()) === 'tiered-full');
    const runs: MaintenanceRun[] = [];
    const cronClock = new SteppedClock(Date.now());
    const scheduler = new MaintenanceScheduler({
      ...common,
      cronClock,
      compactionTimeBudgetMs: 60_000,
      compactionDeferral: () => Promise.resolve('behind'),
      onRun: (run) => Promise.resolve(void runs.push(run)),
    });
    onTestFinished(() => scheduler.close());
    await scheduler.refresh();
    cronClock.fireAt(nextRunMs(scheduler, table));
    await expect.poll(() => runs.length, { timeout: 60_000 }).toBe(1);
    expect(runs[0]).toMatchObject({ ok: true, compactionDeferred: 'behind', filesRewritten: 0, compactionPasses: 0, smallFilesLeft: null });
    // Three small files fit in one pass: nothing left after it.
    const [asked] = await scheduler.runNow('admin');
    expect(asked).toMatchObject({ ok: true, compactionDeferred: null, filesRewritten: 3, filesAdded: 1, compactionPasses: 1, smallFilesLeft: 0 });
    // The table's metadata gone: the run fails before it compacts.
    const objects = s3.connections.bucket('s3', BUCKET);
    for (const key of await objects.list(joinKey(resolveIcebergTable(table, catalogs).s3.prefix, 'metadata/'))) await objects.delete(key);
    const [failed] = await scheduler.runNow('admin');
    expect(failed).toMatchObject({ ok: false, compactionPasses: 0, smallFilesLeft: null });
  });
});
