// Goal: on a cluster whose nodes bind sourceIds to principals (auditlake.ingest.sources.*), no
// other principal can fill or open holes in a source's completeness ledger through any node:
// the standby refuses a spoofed request before anything reaches its outbox (so nothing is
// forwarded), the leader refuses it too, and after the leader dies the new leader — holding
// the ledger it replicated — refuses it and still shows the hole, which only the bound
// principal then fills.
import { describe, expect, it } from 'vitest';
import { ADMIN, startCluster, type Cluster } from './cluster-harness.js';

const TRINO = 'trino-writer-secret';
const SPARK = 'spark-writer-secret';
const SETS = [
  `auditlake.auth.tokens=trino-writer:ingest:${TRINO},spark-writer:ingest:${SPARK}`,
  'auditlake.ingest.sources.trino-writer=plugin-trino',
  'auditlake.ingest.sources.spark-writer=plugin-spark',
];

function post(url: string, token: string, events: unknown[]): Promise<Response> {
  return fetch(`${url}/v1/api/audit`, {
    method: 'POST',
    headers: { authorization: `Token ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(events),
    signal: AbortSignal.timeout(15_000),
  });
}

const ev = (eventId: string, sourceId: string, sourceSeq: number) => ({ eventId, source: 'trino', userId: 'alice', action: 'data:Select', sourceId, sourceSeq });

async function trinoLedger(url: string): Promise<unknown> {
  const res = await fetch(`${url}/admin/audit/ledger?sourceId=plugin-trino`, { headers: { authorization: `Token ${ADMIN}` } });
  const body = (await res.json()) as { sources: Array<Record<string, unknown>> };
  const source = body.sources[0];
  return source && { received: source['received'], contiguousThrough: source['contiguousThrough'], highestSourceSeq: source['highestSourceSeq'], gaps: source['gaps'] };
}

async function expectSpoofRefused(cluster: Cluster, i: number): Promise<void> {
  const url = cluster.node(i).url;
  for (const [token, principal] of [
    [SPARK, 'spark-writer'],
    [ADMIN, 'admin'],
  ] as const) {
    const res = await post(url, token, [ev(`own-${i}-${principal}`, 'plugin-spark', 1), ev(`fill-${i}-${principal}`, 'plugin-trino', 3)]);
    const body = (await res.json()) as { code: string; error: string };
    expect({ node: i, principal, status: res.status, code: body.code }).toEqual({ node: i, principal, status: 403, code: 'AUDIT_SOURCE_NOT_BOUND' });
    expect(body.error).toContain(`events[${principal === 'admin' ? 0 : 1}].sourceId "plugin-${principal === 'admin' ? 'spark' : 'trino'}" is not bound to principal "${principal}"`);
  }
}

describe('sourceIds bound to principals, on a cluster', () => {
  it('refuses a spoofed sourceId on the standby and the leader, and after failover; the ledger keeps its hole until the bound principal fills it', async () => {
    const cluster = await startCluster({ size: 2, sets: () => SETS });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    await cluster.waitForLeaderKnownBy(standby);

    // The bound writer, through the standby (forwarded to the leader): 1, 2 and 4; 3 is a hole.
    expect((await post(cluster.node(standby).url, TRINO, [ev('t1', 'plugin-trino', 1), ev('t2', 'plugin-trino', 2), ev('t4', 'plugin-trino', 4)])).status).toBe(200);
    const holed = { received: 3, contiguousThrough: 2, highestSourceSeq: 4, gaps: [{ fromSeq: 3, toSeq: 3 }] };
    await expect.poll(() => trinoLedger(cluster.node(leader).url), { timeout: 20_000 }).toEqual(holed);

    await expectSpoofRefused(cluster, standby);
    await expectSpoofRefused(cluster, leader);

    // A later event through the standby reaches the leader after anything queued before it:
    // once it is in both logs, nothing of the refused requests is on its way.
    expect((await post(cluster.node(standby).url, TRINO, [ev('t5', 'plugin-trino', 5)])).status).toBe(200);
    await expect.poll(async () => (await Promise.all([0, 1].map((i) => cluster.log(i)))).every((log) => log.some((e) => e.eventId === 't5')), { timeout: 20_000 }).toBe(true);
    for (const i of [0, 1]) expect((await cluster.log(i)).filter((e) => /^(own|fill)-/.test(e.eventId))).toEqual([]);
    const stillHoled = { received: 4, contiguousThrough: 2, highestSourceSeq: 5, gaps: [{ fromSeq: 3, toSeq: 3 }] };
    expect(await trinoLedger(cluster.node(leader).url)).toEqual(stillHoled);

    // Failover: the standby leads with the ledger it replicated, and binds as the old leader did.
    await cluster.node(leader).kill();
    expect(await cluster.waitForLeader(20_000)).toBe(standby);
    await expectSpoofRefused(cluster, standby);
    expect(await trinoLedger(cluster.node(standby).url)).toEqual(stillHoled);
    expect((await post(cluster.node(standby).url, TRINO, [ev('t3', 'plugin-trino', 3)])).status).toBe(200);
    expect(await trinoLedger(cluster.node(standby).url)).toEqual({ received: 5, contiguousThrough: 5, highestSourceSeq: 5, gaps: [] });
  });
});
