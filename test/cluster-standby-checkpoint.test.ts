// Goal: a standby that never received the newest checkpoint record still continues the chain of
// checkpoints after a failover. Two real `auditlake start` processes with real Redis and a real
// S3 endpoint tier to Parquet and keep nothing locally once tiered
// (audit.tier.retain.local.days=0). The standby is killed (SIGKILL); meanwhile the leader orders
// records and a checkpoint, tiers them (no standby is heard from) and its retention deletes them,
// checkpoint record included. The standby comes back and catches up across that gap (the entry
// after it comes to it, the deleted ones cannot), the leader is killed with SIGKILL, and the
// standby leads and signs a checkpoint: it must follow the checkpoint the standby never received,
// so `auditlake verify --path` (offline, the real command) passes on the tier, and
// `auditlake verify --url` (online) on the new leader's own log; and the events it never received,
// re-sent to it, are found in the tier rather than stored again.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { integrityOf, runVerify, startParquetTieringPair, tierWatermark, untilSignedByOwnKey, verifyTier } from './checkpoint-failover.js';
import { ADMIN, postEvents } from './cluster-harness.js';

const CREDENTIALS = { accessKeyId: 'ALCLUSTERTEST0000003', secretAccessKey: 'cluster-test-secret-standby-checkpoint' };

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
    const { cluster, s3Url } = await startParquetTieringPair(CREDENTIALS, [
      // A checkpoint once two records came since the last, never by time: the test decides.
      'auditlake.audit.integrity.checkpoint.events=2',
      'auditlake.audit.integrity.checkpoint.interval.ms=86400000',
    ]);
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    await cluster.waitForLeaderKnownBy(standby);

    // The first checkpoint reaches both nodes.
    expect((await postEvents(cluster.node(leader).url, events('a', 2))).status).toBe(200);
    await expect.poll(async () => (await integrityOf(cluster, standby)).checkpoints.length, { timeout: 30_000, interval: 100 }).toBe(1);
    const first = parseSignedCheckpoint((await integrityOf(cluster, standby)).checkpoints[0]!.checkpoint);

    // The standby is down while the leader orders a second checkpoint, tiers it and deletes it.
    await cluster.node(standby).kill();
    // Sent with their own time, so a re-send carries the same one (see the end).
    const deleted = events('b', 2).map((event) => ({ ...(event as object), ts: Date.now() }));
    expect((await postEvents(cluster.node(leader).url, deleted)).status).toBe(200);
    await expect.poll(async () => (await integrityOf(cluster, leader)).checkpoints.at(-1)?.checkpoint, { timeout: 30_000, interval: 100 }).not.toBe((await integrityOf(cluster, leader)).checkpoints[0]!.checkpoint);
    const second = parseSignedCheckpoint((await integrityOf(cluster, leader)).checkpoints.at(-1)!.checkpoint);
    expect(second.previousCheckpointHash).toBe(checkpointHash(first));
    const secondRecordSeq = (await integrityOf(cluster, leader)).checkpoints.at(-1)!.seq;
    await expect.poll(() => tierWatermark(cluster.node(leader).url), { timeout: 30_000, interval: 100 }).toBeGreaterThanOrEqual(secondRecordSeq);
    await expect.poll(async () => (await cluster.log(leader)).length, { timeout: 30_000, interval: 100 }).toBe(0);

    // It comes back and catches up: one record (no checkpoint due), after the deleted range.
    await cluster.start(standby);
    await cluster.waitForLeaderKnownBy(standby);
    expect((await postEvents(cluster.node(leader).url, events('c', 1))).status).toBe(200);
    const leaderHead = (await integrityOf(cluster, leader)).head.seq;
    expect(leaderHead).toBe(secondRecordSeq + 1);
    await expect.poll(async () => (await integrityOf(cluster, standby)).head.seq, { timeout: 30_000, interval: 100 }).toBe(leaderHead);
    // The deleted events re-sent with ack=replicated, to the leader and through the standby: found
    // in the tier, not stored again, and confirmed (the tier holds them) rather than waited for
    // until the replication timeout. Nothing is appended, so the heads stay where they are.
    const viaLeader = await postEvents(cluster.node(leader).url, deleted, '?ack=replicated');
    expect(await viaLeader.json()).toEqual({ status: 'ok', ingested: 2, duplicates: 2 });
    const viaStandby = await postEvents(cluster.node(standby).url, deleted, '?ack=replicated');
    expect(viaStandby.status, await viaStandby.clone().text()).toBe(200);
    expect(await viaStandby.json()).toEqual({ status: 'ok', ingested: 2 });
    expect((await integrityOf(cluster, leader)).head.seq).toBe(leaderHead);

    // Failover before the leader signs again.
    await cluster.node(leader).kill();
    await expect.poll(() => cluster.leaderIndex(), { timeout: 20_000 }).toBe(standby);
    const survivor = cluster.node(standby).url;
    expect((await postEvents(survivor, events('d', 2))).status).toBe(200);
    const signed = await untilSignedByOwnKey(cluster, standby);
    const third = parseSignedCheckpoint(signed.checkpoints.at(-1)!.checkpoint);
    const newest = signed.checkpoints.at(-1)!.seq;
    await expect.poll(() => tierWatermark(survivor), { timeout: 30_000, interval: 200 }).toBeGreaterThanOrEqual(newest);

    // stdout is the verdict (stderr may carry runtime warnings, shown when it fails).
    const verdict = await verifyTier(s3Url, CREDENTIALS);
    expect(verdict.out, verdict.err).toMatch(/^verified (\d+) records, seq 1\.\.\1, 3 checkpoints\n$/);
    expect(verdict.code).toBe(0);
    // Online, the new leader's own log verifies too: the range it never received is declared
    // deleted by retention (as the first leader declared it), with the checkpoint in it.
    const online = await runVerify(['--url', survivor, '--token', ADMIN]);
    expect(online.out, online.err).toMatch(/^verified \d+ records, .*\d+ records removed by retention\n$/);
    expect(online.code).toBe(0);
    // The new leader's checkpoint follows the one its log never held.
    expect(third.chainId).toBe(first.chainId);
    expect(third.previousCheckpointHash).toBe(checkpointHash(second));
    // Events the first leader tiered and deleted, which the new leader never held, re-sent to
    // it: found in the tier (it took the first leader's newest deleted time with the gap), so
    // answered as retries and not tiered again.
    const resent = await postEvents(survivor, deleted);
    expect(await resent.json()).toEqual({ status: 'ok', ingested: 2, duplicates: 2 });
  }, 180_000);
});
