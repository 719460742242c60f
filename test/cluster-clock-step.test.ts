// Goal: a leader reports a standby's replication lag truly after the log's ingest times went
// ahead of its wall clock (a leader whose clock ran an hour fast, then a failover to a correct
// one): ingestTs never goes back, so the wall clock minus ingestTs read 0 for every lag shorter
// than that hour. Two real `auditlake start` processes, real redis-server; the fast clock is
// `auditlake.debug.clock.offset.ms`.
import { describe, expect, it } from 'vitest';
import { ADMIN, startCluster } from './cluster-harness.js';

const HOUR_MS = 3_600_000;

async function lagOf(leaderUrl: string, nodeId: string): Promise<number | null | undefined> {
  const res = await fetch(`${leaderUrl}/admin/cluster`, { headers: { authorization: `Token ${ADMIN}` } });
  const view = (await res.json()) as { nodes: Array<{ nodeId: string; lagMs: number | null }> };
  return view.nodes.find((node) => node.nodeId === nodeId)?.lagMs;
}

function post(url: string, prefix: string): Promise<Response> {
  const events = Array.from({ length: 10 }, (_, i) => ({ source: 'trino', userId: 'u', action: 'data:Select', eventId: `${prefix}${i}` }));
  return fetch(`${url}/v1/api/audit`, { method: 'POST', headers: { authorization: `Token ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify(events) });
}

describe('replication lag after the ingest clock went ahead of the wall clock', () => {
  it('is the time the standby has been behind, not 0', async () => {
    const offsets = [0, 0];
    // A lease long enough that a standby paused for 3 s is still counted reachable (its lag shown).
    const cluster = await startCluster({ size: 2, sets: (i) => ['auditlake.cluster.lease.ttl.ms=6000', `auditlake.debug.clock.offset.ms=${offsets[i]}`] });
    const fast = await cluster.waitForLeader(30_000);
    const correct = 1 - fast;
    // The leader's clock an hour fast: it orders events alone, then its successor catches up.
    await cluster.node(correct).kill();
    await cluster.node(fast).kill();
    offsets[fast] = HOUR_MS;
    await cluster.start(fast);
    expect(await cluster.waitForLeader(30_000)).toBe(fast);
    expect((await post(cluster.node(fast).url, 'ahead-')).status).toBe(200);
    await cluster.start(correct);
    await expect.poll(async () => (await cluster.log(correct)).length, { timeout: 20_000 }).toBe((await cluster.log(fast)).length);
    // Failover to the correct clock; the fast node comes back corrected, as a standby.
    await cluster.node(fast).kill();
    expect(await cluster.waitForLeader(30_000)).toBe(correct);
    offsets[fast] = 0;
    await cluster.start(fast);
    const leaderUrl = cluster.node(correct).url;
    expect((await post(leaderUrl, 'after-')).status).toBe(200);
    await expect.poll(async () => (await cluster.log(fast)).length, { timeout: 20_000 }).toBe((await cluster.log(correct)).length);
    const log = await cluster.log(correct);
    expect(log.at(-1)!.ingestTs).toBeGreaterThan(Date.now() + HOUR_MS / 2);

    // The standby paused 3 s while the leader takes events: 3 s behind, whatever the clocks said.
    cluster.node(fast).pause();
    try {
      expect((await post(leaderUrl, 'behind-')).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(await lagOf(leaderUrl, `node${fast}`)).toBeGreaterThanOrEqual(2_500);
    } finally {
      cluster.node(fast).resume();
    }
  }, 180_000);
});
