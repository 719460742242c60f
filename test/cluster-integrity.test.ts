// Goal: a leader failover keeps the record chain provable. Three real `auditlake start`
// processes with real Redis sign checkpoints while ingest runs; the leader is killed with
// SIGKILL; the new leader registers its own key and goes on signing; then `auditlake verify`
// (the real command, online) passes on the new leader and on the other survivor, counting the
// checkpoints of both keys.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { auditlakeBin } from '@auditlake/testkit';
import { describe, expect, it } from 'vitest';
import { ADMIN, ingestLoad, startCluster, type Cluster } from './cluster-harness.js';

const run = promisify(execFile);

interface IntegrityView {
  keyId: string;
  head: { seq: number; chainHash: string };
  keys: Array<{ seq: number; key: string }>;
  checkpoints: Array<{ seq: number; checkpoint: string }>;
}

async function integrityOf(cluster: Cluster, i: number): Promise<IntegrityView> {
  const res = await fetch(`${cluster.node(i).url}/admin/audit/integrity`, { headers: { authorization: `Token ${ADMIN}` }, signal: AbortSignal.timeout(5_000) });
  expect(res.status).toBe(200);
  return (await res.json()) as IntegrityView;
}

/** The key ids that signed each checkpoint record in node i's log, in log order (read page by page as stored). */
async function signers(cluster: Cluster, i: number): Promise<string[]> {
  const keyIds: string[] = [];
  for (let afterSeq = 0; ; ) {
    const res = await fetch(`${cluster.node(i).url}/admin/audit/integrity/records?afterSeq=${afterSeq}&limit=10000`, { headers: { authorization: `Token ${ADMIN}` }, signal: AbortSignal.timeout(10_000) });
    expect(res.status).toBe(200);
    const lines = (await res.text()).split('\n').filter((line) => line !== '');
    if (lines.length === 0) return keyIds;
    for (const line of lines) {
      const record = JSON.parse(line) as { seq: number; action: string; details: string };
      if (record.action === 'integrity:Checkpoint') keyIds.push((JSON.parse(record.details) as { keyId: string }).keyId);
      afterSeq = record.seq;
    }
  }
}

/** `auditlake verify --url` as a process: its exit code and what it printed. */
async function verifyOnline(url: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [auditlakeBin(), 'verify', '--url', url, '--token', ADMIN], { timeout: 120_000 });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, out: (failed.stdout ?? '') + (failed.stderr ?? '') };
  }
}

describe('the record chain across a failover (3 real nodes, real redis-server)', () => {
  it('kill -9 of the leader: the new leader signs under its own key, and verify passes on every survivor counting both keys', async () => {
    const cluster = await startCluster({
      size: 3,
      // Checkpoints often, so both leaders sign several while the test runs.
      sets: () => ['auditlake.audit.integrity.checkpoint.events=100', 'auditlake.audit.integrity.checkpoint.interval.ms=300'],
    });
    const leader = await cluster.waitForLeader();
    const alive = new Set([0, 1, 2]);
    const load = ingestLoad(() => [...alive].map((i) => cluster.node(i).url), { prefix: 'chain-failover' });
    const firstKey = (await integrityOf(cluster, leader)).keyId;
    // The first leader has signed (and its checkpoints reached the standbys).
    const others = [0, 1, 2].filter((i) => i !== leader);
    for (const i of others) await expect.poll(async () => (await signers(cluster, i)).filter((k) => k === firstKey).length, { timeout: 60_000, interval: 500 }).toBeGreaterThanOrEqual(2);

    alive.delete(leader);
    await cluster.node(leader).kill();
    const newLeader = await cluster.waitForLeader(30_000);
    expect(newLeader).not.toBe(leader);
    const secondKey = (await integrityOf(cluster, newLeader)).keyId;
    expect(secondKey).not.toBe(firstKey);
    // Ingest goes on under the new leader, which signs under its own key.
    await expect.poll(async () => (await signers(cluster, newLeader)).filter((k) => k === secondKey).length, { timeout: 60_000, interval: 500 }).toBeGreaterThanOrEqual(2);
    await load.stop();
    expect(load.acked.size).toBeGreaterThan(0);
    const survivor = others.find((i) => i !== newLeader) as number;
    // The new leader signs once more for the last records, so its log ends with a checkpoint,
    // and the survivor has applied that whole log, its checkpoints included. Both are read in
    // one poll: events the stopped client sent through the survivor still reach the leader
    // from its outbox after load.stop(), so the leader's head is not final when first read.
    await expect
      .poll(
        async () => {
          const [lead, standby] = await Promise.all([integrityOf(cluster, newLeader), integrityOf(cluster, survivor)]);
          return lead.checkpoints.at(-1)?.seq === lead.head.seq && standby.head.seq === lead.head.seq;
        },
        { timeout: 60_000, interval: 100 },
      )
      .toBe(true);
    for (const i of [newLeader, survivor]) {
      const view = await integrityOf(cluster, i);
      const keyIds = view.keys.map((k) => (JSON.parse(k.key) as { keyId: string }).keyId);
      expect(new Set(keyIds)).toEqual(new Set([firstKey, secondKey]));
      const counted = await signers(cluster, i);
      // The first leader's checkpoints, then the new leader's: the chain goes on under the new key.
      expect(counted.indexOf(secondKey)).toBeGreaterThan(counted.lastIndexOf(firstKey));
      const verdict = await verifyOnline(cluster.node(i).url);
      // Reading the log through the API is itself audited, so the log may grow by those reads
      // (and a checkpoint for them) while verify runs: its figures lie between before and after.
      const match = /^verified (\d+) records, seq 1\.\.(\d+), (\d+) checkpoints\n$/.exec(verdict.out);
      expect(match, verdict.out).not.toBeNull();
      const [records, lastSeq, checkpoints] = (match as RegExpExecArray).slice(1).map(Number) as [number, number, number];
      expect(records).toBe(lastSeq);
      const after = await integrityOf(cluster, i);
      expect(records).toBeGreaterThanOrEqual(view.head.seq);
      expect(records).toBeLessThanOrEqual(after.head.seq);
      expect(checkpoints).toBeGreaterThanOrEqual(counted.length);
      expect(checkpoints).toBeLessThanOrEqual((await signers(cluster, i)).length);
      expect(verdict.code).toBe(0);
    }
  }, 240_000);
});
