// Goal: a node killed (SIGKILL) in the middle of an erasure's rewrite of the tier — new files
// written but not committed, the rewrite committed but (Iceberg) older snapshots not yet expired
// or (Parquet) the replaced files not yet deleted, the expiry committed but what only the expired
// snapshots reached (files a compaction before the erasure replaced) not yet deleted, snapshots
// expired but the replaced files not yet deleted — leaves a tier that icebird (Iceberg) or DuckDB (Parquet) reads with every event
// exactly once; after a restart the erasure completes (driven by the erasure record in the log):
// readers see the marker, no object keeps the value, and `auditlake verify` passes offline from
// the bucket, counting the erased fields.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { ERASURES_APPLIED_THROUGH_PROPERTY, icebergTableAt, loadIcebergTable, PURGE_FILES_PROPERTY } from '@auditlake/lake';
import { auditlakeBin, freePort, startNodeProcess, tempDir, type NodeProcess } from '@auditlake/testkit';
import { describe, expect, it, onTestFinished } from 'vitest';
import { filesHolding } from './bucket-bytes.js';
import { downloadCommittedParquet, duckdb, routeAwsS3To, s3Bucket, waitUntilTiered } from './s3-readers.js';

const S3_CREDENTIALS = { accessKeyId: 'ALERASECRASH00000001', secretAccessKey: 'erase-crash-secret-0123456789abcdefgh' };
const ENV = { AUDITLAKE_ADMIN_TOKEN: 'adm', AUDITLAKE_INGEST_TOKEN: 'ing', AUDITLAKE_EMBEDDED_S3_ACCESS_KEY: S3_CREDENTIALS.accessKeyId, AUDITLAKE_EMBEDDED_S3_SECRET_KEY: S3_CREDENTIALS.secretAccessKey };
const FAST = ['auditlake.audit.tier.interval.ms=100', 'auditlake.audit.tier.ingest.settle.ms=0', 'auditlake.audit.tier.batch.size=10'];
const TABLE_URL = 's3://auditlake/warehouse/ops/audit_events';
const PARQUET_PATH = 's3://auditlake/tier';
const MARKER = '[erased by auditlake]';

interface Mode {
  mode: 'iceberg' | 'parquet';
  settings: Record<string, unknown>;
  /** Where the erasure's rewrite is killed, in its order. */
  crashPoints: string[];
  verifyArgs: string[];
}

const MODES: Mode[] = [
  { mode: 'iceberg', settings: { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'local.ops.audit_events' }, crashPoints: ['rewrite-written', 'rewrite-committed', 'expiry-committed', 'purge-expired'], verifyArgs: ['--table', TABLE_URL] },
  { mode: 'parquet', settings: { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': PARQUET_PATH, 'audit.tier.connectionId': 'local' }, crashPoints: ['rewrite-written', 'rewrite-committed'], verifyArgs: ['--path', PARQUET_PATH] },
];

function post(url: string, path: string, body: unknown, token: string) {
  return fetch(url + path, { method: 'POST', headers: { authorization: `Token ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** A query text unique to an event, random-looking so page compression keeps it literal. */
function secret(id: string): string {
  return createHash('sha256').update(`query:${id}`).digest('hex').slice(0, 24);
}

/** Every row of ours (prefix `k`) icebird reads from the table: event id → queries seen. */
async function icebirdRows(s3Endpoint: string): Promise<Map<string, string[]>> {
  routeAwsS3To(s3Endpoint, S3_CREDENTIALS);
  const { icebergRead } = await import('icebird');
  const rows = (await icebergRead({ tableUrl: TABLE_URL })) as Array<{ event_id: string; query: string }>;
  const seen = new Map<string, string[]>();
  for (const { event_id: id, query } of rows) if (id.startsWith('k')) seen.set(id, [...(seen.get(id) ?? []), query]);
  return seen;
}

/** The same from the files a Parquet location's readers read, through DuckDB. */
async function duckdbRows(s3Endpoint: string): Promise<Map<string, string[]>> {
  const dir = await downloadCommittedParquet(s3Endpoint, PARQUET_PATH, S3_CREDENTIALS);
  const rows = (await duckdb(`SELECT event_id, query FROM read_parquet('${dir}/**/*.parquet')`)) as Array<{ event_id: string; query: string }>;
  const seen = new Map<string, string[]>();
  for (const { event_id: id, query } of rows) if (id.startsWith('k')) seen.set(id, [...(seen.get(id) ?? []), query]);
  return seen;
}

function expectEachOnce(rows: Map<string, string[]>, ingested: number): void {
  expect(rows.size).toBe(ingested);
  expect([...rows.values()].every((queries) => queries.length === 1)).toBe(true);
}

describe.each(MODES)('an erasure of the $mode tier killed with -9 (real process, embedded S3)', (mode) => {
  it('at each point of its rewrite: every event once after the crash, and the erasure completes after a restart', async () => {
    const data = await tempDir();
    onTestFinished(() => data.remove());
    const s3Port = await freePort();
    const s3Endpoint = `http://127.0.0.1:${s3Port}`;
    const objects = s3Bucket(s3Endpoint, 'auditlake', S3_CREDENTIALS);
    const table = icebergTableAt({ identifier: 'local.ops.audit_events', location: TABLE_URL, connectionId: 't' });
    const start = async (crashAt: string): Promise<NodeProcess> => {
      const sets = [...FAST, `auditlake.debug.maintenance.crash.at=${crashAt}`];
      const node = await startNodeProcess({ dataDir: data.path, args: ['--embedded-s3', '--embedded-s3-port', String(s3Port), ...sets.flatMap((s) => ['--set', s])], env: ENV });
      onTestFinished(() => node.kill());
      return node;
    };
    const readRows = (endpoint: string) => (mode.mode === 'iceberg' ? icebirdRows(endpoint) : duckdbRows(endpoint));
    /** True once the tier records the erasures of `rounds` rounds as applied and finished. */
    const applied = async (rounds: number): Promise<boolean> => {
      if (mode.mode === 'parquet') return (await objects.list('tier/_auditlake/erasures/')).length >= rounds;
      const properties = (await loadIcebergTable(objects, table))?.metadata.properties ?? {};
      return Number(properties[ERASURES_APPLIED_THROUGH_PROPERTY] ?? 0) > 0 && properties[PURGE_FILES_PROPERTY] === undefined;
    };
    let ingested = 0;
    const erased: string[] = [];
    for (const [round, point] of mode.crashPoints.entries()) {
      const node = await start(point);
      if (round === 0) {
        const saved = await post(node.url, '/admin/audit/settings', mode.settings, 'adm');
        expect(saved.status).toBe(200);
      }
      // Two commits of ten (batch.size 10), so older snapshots name the files too.
      for (let b = 0; b < 2; b++) {
        const events = Array.from({ length: 10 }, (_, i) => ({ source: 'spark', userId: `u${i % 3}`, action: 'data:Insert', eventId: `k${round}-${b}-${i}`, query: secret(`k${round}-${b}-${i}`) }));
        expect((await post(node.url, '/v1/api/audit', events, 'ing')).status).toBe(200);
        ingested += 10;
        await waitUntilTiered(node.url, 'adm');
      }
      if (mode.mode === 'iceberg') {
        // A compaction first: the files it replaced (holding the values) stay reachable from the
        // older snapshots only, named by no purge list until the erasure's purge records them.
        const run = await post(node.url, '/admin/audit/maintenance/run', {}, 'adm');
        expect(run.status).toBe(200);
        const { runs } = (await run.json()) as { runs: Array<{ ok: boolean; filesRewritten: number }> };
        expect(runs).toHaveLength(1);
        expect(runs[0]).toMatchObject({ ok: true });
        expect(runs[0]!.filesRewritten).toBeGreaterThanOrEqual(2);
      }
      const exited = new Promise<void>((resolve) => node.child.once('exit', () => resolve()));
      const id = `k${round}-0-3`;
      erased.push(id);
      // The sweep tiers the erasure record, then rewrites the table: killed at `point`.
      expect((await post(node.url, '/admin/audit/erase', { eventIds: [id], fields: ['query'] }, 'adm')).status).toBe(200);
      await exited;
      expect(node.child.signalCode, point).toBe('SIGKILL');

      // Restarted without the crash point: the table the crash left holds every event once
      // (read at once, whatever the resumed pass has done by then), and the erasure completes.
      const again = await start('');
      expectEachOnce(await readRows(s3Endpoint), ingested);
      await expect.poll(async () => (await applied(round + 1)) && (await readRows(s3Endpoint)).get(id)?.[0] === MARKER, { timeout: 60_000, interval: 200 }).toBe(true);
      const rows = await readRows(s3Endpoint);
      expectEachOnce(rows, ingested);
      for (const gone of erased) expect(rows.get(gone)).toEqual([MARKER]);
      expect(rows.get(`k${round}-0-4`)).toEqual([secret(`k${round}-0-4`)]);
      await again.stop();
    }

    const node = await start('');
    await waitUntilTiered(node.url, 'adm');
    // verify, offline from the bucket alone: passes, with one field erased per round.
    const verify = spawn(process.execPath, [auditlakeBin(), 'verify', ...mode.verifyArgs, '--endpoint', s3Endpoint, '--access-key-id', S3_CREDENTIALS.accessKeyId, '--secret-access-key', S3_CREDENTIALS.secretAccessKey], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    verify.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    verify.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => verify.once('exit', resolve));
    expect(out, err).toMatch(new RegExp(`^verified \\d+ records, seq 1\\.\\.\\d+, .*${mode.crashPoints.length} fields erased`));
    expect(code).toBe(0);
    // No object in the bucket's directory holds an erased value; kept values are found there
    // (read with the node stopped, so no object is being written meanwhile).
    await node.stop();
    const bucketDir = join(data.path, 's3');
    for (const id of erased) expect(await filesHolding(bucketDir, secret(id))).toEqual([]);
    expect((await filesHolding(bucketDir, secret(`k${mode.crashPoints.length - 1}-1-9`))).length).toBeGreaterThan(0);
  }, 300_000);
});
