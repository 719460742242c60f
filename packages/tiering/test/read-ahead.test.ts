// Goal: with a backlog, the sweep hands the next batch to the encoder while the previous batch commits (the encoder's thread and the commit's requests overlap), and what was read ahead is committed only when it continues exactly where the table ends — never twice, never after another writer tiered it.
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { INLINE_TIER_FILE_ENCODER, S3Connections, cleanIcebergMetadata, currentManifests, loadIcebergTable, metadataVersionKey, resolveIcebergTable, type TierFileEncoder } from '@auditlake/lake';
import { defaultSettings, parseSettings, resolveConfig, type AuditEvent, type EffectiveSettings } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { useEmbeddedS3 } from '@auditlake/lake/testing';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { TierSweeper, type TierSweeperOptions } from '../src/index.js';
import { testSweeper } from './test-sweeper.js';
import { startHoldingProxy, type HoldingProxy } from './holding-proxy.js';

const BUCKET = 'ahead';
const HOUR_MS = 3_600_000;
const CREDENTIALS = { accessKeyId: 'ALAHEADTEST000000001', secretAccessKey: 'ahead-test-secret-0123456789abcdefghijk' };
const CATALOGS = new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]);
/** Its `connections` go straight to the endpoint. */
const s3 = useEmbeddedS3('read-ahead-', BUCKET, CREDENTIALS);
let proxy: HoldingProxy;
/** Through the proxy that can hold a commit. */
let held: S3Connections;

function connectionsTo(url: string): S3Connections {
  return new S3Connections(new Map([['s3', { id: 's3', endpoint: url, region: 'us-east-1', ...CREDENTIALS, forcePathStyle: true }]]));
}

beforeAll(async () => {
  proxy = await startHoldingProxy(s3.server.url);
  held = connectionsTo(proxy.endpoint);
});

afterAll(async () => {
  held?.close();
  await proxy?.close();
});

function settings(table: string): EffectiveSettings {
  return parseSettings({ ...defaultSettings(resolveConfig()), 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': `cat.ops.${table}`, 'audit.tier.maintenance.enabled': 'false' });
}

function ev(i: number): AuditEvent {
  return { eventId: `e${i}`, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp: Date.UTC(2026, 0, 1) + i };
}

/** A store of `events` settled events, 50 per ingest millisecond (groups that never straddle a batch of 100). */
async function storeWith(events: number): Promise<AuditStore> {
  let ingestMs = Date.now() - HOUR_MS;
  const store = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => ingestMs });
  onTestFinished(() => store.close());
  for (let i = 0; i < events; i += 50) {
    await store.append(Array.from({ length: Math.min(50, events - i) }, (_, j) => ev(i + j)));
    ingestMs++;
  }
  return store;
}

/** Encodes on this thread and records the first seq of every batch file it was asked for. */
function recordingEncoder(): { encoder: TierFileEncoder; firstSeqs: number[] } {
  const firstSeqs: number[] = [];
  const encoder: TierFileEncoder = {
    encode: (events, shape) => {
      firstSeqs.push(Number(events[0]?.seq));
      return INLINE_TIER_FILE_ENCODER.encode(events, shape);
    },
    rewrite: (inputs, rowsPerFile, shape) => INLINE_TIER_FILE_ENCODER.rewrite(inputs, rowsPerFile, shape),
  };
  return { encoder, firstSeqs };
}

function sweeper(store: AuditStore, table: string, over: Partial<TierSweeperOptions> = {}): TierSweeper {
  return testSweeper({ store, connections: s3.connections, catalogs: CATALOGS, settings: () => settings(table), ...over });
}

/** Rows in the table's current snapshot: the rows of its live files (status 2 is DELETED). */
async function tableRows(table: string): Promise<number> {
  const objects = s3.connections.bucket('s3', BUCKET);
  const ref = resolveIcebergTable(`cat.ops.${table}`, CATALOGS);
  const loaded = await loadIcebergTable(objects, ref);
  if (!loaded) return 0;
  const manifests = await currentManifests(objects, ref, loaded.metadata);
  return manifests.flatMap((m) => m.entries.filter((e) => e.status !== 2)).reduce((n, e) => n + Number(e.data_file.record_count), 0);
}

describe('TierSweeper read-ahead (Iceberg)', () => {
  it('hands the next two batches of a backlog to the encoder while the previous batch commits, and encodes each batch once', async () => {
    const store = await storeWith(500);
    const { encoder, firstSeqs } = recordingEncoder();
    const s = sweeper(store, 'overlap', { connections: held, encoder });
    // v1 is the empty table; v2 is the first batch's commit object: held until released.
    const commit = proxy.holdNext((method, path) => method === 'PUT' && path.endsWith('/v2.metadata.json'));
    const first = s.sweep();
    await commit.arrived;
    // The first batch's commit is in flight: the second and third batches (seq 101..300) are
    // being encoded — not only the second, for which the encoder would wait on the next read.
    await expect.poll(() => firstSeqs, { timeout: 30_000 }).toEqual([1, 101, 201]);
    await commit.release();
    expect(await first).toBe('tiered-full');
    // Each sweep commits what was encoded ahead (no encoding again) and reads one more ahead.
    expect(await s.sweep()).toBe('tiered-full');
    expect(await s.sweep()).toBe('tiered-full');
    expect(await s.sweep()).toBe('tiered-full');
    expect(await s.sweep()).toBe('tiered');
    expect(firstSeqs).toEqual([1, 101, 201, 301, 401]);
    expect((await s.watermark()).seq).toBe(500);
    expect(await tableRows('overlap')).toBe(500);
  });

  it('commits a backlog back to back on the table as its last commit left it, without reading the table or its manifest list again', async () => {
    const store = await storeWith(300);
    const s = sweeper(store, 'reused', { connections: held });
    expect(await s.sweep()).toBe('tiered-full');
    const from = proxy.requests.length;
    expect(await s.sweep()).toBe('tiered-full');
    const second = proxy.requests.slice(from).filter((r) => r.path.includes('/reused/'));
    const gets = (pattern: RegExp) => second.filter((r) => r.method === 'GET' && pattern.test(r.path)).length;
    // Loading reads the hint and the current metadata; the commit reads the hint once (to move it
    // forward), its own new version back, looks for the next version and asks whether its base
    // version is still there (the fork checks: one HEAD), all at once. Nothing else: no listing,
    // no parent manifest list.
    expect(gets(/version-hint\.text$/)).toBe(1);
    expect(gets(/\/v\d+\.metadata\.json$/)).toBe(2);
    expect(gets(/snap-.*\.avro$/)).toBe(0);
    expect(second.filter((r) => r.method === 'HEAD').map((r) => r.path.replace(/.*\/metadata\//, ''))).toEqual([expect.stringMatching(/^v\d+\.metadata\.json$/)]);
    expect(await s.sweep()).toBe('tiered');
    expect(await tableRows('reused')).toBe(300);
  });

  it.each([
    ['after an interval, loading the table again', 'tiered', 'outside'],
    ['back to back, reusing the table its last commit left', 'tiered-full', 'outside_reused'],
  ])('builds on an outside engine that committed and deleted old versions meanwhile, never forks the table (%s)', async (_, firstOutcome, name) => {
    let ingestMs = Date.now() - HOUR_MS;
    const store = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => ingestMs });
    onTestFinished(() => store.close());
    const append = async (from: number) => {
      for (let i = from; i < from + 100; i += 50) {
        await store.append(Array.from({ length: 50 }, (_, j) => ev(i + j)));
        ingestMs++;
      }
    };
    await append(0);
    await append(100);
    if (firstOutcome === 'tiered-full') await append(200);
    const s = sweeper(store, name);
    expect(await s.sweep()).toBe('tiered-full');
    if (firstOutcome === 'tiered') expect(await s.sweep()).toBe('tiered');
    // An outside engine: metadata cleanups keeping one previous version, each a commit that
    // deletes what it no longer names, so the version after the sweeper's last is gone.
    const objects = s3.connections.bucket('s3', BUCKET);
    const ref = resolveIcebergTable(`cat.ops.${name}`, CATALOGS);
    const sweptTo = (await loadIcebergTable(objects, ref))!;
    let outside = sweptTo;
    const context = { objects, table: ref, fence: { term: 1, mayCommit: () => true }, now: Date.now, metadataLogEntriesMax: 1 };
    for (let i = 0; i < 3; i++) outside = (await cleanIcebergMetadata(context, outside)).loaded;
    expect(outside.version).toBeGreaterThan(sweptTo.version + 1);
    expect(await objects.exists(metadataVersionKey(ref, sweptTo.version + 1))).toBe(false);
    // The next sweep commits after the outside engine's last version. Back to back, the sweep
    // built its commit on the table its last commit left: the version it created anew (deleted
    // by the cleanup) is refused, and the batch re-applied on the table as it is.
    if (firstOutcome === 'tiered') await append(200);
    let commits = 0;
    for (let outcome = ''; outcome !== 'tiered'; commits++) outcome = await s.sweep();
    expect((await loadIcebergTable(objects, ref))!.version).toBe(outside.version + commits);
    expect(await tableRows(name)).toBe(300);
    expect((await s.watermark()).seq).toBe(300);
  });

  it('drops what it read ahead when another writer tiered those events first', async () => {
    const store = await storeWith(300);
    const a = sweeper(store, 'moved_on');
    // A commits 1..100 and reads 101..200 ahead.
    expect(await a.sweep()).toBe('tiered-full');
    // Another sweeper of the same table (a recreated one) commits 101..200 meanwhile.
    const b = sweeper(store, 'moved_on');
    expect(await b.sweep()).toBe('tiered-full');
    await b.close();
    // A continues from where the table ends (200), not from its read-ahead (100).
    expect(await a.sweep()).toBe('tiered');
    expect((await a.watermark()).seq).toBe(300);
    expect(await tableRows('moved_on')).toBe(300);
  });

  it('after a failed commit, tiers the batch it had read ahead exactly once', async () => {
    const store = await storeWith(300);
    let failures = 1;
    const s = sweeper(store, 'after_failure', {
      // The first commit fails right before its commit object, after the second batch was read ahead.
      beforeCommit: () => {
        if (failures-- > 0) throw new Error('injected failure before the commit object');
      },
    });
    expect(await s.sweep()).toBe('failed');
    expect(await tableRows('after_failure')).toBe(0);
    expect(await s.sweep()).toBe('tiered-full');
    expect(await s.sweep()).toBe('tiered-full');
    expect(await s.sweep()).toBe('tiered');
    expect((await s.watermark()).seq).toBe(300);
    expect(await tableRows('after_failure')).toBe(300);
  });
});
