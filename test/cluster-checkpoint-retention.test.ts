// Goal: retention never restarts the chain of checkpoints across a failover. Two real
// `auditlake start` processes with real Redis and a real S3 endpoint tier to Parquet and keep
// nothing locally once tiered (audit.tier.retain.local.days=0): every record, the checkpoint
// records included, is deleted from both nodes. The leader is killed with SIGKILL; the standby
// leads and signs the next checkpoint, which must continue the first leader's chain (same chainId,
// linked to its newest checkpoint), so `auditlake verify --path` (offline, the real command)
// passes on the tier.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startS3Endpoint } from '@auditlake/s3-endpoint';
import { auditlakeBin } from '@auditlake/testkit';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ADMIN, postEvents, startCluster, type Cluster } from './cluster-harness.js';

const run = promisify(execFile);
const CREDENTIALS = { accessKeyId: 'ALCLUSTERTEST0000002', secretAccessKey: 'cluster-test-secret-checkpoint-retention' };

interface IntegrityView {
  keyId: string;
  chainId: string | undefined;
  checkpoints: Array<{ seq: number; checkpoint: string }>;
}

async function integrityOf(cluster: Cluster, i: number): Promise<IntegrityView> {
  const res = await fetch(`${cluster.node(i).url}/admin/audit/integrity`, { headers: { authorization: `Token ${ADMIN}` }, signal: AbortSignal.timeout(5_000) });
  expect(res.status).toBe(200);
  return (await res.json()) as IntegrityView;
}

async function watermark(url: string): Promise<number> {
  const res = await fetch(`${url}/admin/audit/settings`, { headers: { authorization: `Token ${ADMIN}` } });
  return ((await res.json()) as { tierStatus: { watermark: { seq: number } } }).tierStatus.watermark.seq;
}

describe('the chain of checkpoints across retention and a failover (2 real nodes, real redis-server and S3 endpoint)', () => {
  it('the new leader continues the chain from a checkpoint both nodes deleted, and the tier verifies offline', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'auditlake-cluster-s3-'));
    const s3 = await startS3Endpoint({ directory, host: '127.0.0.1', port: 0, buckets: ['ext'], credentials: CREDENTIALS });
    onTestFinished(async () => {
      await s3.close();
      await rm(directory, { recursive: true, force: true });
    });
    const cluster = await startCluster({
      size: 2,
      sets: () => [
        'auditlake.cluster.lease.ttl.ms=1000',
        `auditlake.s3.connections.ext.endpoint=${s3.url}`,
        `auditlake.s3.connections.ext.accessKeyId=${CREDENTIALS.accessKeyId}`,
        `auditlake.s3.connections.ext.secretAccessKey=${CREDENTIALS.secretAccessKey}`,
        'auditlake.audit.tier.mode=parquet',
        'auditlake.audit.tier.parquet.path=s3://ext/audit',
        'auditlake.audit.tier.connectionId=ext',
        'auditlake.audit.tier.interval.ms=100',
        'auditlake.audit.tier.ingest.settle.ms=0',
        'auditlake.audit.tier.retain.local.days=0',
        'auditlake.audit.retention.interval.ms=200',
        'auditlake.audit.integrity.checkpoint.interval.ms=300',
      ],
    });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    await cluster.waitForLeaderKnownBy(standby);
    expect((await postEvents(cluster.node(leader).url, [{ source: 'trino', userId: 'u', action: 'data:Select', eventId: 'before-0' }])).status).toBe(200);
    await expect.poll(async () => (await integrityOf(cluster, leader)).checkpoints.length, { timeout: 30_000, interval: 200 }).toBeGreaterThanOrEqual(1);
    const firstChain = (await integrityOf(cluster, leader)).chainId;
    expect(firstChain).toBeDefined();
    // No more requests through the API (they are audited): the last records are checkpointed,
    // tiered, and deleted by retention on both nodes. The internal pull reads without adding.
    for (const i of [leader, standby]) await expect.poll(async () => (await cluster.log(i)).length, { timeout: 30_000, interval: 200 }).toBe(0);

    await cluster.node(leader).kill();
    await expect.poll(() => cluster.leaderIndex(), { timeout: 20_000 }).toBe(standby);
    const survivor = cluster.node(standby).url;
    expect((await postEvents(survivor, [{ source: 'trino', userId: 'u', action: 'data:Select', eventId: 'after-0' }])).status).toBe(200);
    const newKey = (await integrityOf(cluster, standby)).keyId;
    // The new leader signs under its own key, in the first leader's chain.
    let signed: IntegrityView | undefined;
    await expect
      .poll(
        async () => {
          signed = await integrityOf(cluster, standby);
          return signed.checkpoints.some(({ checkpoint }) => (JSON.parse(checkpoint) as { keyId: string }).keyId === newKey);
        },
        { timeout: 30_000, interval: 200 },
      )
      .toBe(true);
    expect(signed?.chainId).toBe(firstChain);
    const newest = signed?.checkpoints.at(-1)?.seq as number;
    await expect.poll(() => watermark(survivor), { timeout: 30_000, interval: 200 }).toBeGreaterThanOrEqual(newest);

    // stdout is the verdict (stderr may carry runtime warnings, shown when it fails).
    let verdict: { code: number; out: string; err: string };
    try {
      const { stdout, stderr } = await run(process.execPath, [auditlakeBin(), 'verify', '--path', 's3://ext/audit', '--endpoint', s3.url, '--access-key-id', CREDENTIALS.accessKeyId, '--secret-access-key', CREDENTIALS.secretAccessKey, '--threads', '0'], { timeout: 120_000 });
      verdict = { code: 0, out: stdout, err: stderr };
    } catch (err) {
      const failed = err as { code?: number; stdout?: string; stderr?: string };
      verdict = { code: failed.code ?? -1, out: failed.stdout ?? '', err: failed.stderr ?? '' };
    }
    expect(verdict.out, verdict.err).toMatch(/^verified (\d+) records, seq 1\.\.\1, \d+ checkpoints\n$/);
    expect(verdict.code).toBe(0);
  }, 180_000);
});
