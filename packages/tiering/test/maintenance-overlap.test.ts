// Goal: a maintenance run and the sweep share the node's commit lock and encoder pool and never interleave commits — a sweep asked for while a run is paused after writing its compaction waits for the run, then appends on the run's last version; icebird reads every event exactly once with the watermark at the last tiered event.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Connections, TierEncodePool, currentManifests, loadIcebergTable, resolveIcebergTable, tableWatermark } from '@auditlake/lake';
import { defaultSettings, parseSettings, resolveConfig, type AuditEvent, type EffectiveSettings } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { signedFetch, startS3Endpoint, type S3Endpoint } from '@auditlake/s3-endpoint';
import { icebergRead } from 'icebird';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { CommitLock, MaintenanceScheduler, TierSweeper } from '../src/index.js';

const BUCKET = 'overlap';
const HOUR_MS = 3_600_000;
const CREDENTIALS = { accessKeyId: 'ALOVERLAPTEST0000001', secretAccessKey: 'overlap-test-secret-0123456789abcdefgh' };
const TABLE = 'cat.ns.overlap_events';
let server: S3Endpoint;
let dir: string;
let connections: S3Connections;
const catalogs = new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/warehouse`, connectionId: 's3' }]]);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'maintenance-overlap-'));
  server = await startS3Endpoint({ directory: join(dir, 's3'), host: '127.0.0.1', port: 0, buckets: [BUCKET], credentials: CREDENTIALS });
  connections = new S3Connections(new Map([['s3', { id: 's3', endpoint: server.url, region: 'us-east-1', ...CREDENTIALS, forcePathStyle: true }]]));
});

afterAll(async () => {
  connections?.close();
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

function settings(): EffectiveSettings {
  return parseSettings({
    ...defaultSettings(resolveConfig()),
    'audit.tier.mode': 'iceberg',
    'audit.tier.iceberg.table': TABLE,
    'audit.tier.connectionId': 's3',
    // Never by cron during the test: runs are asked for.
    'audit.tier.maintenance.cron': '0 0 1 1 *',
  });
}

function ev(i: number): AuditEvent {
  return { eventId: `e${i}`, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp: Date.UTC(2026, 0, 1) + i };
}

/** icebird's count of rows and distinct event ids, its s3:// requests routed to the endpoint, signed. */
async function icebird(location: string): Promise<{ rows: number; distinct: number }> {
  const original = globalThis.fetch;
  const signed = signedFetch({ credentials: CREDENTIALS, fetch: original });
  globalThis.fetch = ((input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const match = /^https:\/\/([a-z0-9.-]+)\.s3\.amazonaws\.com(\/.*)$/.exec(url);
    return match ? signed(`${server.url}/${match[1]}${match[2]}`, init) : original(input, init);
  });
  try {
    const rows = (await icebergRead({ tableUrl: location })) as Array<Record<string, unknown>>;
    return { rows: rows.length, distinct: new Set(rows.map((r) => r['event_id'])).size };
  } finally {
    globalThis.fetch = original;
  }
}

describe('maintenance beside the sweep', () => {
  it('a sweep asked for during a run waits for it, then appends on its last version; every event is read once', async () => {
    let ingestMs = Date.now() - HOUR_MS;
    const store = await AuditStore.open({ location: await mkdtemp(join(dir, 'store-')), now: () => ingestMs });
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
    const common = { store, connections, catalogs, settings, isLeader: () => true, term: () => 1, log, commitLock, encoder };
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
    const objects = connections.bucket('s3', BUCKET);
    const ref = resolveIcebergTable(TABLE, catalogs);

    // Five sweeps: five small files of one day.
    for (let n = 0; n < 5; n++) expect(await sweeper.sweep()).toBe('tiered-full');
    await scheduler.refresh();
    const run = scheduler.runNow('test');
    await expect.poll(() => paused, { timeout: 60_000 }).toBe(true);
    const before = (await loadIcebergTable(objects, ref))!.version;

    // The run holds the commit lock while paused: a sweep asked for now waits for the run's end.
    let swept = false;
    const sweep = sweeper.sweep().then((outcome) => {
      swept = true;
      return outcome;
    });
    release();
    const [record] = await run;
    expect(swept).toBe(false);
    expect(record).toMatchObject({ ok: true, error: null, filesRewritten: 5, filesAdded: 1 });
    expect(await sweep).toBe('tiered-full');
    const afterSweep = (await loadIcebergTable(objects, ref))!;
    expect(afterSweep.version).toBeGreaterThan(before + 1);
    // The sweep appended on the run's work: its snapshot's parent is a maintenance snapshot (replace).
    const snapshot = (id: number | null | undefined) => afterSweep.metadata.snapshots.find((snap) => snap['snapshot-id'] === id);
    const sweepSnapshot = snapshot(afterSweep.metadata['current-snapshot-id']);
    expect(sweepSnapshot?.summary['operation']).toBe('append');
    expect(snapshot(sweepSnapshot?.['parent-snapshot-id'])?.summary['operation']).toBe('replace');
    // The rest, then the independent read: every event once, the watermark at the last.
    while ((await sweeper.sweep()) === 'tiered-full');
    const loaded = (await loadIcebergTable(objects, ref))!;
    expect(tableWatermark(loaded)?.seq).toBe(200);
    const live = (await currentManifests(objects, ref, loaded.metadata)).flatMap((m) => m.entries.filter((e) => e.status !== 2));
    expect(live.reduce((n, e) => n + e.data_file.record_count, 0)).toBe(200);
    expect(await icebird(ref.location)).toEqual({ rows: 200, distinct: 200 });
  }, 180_000);
});
