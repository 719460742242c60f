// Goal: with three real nodes and real Redis, leader crashes, restarts and standby crashes lose no acknowledged event.
import { describe, expect, it } from 'vitest';
import { ADMIN, expectConverged, ingestLoad, metric, postEvents, startCluster } from './cluster-harness.js';

describe('cluster failover (3 real nodes, real redis-server)', () => {
  it('kill -9 of the leader: a new leader accepts writes within 5 s, nothing acknowledged is lost, the restarted node catches up', async () => {
    const cluster = await startCluster({ size: 3 });
    const leader = await cluster.waitForLeader();
    const alive = new Set([0, 1, 2]);
    const load = ingestLoad(() => [...alive].map((i) => cluster.node(i).url), { prefix: 'kill-leader' });
    await expect.poll(() => load.acked.size, { timeout: 10_000 }).toBeGreaterThan(300);

    alive.delete(leader);
    const killedAt = Date.now();
    await cluster.node(leader).kill();
    // The first write a new leader acknowledges as replicated proves it is leading.
    const survivor = [...alive][0]!;
    let firstLeaderAckMs = -1;
    for (let k = 0; firstLeaderAckMs < 0 && Date.now() - killedAt < 20_000; k++) {
      const res = await postEvents(cluster.node(survivor).url, [{ source: 'trino', userId: 'probe', action: 'data:Insert', eventId: `probe-${k}` }], '?ack=replicated');
      if (res.status === 200) {
        firstLeaderAckMs = Date.now() - killedAt;
        load.acked.add(`probe-${k}`);
      } else await res.text();
    }
    expect(firstLeaderAckMs).toBeGreaterThanOrEqual(0);
    expect(firstLeaderAckMs).toBeLessThan(5_000);
    const newLeader = await cluster.waitForLeader();
    expect(newLeader).not.toBe(leader);

    await new Promise((r) => setTimeout(r, 1000)); // more ingest under the new leader
    await cluster.start(leader);
    alive.add(leader);
    await new Promise((r) => setTimeout(r, 1000));
    await load.stop();
    const log = await expectConverged(cluster, [0, 1, 2], load.acked);
    // ingestTs never goes backwards along the one order.
    expect(log.every((e, k) => k === 0 || e.ingestTs >= log[k - 1]!.ingestTs)).toBe(true);
    // The restarted node rejoined as a standby.
    const health = (await (await fetch(`${cluster.node(leader).url}/health`)).json()) as { role: string };
    expect(health.role).toBe('standby');
  }, 90_000);

  it('kill -9 of a standby during ingest: it restarts and catches up', async () => {
    const cluster = await startCluster({ size: 3 });
    const leader = await cluster.waitForLeader();
    const standby = [0, 1, 2].find((i) => i !== leader)!;
    const alive = new Set([0, 1, 2]);
    const load = ingestLoad(() => [...alive].map((i) => cluster.node(i).url), { prefix: 'kill-standby' });
    await expect.poll(() => load.acked.size, { timeout: 10_000 }).toBeGreaterThan(300);
    alive.delete(standby);
    await cluster.node(standby).kill();
    // The leader shows the dead standby as unreachable, with when it was last heard from,
    // not as a standby without lag.
    const leaderUrl = cluster.node(leader).url;
    const viewOf = async (i: number) => {
      const status = (await (await fetch(`${leaderUrl}/admin/cluster`, { headers: { authorization: `Token ${ADMIN}` } })).json()) as { nodes: Array<{ nodeId: string; role: string; lagMs: number | null; lastHeardMs: number }> };
      return status.nodes.find((n) => n.nodeId === `node${i}`);
    };
    await expect.poll(() => viewOf(standby), { timeout: 20_000, interval: 200 }).toMatchObject({ role: 'unreachable', lagMs: null });
    expect((await viewOf(standby))!.lastHeardMs).toBeGreaterThanOrEqual(3000);
    expect(await metric(leaderUrl, `auditlake_cluster_node_reachable\\{node="node${standby}"\\}`)).toBe(0);
    await cluster.start(standby);
    alive.add(standby);
    await expect.poll(() => viewOf(standby), { timeout: 20_000, interval: 200 }).toMatchObject({ role: 'standby' });
    await new Promise((r) => setTimeout(r, 1000));
    await load.stop();
    const log = await expectConverged(cluster, [0, 1, 2], load.acked);
    expect(await cluster.leaderIndex()).toBe(leader);
    await expect.poll(() => metric(leaderUrl, `auditlake_cluster_node_applied_seq\\{node="node${standby}"\\}`)).toBe(log.at(-1)!.seq);
    await expect.poll(() => metric(leaderUrl, `auditlake_replication_lag_seconds\\{node="node${standby}"\\}`)).toBe(0);
    expect(await metric(leaderUrl, 'auditlake_cluster_term')).toBe(log.at(-1)!.term);
    expect(await metric(leaderUrl, 'auditlake_cluster_leader')).toBe(1);
  }, 90_000);

  it('Redis down for longer than the lease: ingest is acknowledged throughout, a leader is elected again, outboxes drain', async () => {
    const cluster = await startCluster({
      size: 3,
      sets: () => ['auditlake.cluster.lease.ttl.ms=1500', 'auditlake.metadata.forward.max.attempts=3', 'auditlake.metadata.forward.queue.capacity=50'],
    });
    await cluster.waitForLeader();
    const load = ingestLoad(() => [0, 1, 2].map((i) => cluster.node(i).url), { prefix: 'redis-down' });
    await expect.poll(() => load.acked.size, { timeout: 10_000 }).toBeGreaterThan(200);
    await cluster.redis.stop();
    const before = load.acked.size;
    // Three lease TTLs without Redis: every node has stepped down, yet every request is acked.
    await new Promise((r) => setTimeout(r, 4500));
    expect(await cluster.leaderIndex()).toBe(-1);
    expect(load.acked.size).toBeGreaterThan(before + 100);
    // The reference's warnings fire (attempts exhausted, queue over capacity) but nothing is dropped.
    const exhausted = await Promise.all([0, 1, 2].map((i) => metric(cluster.node(i).url, 'auditlake_forward_attempts_exhausted_total')));
    const overCapacity = await Promise.all([0, 1, 2].map((i) => metric(cluster.node(i).url, 'auditlake_outbox_over_capacity_total')));
    expect(exhausted.every((n) => n >= 1)).toBe(true);
    expect(overCapacity.every((n) => n >= 1)).toBe(true);
    await cluster.redis.start();
    await cluster.waitForLeader();
    await new Promise((r) => setTimeout(r, 500));
    await load.stop();
    await expectConverged(cluster, [0, 1, 2], load.acked);
    const outboxes = await Promise.all([0, 1, 2].map(async (i) => (await (await fetch(`${cluster.node(i).url}/metrics`)).text()).match(/^auditlake_outbox_events (\d+)$/m)?.[1]));
    expect(outboxes).toEqual(['0', '0', '0']);
  }, 90_000);

  it('a standby proxies reads and settings to the leader, and answers stale reads (and 503 for settings) without one', async () => {
    const cluster = await startCluster({ size: 2, sets: () => ['auditlake.cluster.lease.ttl.ms=1000'] });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    const auth = { authorization: `Token ${ADMIN}`, 'content-type': 'application/json' };
    const standbyUrl = cluster.node(standby).url;
    await cluster.waitForLeaderKnownBy(standby);
    const saved = await fetch(`${standbyUrl}/admin/audit/settings`, { method: 'POST', headers: auth, body: '{"audit.retention.days":33}' });
    expect(saved.status).toBe(200);
    expect(saved.headers.get('x-auditlake-proxied')).toBe(cluster.node(leader).url);
    // The setting replicates to the standby's own store too.
    await cluster.redis.stop();
    await new Promise((r) => setTimeout(r, 2500));
    const local = (await (await fetch(`${standbyUrl}/admin/audit/settings`, { headers: auth })).json()) as Record<string, unknown>;
    expect(local).toMatchObject({ 'audit.retention.days': 33, stale: true });
    const search = (await (await fetch(`${standbyUrl}/admin/audit?q=UpdateSettings`, { headers: auth })).json()) as { count: number; stale?: boolean };
    expect(search).toMatchObject({ count: 1, stale: true });
    const refused = await fetch(`${standbyUrl}/admin/audit/settings`, { method: 'POST', headers: auth, body: '{"audit.retention.days":34}' });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: string }).error).toMatch(/^no leader is reachable, so settings cannot be changed now \(nothing was saved\)/);
  }, 60_000);
});
