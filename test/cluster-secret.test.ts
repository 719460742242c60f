// Goal: with auditlake.cluster.secret, whoever reads the coordinator holds the cluster token but
// opens no internal endpoint with it (the security review pulled the whole log and forwarded
// forged records with the token alone), a request signed for one node is refused at another,
// a node holding another secret takes no part, and the cluster replicates as before.
// Real redis-server and `auditlake start` processes; the secret given in the environment.
import { describe, expect, it } from 'vitest';
import { ADMIN, expectConverged, postEvents, signedPeerHeader, startCluster } from './cluster-harness.js';

const SECRET = 'a-cluster-secret-only-the-nodes-hold-0123456789';
const OTHER_SECRET = 'another-clusters-secret-0123456789abcdefgh';

describe('cluster secret', () => {
  it('replicates with signed peer requests; the token alone, a request signed for another node, or another secret opens nothing', async () => {
    const cluster = await startCluster({ size: 3, secret: (i) => (i === 2 ? OTHER_SECRET : SECRET) });
    const leader = await cluster.waitForLeader();
    expect(leader).not.toBe(2);
    const standby = leader === 0 ? 1 : 0;
    await cluster.waitForLeaderKnownBy(standby);

    // Sent to the leader and to the standby (forwarded): both end up on both, in one order.
    const acked = new Set<string>();
    for (const [i, prefix] of [[leader, 'l'], [standby, 's']] as const) {
      const events = Array.from({ length: 20 }, (_, k) => ({ eventId: `${prefix}${k}`, userId: 'ana', source: 'trino', action: 'data:Select', resource: `hive.t.${k}` }));
      expect((await postEvents(cluster.node(i).url, events)).status).toBe(200);
      for (const e of events) acked.add(e.eventId);
    }
    await expectConverged(cluster, [leader, standby], acked);

    // A reader of Redis: the cluster token, and nothing else.
    const token = await cluster.clusterToken();
    const leaderUrl = cluster.node(leader).url;
    const pullBody = JSON.stringify({ nodeId: 'intruder', after: 0, lastTerm: 0, term: 0, limit: 10, waitMs: 0, metaHash: '', catchUp: true });
    const pull = (url: string, headers: Record<string, string>) => fetch(`${url}/internal/v1/pull`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-auditlake-cluster-token': token, ...headers }, body: pullBody });
    const tokenOnly = await pull(leaderUrl, {});
    expect(tokenOnly.status).toBe(401);
    expect(((await tokenOnly.json()) as { error: string }).error).toBe(
      'internal endpoint: this node takes only peer requests signed with the cluster secret (auditlake.cluster.secret): configure the same secret on every node; the request carries no signature',
    );
    const forward = await fetch(`${leaderUrl}/internal/v1/forward`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson', 'x-auditlake-cluster-token': token },
      body: `${JSON.stringify({ nodeId: 'intruder', term: 1 })}\n${JSON.stringify({ eventId: 'forged', userId: 'mallory', source: 'trino', action: 'data:Select', resource: 'x', timestamp: Date.now() })}`,
    });
    expect(forward.status).toBe(401);

    // What a fake leader would hold: a request a standby signed for it, sent on to the real leader.
    const fakeUrl = 'http://127.0.0.1:1';
    const relayed = await pull(leaderUrl, { 'x-auditlake-peer-signature': signedPeerHeader(SECRET, `${fakeUrl}/internal/v1/pull`, pullBody) });
    expect(relayed.status).toBe(401);
    expect(((await relayed.json()) as { error: string }).error).toMatch(/^internal endpoint: peer request signature does not verify for http:\/\/127\.0\.0\.1:\d+\/internal\/v1\/pull/);
    // Signed for the leader itself, it is taken (the recipe is the documented one).
    expect((await pull(leaderUrl, { 'x-auditlake-peer-signature': signedPeerHeader(SECRET, `${leaderUrl}/internal/v1/pull`, pullBody) })).status).toBe(200);

    // The node holding another secret asks the leader for entries and is refused; it says why.
    await expect.poll(() => cluster.node(2).output(), { timeout: 30_000, interval: 100 }).toMatch(/signature does not verify[^\n]*replication pull failed/);
    // Its own log (read with its own secret) holds none of the cluster's events.
    const twoUrl = cluster.node(2).url;
    const ownLog = await pull(twoUrl, { 'x-auditlake-peer-signature': signedPeerHeader(OTHER_SECRET, `${twoUrl}/internal/v1/pull`, pullBody) });
    expect(ownLog.status).toBe(200);
    expect((await ownLog.text()).split('\n').slice(1).filter((line) => acked.has((JSON.parse(line) as { eventId: string }).eventId))).toEqual([]);
    // Client requests: a standby passes them to a leader that proved the secret; the node with
    // another secret does not pass them, with their Authorization, to a leader it cannot verify.
    const search = (i: number) => fetch(`${cluster.node(i).url}/admin/audit?limit=1000`, { headers: { authorization: `Token ${ADMIN}` } });
    const viaStandby = await search(standby);
    expect(viaStandby.headers.get('x-auditlake-proxied')).toBe(leaderUrl);
    const viaOdd = await search(2);
    expect(viaOdd.status).toBe(200);
    expect(viaOdd.headers.get('x-auditlake-proxied')).toBeNull();
    expect(((await viaOdd.json()) as { events: Array<{ eventId: string }> }).events.filter((e) => acked.has(e.eventId))).toEqual([]);
    // The forged event is nowhere.
    expect((await cluster.log(leader)).some((e) => e.eventId === 'forged')).toBe(false);
  });
});
