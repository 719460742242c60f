// Goal: retention never restarts the chain of checkpoints across a failover. Two real
// `auditlake start` processes with real Redis and a real S3 endpoint tier to Parquet and keep
// nothing locally once tiered (audit.tier.retain.local.days=0): every record, the checkpoint
// records included, is deleted from both nodes. The leader is killed with SIGKILL; the standby
// leads and signs the next checkpoint, which must continue the first leader's chain (same chainId,
// linked to its newest checkpoint), so `auditlake verify --path` (offline, the real command)
// passes on the tier.
import { describe, expect, it } from 'vitest';
import { integrityOf, startParquetTieringPair, tierWatermark, untilSignedByOwnKey, verifyTier } from './checkpoint-failover.js';
import { postEvents } from './cluster-harness.js';

const CREDENTIALS = { accessKeyId: 'ALCLUSTERTEST0000002', secretAccessKey: 'cluster-test-secret-checkpoint-retention' };

describe('the chain of checkpoints across retention and a failover (2 real nodes, real redis-server and S3 endpoint)', () => {
  it('the new leader continues the chain from a checkpoint both nodes deleted, and the tier verifies offline', async () => {
    const { cluster, s3Url } = await startParquetTieringPair(CREDENTIALS, ['auditlake.audit.integrity.checkpoint.interval.ms=300']);
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
    // The new leader signs under its own key, in the first leader's chain.
    const signed = await untilSignedByOwnKey(cluster, standby);
    expect(signed.chainId).toBe(firstChain);
    const newest = signed.checkpoints.at(-1)!.seq;
    await expect.poll(() => tierWatermark(survivor), { timeout: 30_000, interval: 200 }).toBeGreaterThanOrEqual(newest);

    // stdout is the verdict (stderr may carry runtime warnings, shown when it fails).
    const verdict = await verifyTier(s3Url, CREDENTIALS);
    expect(verdict.out, verdict.err).toMatch(/^verified (\d+) records, seq 1\.\.\1, \d+ checkpoints\n$/);
    expect(verdict.code).toBe(0);
  }, 180_000);
});
