// Goal: a deposed leader whose writes were in flight (held in a proxy until its successor committed) can never erase or replace tiered events, in either mode: every event is read exactly once afterwards (DuckDB over the committed Parquet files, icebird over the table), the zombie's commit is refused, and its files are left unreferenced.
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { S3Connections } from '@auditlake/lake';
import { routeAwsS3To, useEmbeddedS3 } from '@auditlake/lake/testing';
import { defaultSettings, parseSettings, resolveConfig, type AuditEvent, type EffectiveSettings } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import type { S3Credentials } from '@auditlake/s3-endpoint';
import { icebergRead } from 'icebird';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { TierSweeper, type TierSweeperOptions } from '../src/index.js';
import { testSweeper } from './test-sweeper.js';
import { startHoldingProxy, type HoldingProxy } from './holding-proxy.js';
import { duckdbOverLiveParquet } from './live-parquet.js';

const BUCKET = 'zombie';
const HOUR_MS = 3_600_000;
const CREDENTIALS = { accessKeyId: 'ALZOMBIETEST00000001', secretAccessKey: 'zombie-test-secret-0123456789abcdefghi' };
/** s3rver's fixed key pair. */
const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
/** The endpoint a node embeds (it honours If-None-Match); its `connections` go straight to it (the successor). */
const s3 = useEmbeddedS3('zombie-commit-', BUCKET, CREDENTIALS);
let proxy: HoldingProxy;
/** Through the proxy (the deposed leader). */
let held: S3Connections;

function connectionsTo(url: string, credentials: S3Credentials = CREDENTIALS): S3Connections {
  return new S3Connections(new Map([['s3', { id: 's3', endpoint: url, region: 'us-east-1', ...credentials, forcePathStyle: true }]]));
}

beforeAll(async () => {
  proxy = await startHoldingProxy(s3.server.url);
  held = connectionsTo(proxy.endpoint);
});

afterAll(async () => {
  held?.close();
  await proxy?.close();
});

const CATALOGS = new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]);

function settings(mode: 'parquet' | 'iceberg', name: string): EffectiveSettings {
  const base = defaultSettings(resolveConfig());
  return parseSettings(
    mode === 'parquet'
      ? { ...base, 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': `s3://${BUCKET}/${name}`, 'audit.tier.connectionId': 's3' }
      : { ...base, 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': `cat.ops.${name}` },
  );
}

function ev(i: number): AuditEvent {
  return { eventId: `e${i}`, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: `q${i}`, details: '', timestamp: Date.UTC(2026, 0, 1) + i };
}

/**
 * One replica's store: the same 150 events in the same order and ingest milliseconds on every
 * replica (as replication leaves them), so seqs agree across the two leaders.
 */
async function replica(): Promise<AuditStore> {
  let ingestMs = Date.now() - HOUR_MS;
  const store = await AuditStore.open({ location: await mkdtemp(join(s3.dir, 'store-')), now: () => ingestMs });
  onTestFinished(() => store.close());
  for (let i = 0; i < 150; i += 10) {
    await store.append(Array.from({ length: 10 }, (_, j) => ev(i + j)));
    ingestMs++;
  }
  return store;
}

function sweeper(options: Pick<TierSweeperOptions, 'store' | 'connections' | 'settings' | 'term' | 'batchSizeMax'>): TierSweeper {
  // The deposed leader does not know it was deposed: its own checks pass (testSweeper leads).
  return testSweeper({ catalogs: CATALOGS, ...options });
}

/** DuckDB over exactly the files the location's readers read (commit markers, compactions applied). */
async function parquetIds(path: string): Promise<{ rows: number; distinct: number }> {
  const [result] = await duckdbOverLiveParquet(s3.connections, { path, connectionId: 's3' }, s3.dir, 'SELECT count(*)::INTEGER AS n, count(DISTINCT event_id)::INTEGER AS d FROM {files}');
  return { rows: Number(result?.['n']), distinct: Number(result?.['d']) };
}

/** icebird resolves s3:// to AWS hosts and cannot sign: point those requests at the local endpoint, signed, for this read. */
async function icebergIds(location: string): Promise<{ rows: number; distinct: number }> {
  const restore = routeAwsS3To(s3.server.url, CREDENTIALS);
  try {
    const rows = (await icebergRead({ tableUrl: location })) as Array<Record<string, unknown>>;
    return { rows: rows.length, distinct: new Set(rows.map((r) => r['event_id'])).size };
  } finally {
    restore();
  }
}

/** Which PUT of the deposed leader is held: its first data file, or its commit object. */
const HELD = {
  parquet: { data: (path: string) => path.endsWith('.parquet'), commit: (path: string) => path.includes('/_auditlake/commits/') },
  // v1 is the empty table both create; the commit is the next version.
  iceberg: { data: (path: string) => path.endsWith('.parquet'), commit: (path: string) => /\/v(?!1\.)\d+\.metadata\.json$/.test(path) },
};

describe('a deposed leader whose PUT was held until its successor committed', () => {
  for (const mode of ['parquet', 'iceberg'] as const) {
    for (const which of ['data', 'commit'] as const) {
      it(`${mode}: holding its ${which} PUT loses nothing and duplicates nothing; its commit is refused`, async () => {
        const name = `${mode}_${which}`;
        // The deposed leader (term 1) cuts a smaller batch than its successor (term 2), as in the attack.
        const zombie = sweeper({ store: await replica(), connections: held, settings: () => settings(mode, name), term: () => 1, batchSizeMax: 50 });
        const successor = sweeper({ store: await replica(), connections: s3.connections, settings: () => settings(mode, name), term: () => 2, batchSizeMax: 100 });
        const hold = proxy.holdNext((method, path) => method === 'PUT' && path.includes(`/${name}`) && HELD[mode][which](path));
        const zombieSweep = zombie.sweep();
        await hold.arrived;
        // While the deposed leader's PUT is in flight, its successor tiers everything.
        while ((await successor.sweep()) === 'tiered-full');
        expect((await successor.watermark()).seq).toBe(150);
        await hold.release();
        expect(await zombieSweep).toBe('failed');
        expect((await zombie.status()).lastError).toMatch(/commit lost/);
        const ids = mode === 'parquet' ? await parquetIds(`s3://${BUCKET}/${name}`) : await icebergIds(`s3://${BUCKET}/wh/ops/${name}`);
        expect(ids).toEqual({ rows: 150, distinct: 150 });
      });
    }
  }
});

// s3rver 3.7 is such a store: it overwrites on a PUT with If-None-Match: *.
describe('a store that ignores If-None-Match on PUT', () => {
  for (const mode of ['parquet', 'iceberg'] as const) {
    it(`${mode}: the leader refuses to tier there with a lastError naming the problem, and writes nothing`, async () => {
      const plain = new S3rver({ address: '127.0.0.1', port: 0, directory: join(s3.dir, `plain-${mode}`), silent: true, configureBuckets: [{ name: BUCKET }], vhostBuckets: false });
      const connections = connectionsTo(`http://127.0.0.1:${(await plain.run()).port}`, S3RVER_CREDENTIALS);
      onTestFinished(async () => {
        connections.close();
        plain.httpServer?.closeAllConnections();
        await plain.close();
      });
      const s = sweeper({ store: await replica(), connections, settings: () => settings(mode, 'refused'), term: () => 1, batchSizeMax: 100 });
      expect(await s.sweep()).toBe('failed');
      const status = await s.status();
      expect(status.lastError).toMatch(/ignores If-None-Match on PUT .* tiering to it is refused/);
      expect(status.watermark.seq).toBe(0);
      expect(await connections.bucket('s3', BUCKET).list('')).toEqual([]);
      // It probes again on the next attempt, and refuses again.
      expect(await s.sweep()).toBe('failed');
    });
  }
});
