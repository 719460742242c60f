// What the system tests of the chain of checkpoints across retention and failover share: two
// real nodes tiering to Parquet on an S3 endpoint of their own, reading a node's integrity view
// and tier watermark, waiting for a new leader's first checkpoint, and running `auditlake verify`.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startS3Endpoint } from '@auditlake/s3-endpoint';
import { auditlakeBin } from '@auditlake/testkit';
import { expect, onTestFinished } from 'vitest';
import { ADMIN, startCluster, type Cluster } from './cluster-harness.js';

const run = promisify(execFile);

/** `GET /admin/audit/integrity`, the parts these tests read. */
export interface IntegrityView {
  keyId: string;
  chainId: string | undefined;
  head: { seq: number };
  checkpoints: Array<{ seq: number; checkpoint: string }>;
}

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/**
 * Two real nodes (lease 1 s) tiering to Parquet at `s3://ext/audit` on an S3 endpoint started
 * for the test (stopped and removed when it finishes), keeping nothing locally once tiered
 * (`audit.tier.retain.local.days=0`, retention every 200 ms), plus `sets`.
 */
export async function startParquetTieringPair(credentials: Credentials, sets: readonly string[]): Promise<{ cluster: Cluster; s3Url: string }> {
  const directory = await mkdtemp(join(tmpdir(), 'auditlake-cluster-s3-'));
  const s3 = await startS3Endpoint({ directory, host: '127.0.0.1', port: 0, buckets: ['ext'], credentials });
  onTestFinished(async () => {
    await s3.close();
    await rm(directory, { recursive: true, force: true });
  });
  const cluster = await startCluster({
    size: 2,
    sets: () => [
      'auditlake.cluster.lease.ttl.ms=1000',
      `auditlake.s3.connections.ext.endpoint=${s3.url}`,
      `auditlake.s3.connections.ext.accessKeyId=${credentials.accessKeyId}`,
      `auditlake.s3.connections.ext.secretAccessKey=${credentials.secretAccessKey}`,
      'auditlake.audit.tier.mode=parquet',
      'auditlake.audit.tier.parquet.path=s3://ext/audit',
      'auditlake.audit.tier.connectionId=ext',
      'auditlake.audit.tier.interval.ms=100',
      'auditlake.audit.tier.ingest.settle.ms=0',
      'auditlake.audit.tier.retain.local.days=0',
      'auditlake.audit.retention.interval.ms=200',
      ...sets,
    ],
  });
  return { cluster, s3Url: s3.url };
}

export async function integrityOf(cluster: Cluster, i: number): Promise<IntegrityView> {
  const res = await fetch(`${cluster.node(i).url}/admin/audit/integrity`, { headers: { authorization: `Token ${ADMIN}` }, signal: AbortSignal.timeout(5_000) });
  expect(res.status).toBe(200);
  return (await res.json()) as IntegrityView;
}

/** The seq through which node `url` has tiered (its tierStatus). */
export async function tierWatermark(url: string): Promise<number> {
  const res = await fetch(`${url}/admin/audit/settings`, { headers: { authorization: `Token ${ADMIN}` } });
  return ((await res.json()) as { tierStatus: { watermark: { seq: number } } }).tierStatus.watermark.seq;
}

/** Waits until node `i` lists a checkpoint signed by its own key; answers its view then. */
export async function untilSignedByOwnKey(cluster: Cluster, i: number): Promise<IntegrityView> {
  const ownKey = (await integrityOf(cluster, i)).keyId;
  let signed: IntegrityView | undefined;
  await expect
    .poll(
      async () => {
        signed = await integrityOf(cluster, i);
        return signed.checkpoints.some(({ checkpoint }) => (JSON.parse(checkpoint) as { keyId: string }).keyId === ownKey);
      },
      { timeout: 30_000, interval: 200 },
    )
    .toBe(true);
  return signed as IntegrityView;
}

/** `auditlake verify` (the real command, no worker threads) with `args`: exit code, stdout (the verdict) and stderr. */
export async function runVerify(args: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [auditlakeBin(), 'verify', ...args, '--threads', '0'], { timeout: 120_000 });
    return { code: 0, out: stdout, err: stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, out: failed.stdout ?? '', err: failed.stderr ?? '' };
  }
}

/** `auditlake verify --path s3://ext/audit` against the pair's endpoint (offline, from the bucket alone). */
export function verifyTier(s3Url: string, credentials: Credentials): Promise<{ code: number; out: string; err: string }> {
  return runVerify(['--path', 's3://ext/audit', '--endpoint', s3Url, '--access-key-id', credentials.accessKeyId, '--secret-access-key', credentials.secretAccessKey]);
}
