// Goal: a node killed (SIGKILL) at each step boundary of an Iceberg maintenance run, and in the middle of a step (new files written but not committed; expiry committed but nothing deleted yet), leaves a table that icebird reads with every event exactly once; the next run finishes the job (leftovers removed as orphans) and DuckDB agrees over the current snapshot's files.
import { currentManifests, icebergTableAt, loadIcebergTable, snapshotManifests } from '@auditlake/lake';
import { freePort, startNodeProcess, tempDir, type NodeProcess } from '@auditlake/testkit';
import { describe, expect, it, onTestFinished } from 'vitest';
import { downloadKeys, duckdb, routeAwsS3To, s3Bucket, waitUntilTiered } from './s3-readers.js';

const S3_CREDENTIALS = { accessKeyId: 'ALMAINTCRASH00000001', secretAccessKey: 'maint-crash-secret-0123456789abcdefghi' };
const ENV = { AUDITLAKE_ADMIN_TOKEN: 'adm', AUDITLAKE_INGEST_TOKEN: 'ing', AUDITLAKE_EMBEDDED_S3_ACCESS_KEY: S3_CREDENTIALS.accessKeyId, AUDITLAKE_EMBEDDED_S3_SECRET_KEY: S3_CREDENTIALS.secretAccessKey };
const FAST = ['auditlake.audit.tier.interval.ms=100', 'auditlake.audit.tier.ingest.settle.ms=0', 'auditlake.audit.tier.batch.size=10'];
const TABLE_URL = 's3://auditlake/warehouse/ops/audit_events';
/** The least orphan.min.age.ms settings accept (1 hour). */
const ORPHAN_MIN_AGE_MS = 3_600_000;
/** Where the run is killed, in run order: each boundary, and two points inside a step. */
const CRASH_POINTS = ['compaction-written', 'compaction', 'manifest-rewrite', 'expiry-committed', 'expiry', 'metadata-cleanup'] as const;

function post(url: string, path: string, body: unknown, token: string) {
  return fetch(url + path, { method: 'POST', headers: { authorization: `Token ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** Every event id of ours (prefix `k`) icebird reads from the table, with how often. */
async function icebirdCounts(s3Endpoint: string): Promise<Map<string, number>> {
  routeAwsS3To(s3Endpoint, S3_CREDENTIALS);
  const { icebergRead } = await import('icebird');
  const rows = (await icebergRead({ tableUrl: TABLE_URL })) as Array<{ event_id: string }>;
  const counts = new Map<string, number>();
  for (const { event_id: id } of rows) if (id.startsWith('k')) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}

function expectEachOnce(counts: Map<string, number>, ingested: number): void {
  expect(counts.size).toBe(ingested);
  expect([...counts.values()].every((n) => n === 1)).toBe(true);
}

describe('table maintenance killed with -9 (real process, embedded S3)', () => {
  it('at every step boundary and mid-step: every event once after each crash, and the next run finishes the job', async () => {
    const data = await tempDir();
    onTestFinished(() => data.remove());
    const s3Port = await freePort();
    const s3Endpoint = `http://127.0.0.1:${s3Port}`;
    const start = async (crashAt: string, extra: string[] = []): Promise<NodeProcess> => {
      const sets = [...FAST, `auditlake.debug.maintenance.crash.at=${crashAt}`, ...extra];
      const node = await startNodeProcess({ dataDir: data.path, args: ['--embedded-s3', '--embedded-s3-port', String(s3Port), ...sets.flatMap((s) => ['--set', s])], env: ENV });
      onTestFinished(() => node.kill());
      return node;
    };
    let ingested = 0;
    for (const [round, point] of CRASH_POINTS.entries()) {
      const node = await start(point);
      if (round === 0) {
        const saved = await post(node.url, '/admin/audit/settings', { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'local.ops.audit_events', 'audit.tier.maintenance.snapshot.retain.last': 2, 'audit.tier.maintenance.orphan.min.age.ms': ORPHAN_MIN_AGE_MS, 'audit.tier.maintenance.metadata.previous.versions.max': 2 }, 'adm');
        expect(saved.status).toBe(200);
      } else {
        // The table the last crash left: every event once.
        expectEachOnce(await icebirdCounts(s3Endpoint), ingested);
      }
      // Three commits of ten (batch.size 10): small files for compaction, snapshots to expire.
      for (let b = 0; b < 3; b++) {
        const events = Array.from({ length: 10 }, (_, i) => ({ source: 'spark', userId: `u${i % 3}`, action: 'data:Insert', eventId: `k${round}-${b}-${i}` }));
        expect((await post(node.url, '/v1/api/audit', events, 'ing')).status).toBe(200);
        ingested += 10;
        await waitUntilTiered(node.url, 'adm');
      }
      const exited = new Promise<void>((resolve) => node.child.once('exit', () => resolve()));
      await post(node.url, '/admin/audit/maintenance/run', {}, 'adm').then(
        () => expect.unreachable(`the run should have been killed at ${point}`),
        () => undefined,
      );
      await exited;
      expect(node.child.signalCode, point).toBe('SIGKILL');
    }

    // The last node's maintenance clock runs two hours ahead of the store's LastModified times, so
    // what the crashes left is past the (least) orphan minimum age, and its run removes it.
    const node = await start('', [`auditlake.debug.maintenance.clock.offset.ms=${2 * ORPHAN_MIN_AGE_MS}`]);
    expectEachOnce(await icebirdCounts(s3Endpoint), ingested);
    const res = await post(node.url, '/admin/audit/maintenance/run', {}, 'adm');
    expect(res.status).toBe(200);
    const { runs } = (await res.json()) as { runs: Array<Record<string, unknown>> };
    const [run] = runs;
    expect(run).toMatchObject({ ok: true, error: null });
    // The run is itself an audit event: let the sweep commit it, so no sweep is between its
    // data file and its commit while the files are compared below.
    await waitUntilTiered(node.url, 'adm');
    expectEachOnce(await icebirdCounts(s3Endpoint), ingested);

    // The job is finished: no data file is left that no retained snapshot names (leftovers of
    // the crashes were orphans, now removed), and DuckDB over exactly the current snapshot's
    // files counts every event once.
    const objects = s3Bucket(s3Endpoint, 'auditlake', S3_CREDENTIALS);
    const table = icebergTableAt({ identifier: 'local.ops.audit_events', location: TABLE_URL, connectionId: 't' });
    const loaded = (await loadIcebergTable(objects, table))!;
    const keyOf = (path: string) => path.slice('s3://auditlake/'.length);
    const reached = new Set<string>();
    for (const snapshot of loaded.metadata.snapshots) for (const m of await snapshotManifests(objects, table, snapshot)) for (const e of m.entries) reached.add(keyOf(e.data_file.file_path));
    const stored = (await objects.list('warehouse/ops/audit_events/data/')).filter((key) => key.endsWith('.parquet'));
    expect(stored.filter((key) => !reached.has(key))).toEqual([]);
    const live = (await currentManifests(objects, table, loaded.metadata)).flatMap((m) => m.entries.filter((e) => e.status !== 2).map((e) => keyOf(e.data_file.file_path)));
    const dir = await downloadKeys(objects, live);
    const rows = await duckdb(`SELECT count(*) FILTER (WHERE event_id LIKE 'k%')::INTEGER AS n, count(DISTINCT event_id) FILTER (WHERE event_id LIKE 'k%')::INTEGER AS d FROM read_parquet('${dir}/**/*.parquet')`);
    expect(rows).toEqual([{ n: ingested, d: ingested }]);
  }, 300_000);
});
