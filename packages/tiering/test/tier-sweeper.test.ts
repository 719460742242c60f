// Goal: batch.size bounds one commit, not the throughput — a sweep that fills a batch is followed at once by the next until less than a batch is settled, without waiting for the interval — while leadership, close() and status reads interleave between commits.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Connections, currentManifests, loadIcebergTable, resolveIcebergTable } from '@auditlake/lake';
import { defaultSettings, parseSettings, resolveConfig, type AuditEvent, type EffectiveSettings } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { startS3Endpoint, type S3Endpoint } from '@auditlake/s3-endpoint';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { TierSweeper, type TierStatus, type TierSweeperOptions } from '../src/index.js';
import { testSweeper } from './test-sweeper.js';

const BUCKET = 'sweep';
const HOUR_MS = 3_600_000;
const CREDENTIALS = { accessKeyId: 'ALSWEEPTEST000000001', secretAccessKey: 'sweep-test-secret-0123456789abcdefghij' };
let server: S3Endpoint;
let dir: string;
let connections: S3Connections;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tier-sweeper-'));
  server = await startS3Endpoint({ directory: join(dir, 's3'), host: '127.0.0.1', port: 0, buckets: [BUCKET], credentials: CREDENTIALS });
  connections = new S3Connections(new Map([['s3', { id: 's3', endpoint: server.url, region: 'us-east-1', ...CREDENTIALS, forcePathStyle: true }]]));
});

afterAll(async () => {
  connections?.close();
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

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
  const store = await AuditStore.open({ location: await mkdtemp(join(dir, 'store-')), now: () => ingestMs });
  onTestFinished(() => store.close());
  for (let i = 0; i < events; i += perAppend) {
    await store.append(Array.from({ length: Math.min(perAppend, events - i) }, (_, j) => ev(i + j)));
    ingestMs++;
  }
  return store;
}

function sweeper(store: AuditStore, path: string, over: Partial<TierSweeperOptions> = {}): TierSweeper {
  return testSweeper({ store, connections, catalogs: new Map(), settings: () => settings(path), ...over });
}

describe('TierSweeper', () => {
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
    const objects = connections.bucket('s3', BUCKET);
    const snapshotCounts = async (table: string, enabled: boolean): Promise<{ snapshots: number[]; manifests: number[] }> => {
      const store = await storeWith(200, 10);
      const ref = resolveIcebergTable(table, catalogs);
      const snapshots: number[] = [];
      const manifests: number[] = [];
      const s = sweeper(store, 'unused', { catalogs, settings: () => icebergSettings(table, enabled), batchSizeMax: 10, manifestsBetweenRunsMax: 5 });
      for (let sweep = 1; sweep <= 20; sweep++) {
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

  it.each([
    ['parquet', 'shorter', 5, `past the end of this node's log (seq 5)`],
    ['parquet', 'different', 30, 'but this node\'s entry at that seq was ingested at'],
    ['iceberg', 'shorter', 5, `past the end of this node's log (seq 5)`],
    ['iceberg', 'different', 30, 'but this node\'s entry at that seq was ingested at'],
  ] as const)('%s: refuses to go on from a watermark its log does not hold (a %s log), and tiers nothing', async (mode, name, events, why) => {
    const target = modes[mode](`${name}_${mode}`);
    // The first log tiers its 20 events; a second log, not a copy of it, is then pointed at the
    // same target (a leader whose log lacks what a dead leader tiered, or a node whose data was lost).
    const first = await storeWith(20, 10, Date.now() - 2 * HOUR_MS);
    const a = testSweeper({ store: first, connections, catalogs, settings: () => target });
    expect(await a.sweep()).toBe('tiered');
    expect((await a.watermark()).seq).toBe(20);
    await a.close();
    const second = await storeWith(events, 10);
    const b = testSweeper({ store: second, connections, catalogs, settings: () => target });
    expect(await b.sweep()).toBe('failed');
    const { lastError } = await b.status();
    expect(lastError).toContain(`is tiered through seq 20, ${why}`);
    expect(lastError).toContain('tiering stops here until the logs are reconciled');
    // The first log's 20 events are all the tier holds.
    const again = testSweeper({ store: first, connections, catalogs, settings: () => target });
    expect(await again.sweep()).toBe('nothing-to-tier');
  });

  it('goes on from a watermark whose entry retention has since deleted', async () => {
    const store = await storeWith(30, 10, Date.now() - 2 * HOUR_MS);
    const target = settings('apart/pruned');
    const s = testSweeper({ store, connections, catalogs, settings: () => target, batchSizeMax: 20 });
    expect(await s.sweep()).toBe('tiered-full');
    await store.pruneBefore(Date.UTC(2026, 0, 1) + 20, 100, async () => true);
    expect(await store.getBySeq(20)).toBeUndefined();
    expect(await s.sweep()).toBe('tiered');
    expect((await s.watermark()).seq).toBe(30);
  });
});
