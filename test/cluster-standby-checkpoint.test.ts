// Goal: a standby that never received the newest checkpoint record still continues the chain of
// checkpoints after a failover. Two real `auditlake start` processes with real Redis and a real
// S3 endpoint tier to Parquet and keep nothing locally once tiered
// (audit.tier.retain.local.days=0). The standby is killed (SIGKILL); meanwhile the leader orders
// records and a checkpoint, tiers them (no standby is heard from) and its retention deletes them,
// checkpoint record included. The standby comes back and catches up across that gap (the entry
// after it comes to it, the deleted ones cannot), the leader is killed with SIGKILL, and the
// standby leads and signs a checkpoint: it must follow the checkpoint the standby never received,
// so `auditlake verify --path` (offline, the real command) passes on the tier, and
// `auditlake verify --url` (online) on the new leader's own log.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startS3Endpoint } from '@auditlake/s3-endpoint';
import { auditlakeBin } from '@auditlake/testkit';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ADMIN, postEvents, startCluster, type Cluster } from './cluster-harness.js';

const run = promisify(execFile);
const CREDENTIALS = { accessKeyId: 'ALCLUSTERTEST0000003', secretAccessKey: 'cluster-test-secret-standby-checkpoint' };

interface IntegrityView {
  keyId: string;
  chainId: string | undefined;
  head: { seq: number };
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

interface Checkpoint {
  chainId: string;
  keyId: string;
  previousCheckpointHash: string;
  signature: string;
}

function parseSignedCheckpoint(text: string): Checkpoint {
  return JSON.parse(text) as Checkpoint;
}

/** What the next checkpoint links to (docs/integrity.md, "Checkpoints"): SHA-256 of the signed text, a newline and the signature. */
function checkpointHash(checkpoint: Checkpoint): string {
  const { signature, ...signedFields } = checkpoint;
  return createHash('sha256').update(`${JSON.stringify(signedFields)}\n${signature}`).digest('hex');
}

function events(prefix: string, n: number): unknown[] {
  return Array.from({ length: n }, (_, i) => ({ source: 'trino', userId: 'u', action: 'data:Select', eventId: `${prefix}-${i}` }));
}

describe('the chain of checkpoints after a standby caught up across a range its leader pruned (2 real nodes, real redis-server and S3 endpoint)', () => {
  it('the standby, once leader, continues from the checkpoint it never received; the tier verifies offline, its log online', async () => {
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
        // A checkpoint once two records came since the last, never by time: the test decides.
        'auditlake.audit.integrity.checkpoint.events=2',
        'auditlake.audit.integrity.checkpoint.interval.ms=86400000',
      ],
    });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    await cluster.waitForLeaderKnownBy(standby);

    // The first checkpoint reaches both nodes.
    expect((await postEvents(cluster.node(leader).url, events('a', 2))).status).toBe(200);
    await expect.poll(async () => (await integrityOf(cluster, standby)).checkpoints.length, { timeout: 30_000, interval: 100 }).toBe(1);
    const first = parseSignedCheckpoint((await integrityOf(cluster, standby)).checkpoints[0]!.checkpoint);

    // The standby is down while the leader orders a second checkpoint, tiers it and deletes it.
    await cluster.node(standby).kill();
    expect((await postEvents(cluster.node(leader).url, events('b', 2))).status).toBe(200);
    await expect.poll(async () => (await integrityOf(cluster, leader)).checkpoints.at(-1)?.checkpoint, { timeout: 30_000, interval: 100 }).not.toBe((await integrityOf(cluster, leader)).checkpoints[0]!.checkpoint);
    const second = parseSignedCheckpoint((await integrityOf(cluster, leader)).checkpoints.at(-1)!.checkpoint);
    expect(second.previousCheckpointHash).toBe(checkpointHash(first));
    const secondRecordSeq = (await integrityOf(cluster, leader)).checkpoints.at(-1)!.seq;
    await expect.poll(() => watermark(cluster.node(leader).url), { timeout: 30_000, interval: 100 }).toBeGreaterThanOrEqual(secondRecordSeq);
    await expect.poll(async () => (await cluster.log(leader)).length, { timeout: 30_000, interval: 100 }).toBe(0);

    // It comes back and catches up: one record (no checkpoint due), after the deleted range.
    await cluster.start(standby);
    await cluster.waitForLeaderKnownBy(standby);
    expect((await postEvents(cluster.node(leader).url, events('c', 1))).status).toBe(200);
    const leaderHead = (await integrityOf(cluster, leader)).head.seq;
    expect(leaderHead).toBe(secondRecordSeq + 1);
    await expect.poll(async () => (await integrityOf(cluster, standby)).head.seq, { timeout: 30_000, interval: 100 }).toBe(leaderHead);

    // Failover before the leader signs again.
    await cluster.node(leader).kill();
    await expect.poll(() => cluster.leaderIndex(), { timeout: 20_000 }).toBe(standby);
    const survivor = cluster.node(standby).url;
    expect((await postEvents(survivor, events('d', 2))).status).toBe(200);
    const newKey = (await integrityOf(cluster, standby)).keyId;
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
    const third = parseSignedCheckpoint(signed!.checkpoints.at(-1)!.checkpoint);
    const newest = signed!.checkpoints.at(-1)!.seq;
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
    expect(verdict.out, verdict.err).toMatch(/^verified (\d+) records, seq 1\.\.\1, 3 checkpoints\n$/);
    expect(verdict.code).toBe(0);
    // Online, the new leader's own log verifies too: the range it never received is declared
    // deleted by retention (as the first leader declared it), with the checkpoint in it.
    let online: { code: number; out: string; err: string };
    try {
      const { stdout, stderr } = await run(process.execPath, [auditlakeBin(), 'verify', '--url', survivor, '--token', ADMIN, '--threads', '0'], { timeout: 120_000 });
      online = { code: 0, out: stdout, err: stderr };
    } catch (err) {
      const failed = err as { code?: number; stdout?: string; stderr?: string };
      online = { code: failed.code ?? -1, out: failed.stdout ?? '', err: failed.stderr ?? '' };
    }
    expect(online.out, online.err).toMatch(/^verified \d+ records, .*\d+ records removed by retention\n$/);
    expect(online.code).toBe(0);
    // The new leader's checkpoint follows the one its log never held.
    expect(third.chainId).toBe(first.chainId);
    expect(third.previousCheckpointHash).toBe(checkpointHash(second));
  }, 180_000);
});
