// Goal: a leader killed (SIGKILL) after writing a batch's Parquet files but before its commit leaves nothing a successor duplicates: every event is in S3 exactly once, counted by DuckDB over the committed files (the crashed attempt's files stay unreferenced).
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort, startNodeProcess, tempDir } from '@auditlake/testkit';
import { describe, expect, it, onTestFinished } from 'vitest';
import { downloadCommittedParquet, duckdb, routeAwsS3To, s3Bucket, waitUntilTiered } from './s3-readers.js';

/** The embedded endpoint's key pair, given by env so the test's readers can sign. */
const S3_CREDENTIALS = { accessKeyId: 'ALCRASHTEST000000001', secretAccessKey: 'crash-test-secret-0123456789abcdefghij' };
const ENV = { AUDITLAKE_ADMIN_TOKEN: 'adm', AUDITLAKE_INGEST_TOKEN: 'ing', AUDITLAKE_EMBEDDED_S3_ACCESS_KEY: S3_CREDENTIALS.accessKeyId, AUDITLAKE_EMBEDDED_S3_SECRET_KEY: S3_CREDENTIALS.secretAccessKey };
const FAST = ['auditlake.audit.tier.interval.ms=100', 'auditlake.audit.tier.ingest.settle.ms=0', 'auditlake.audit.tier.batch.size=200'];

function post(url: string, path: string, body: unknown, token: string) {
  return fetch(url + path, { method: 'POST', headers: { authorization: `Token ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/**
 * Starts a node (embedded S3) that SIGKILLs itself between a tiering batch's data files and
 * its commit, ingests `events`, saves `settings`, and waits for the crash. `restart()` starts
 * the successor on the same data dir and S3 port, with the crash switch off.
 */
async function crashBeforeCommit(events: unknown[], settings: Record<string, unknown>) {
  const data = await tempDir();
  onTestFinished(() => data.remove());
  const s3Port = await freePort();
  const args = (crash: boolean) => ['--embedded-s3', '--embedded-s3-port', String(s3Port), ...[...FAST, `auditlake.debug.tier.crash.before.commit=${crash}`].flatMap((s) => ['--set', s])];
  const first = await startNodeProcess({ dataDir: data.path, args: args(true), env: ENV });
  onTestFinished(() => first.kill());
  expect((await post(first.url, '/v1/api/audit', events, 'ing')).status).toBe(200);
  expect((await post(first.url, '/admin/audit/settings', settings, 'adm')).status).toBe(200);
  // The first sweep writes the files and the process kills itself before the commit.
  await new Promise<void>((resolve) => first.child.once('exit', () => resolve()));
  expect(first.child.signalCode).toBe('SIGKILL');
  const restart = async () => {
    const node = await startNodeProcess({ dataDir: data.path, args: args(false), env: ENV });
    onTestFinished(() => node.kill());
    return node;
  };
  return { s3Port, restart };
}

describe('tiering exactly once across a crash between data files and commit (real process, embedded S3)', () => {
  it('re-tiers the uncommitted batch under new names: DuckDB over the committed files counts every event once', async () => {
    const events = Array.from({ length: 120 }, (_, i) => ({ source: 'spark', userId: `u${i % 4}`, action: 'data:Insert', eventId: `x${i}`, ts: Date.now() - (i % 3) * 86_400_000 }));
    const { s3Port, restart } = await crashBeforeCommit(events, { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://auditlake/crash', 'audit.tier.connectionId': 'local' });
    const second = await restart();
    // Data files exist, no commit marker: the batch is not tiered yet.
    const objects = s3Bucket(`http://127.0.0.1:${s3Port}`, 'auditlake', S3_CREDENTIALS);
    const keysAfterCrash = await objects.list('crash/');
    const crashedFiles = keysAfterCrash.filter((k) => k.endsWith('.parquet'));
    expect(crashedFiles.length).toBeGreaterThan(0);
    expect(keysAfterCrash.some((k) => k.includes('_auditlake/commits/'))).toBe(false);

    // More events arrive before the successor's sweep: the retried batch is a superset.
    expect((await post(second.url, '/v1/api/audit', [{ source: 'spark', userId: 'late', action: 'data:Insert', eventId: 'after-crash' }], 'ing')).status).toBe(200);
    await waitUntilTiered(second.url, 'adm');

    const dir = await downloadCommittedParquet(`http://127.0.0.1:${s3Port}`, 's3://auditlake/crash', S3_CREDENTIALS);
    const rows = await duckdb(`SELECT count(*)::INTEGER AS n, count(DISTINCT event_id)::INTEGER AS d, count(*) FILTER (WHERE event_id LIKE 'x%')::INTEGER AS x FROM read_parquet('${dir}/crash/event_date=*/*.parquet')`);
    // The crashed attempt's files were not overwritten, and no commit names them.
    const committed = await objects.list('crash/');
    expect(crashedFiles.every((k) => committed.includes(k))).toBe(true);
    expect((await readdir(join(dir, 'crash'), { recursive: true })).filter((k) => k.endsWith('.parquet')).some((k) => crashedFiles.includes(`crash/${k}`))).toBe(false);
    // 120 events, the settings change, the late event: each exactly once.
    expect(rows).toEqual([{ n: 122, d: 122, x: 120 }]);
  }, 90_000);
});

describe('iceberg tiering exactly once across a crash before the metadata commit (real process, embedded S3)', () => {
  it('leaves only unreferenced files; the successor commits every event once, as icebird reads the table', async () => {
    const events = Array.from({ length: 90 }, (_, i) => ({ source: 'flink', userId: `u${i % 3}`, action: 'data:Write', eventId: `i${i}`, ts: Date.now() - (i % 4) * 86_400_000 }));
    const { s3Port, restart } = await crashBeforeCommit(events, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'local.ops.audit_events' });
    const second = await restart();
    expect((await post(second.url, '/v1/api/audit', [{ source: 'flink', userId: 'late', action: 'data:Write', eventId: 'after-crash' }], 'ing')).status).toBe(200);
    await waitUntilTiered(second.url, 'adm');

    routeAwsS3To(`http://127.0.0.1:${s3Port}`, S3_CREDENTIALS);
    const { icebergRead } = await import('icebird');
    const rows = (await icebergRead({ tableUrl: 's3://auditlake/warehouse/ops/audit_events' })) as Array<{ event_id: string }>;
    const ids = rows.map((r) => r.event_id);
    // 90 events, the settings change, the late event: each exactly once in the table.
    expect(ids).toHaveLength(92);
    expect(new Set(ids).size).toBe(92);
    expect(ids.filter((id) => id.startsWith('i'))).toHaveLength(90);
  }, 90_000);
});
