// Goal: `POST /admin/audit/erase?ack=replicated` answers 200 only once a standby holds the
// erasure record, and with a standby down answers 503 AUDIT_REPLICATION_TIMEOUT (the erasure
// stored on the leader, the answer saying so) instead of an acknowledgement a lost leader disk
// could undo. Two real `auditlake start` processes, real redis-server.
import { describe, expect, it } from 'vitest';
import { ADMIN, expectConverged, postEvents, startCluster, type Cluster } from './cluster-harness.js';

const MARKER = '[erased by auditlake]';
const ACK_TIMEOUT_MS = 1500;

interface Rec {
  eventId: string;
  userId: string;
  action: string;
  details: string;
}

async function records(cluster: Cluster, i: number): Promise<Rec[]> {
  const res = await fetch(`${cluster.node(i).url}/admin/audit/integrity/records?limit=10000`, { headers: { authorization: `Token ${ADMIN}` } });
  expect(res.status).toBe(200);
  return (await res.text()).split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Rec);
}

function erase(url: string, eventId: string): Promise<Response> {
  return fetch(`${url}/admin/audit/erase?ack=replicated`, {
    method: 'POST',
    headers: { authorization: `Token ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ eventIds: [eventId], fields: ['userId'] }),
  });
}

describe('erase with ack=replicated (2 real nodes, real redis-server)', () => {
  it('answers once a standby holds the erasure, and 503 naming the stored erasure while none can', async () => {
    const cluster = await startCluster({ size: 2, sets: () => [`auditlake.ingest.ack.replicated.timeout.ms=${ACK_TIMEOUT_MS}`] });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    const acked = new Set(['ack-1', 'ack-2']);
    expect((await postEvents(cluster.node(leader).url, [...acked].map((eventId) => ({ eventId, source: 'trino', userId: `secret-${eventId}`, action: 'data:Select' })))).status).toBe(200);
    await expectConverged(cluster, [0, 1], acked);

    // Standby up: the answer comes once it holds the erasure, so it is there when the answer is.
    const confirmed = await erase(cluster.node(leader).url, 'ack-1');
    expect(confirmed.status).toBe(200);
    expect(await confirmed.json()).toMatchObject({ status: 'ok', erased: 1, fields: ['userId'] });
    const held = await records(cluster, standby);
    expect(held.find((r) => r.eventId === 'ack-1')?.userId).toBe(MARKER);
    expect(held.filter((r) => r.action === 'audit:EraseFields')).toHaveLength(1);

    // Standby down: the leader stores the erasure, but says no standby confirmed it.
    await cluster.node(standby).kill();
    const started = Date.now();
    const unconfirmed = await erase(cluster.node(leader).url, 'ack-2');
    expect(Date.now() - started).toBeGreaterThanOrEqual(ACK_TIMEOUT_MS - 100);
    expect(unconfirmed.status).toBe(503);
    const body = (await unconfirmed.json()) as { code: string; error: string };
    expect(body.code).toBe('AUDIT_REPLICATION_TIMEOUT');
    expect(body.error).toMatch(new RegExp(`^the erasure \\(records at seq \\d+\\) is stored on this node, but no standby confirmed it within ${ACK_TIMEOUT_MS} ms`));
    expect((await records(cluster, leader)).find((r) => r.eventId === 'ack-2')?.userId).toBe(MARKER);

    // Back up, the standby gets the erasure by replication.
    await cluster.start(standby);
    await expect.poll(async () => (await records(cluster, standby)).find((r) => r.eventId === 'ack-2')?.userId, { timeout: 30_000, interval: 200 }).toBe(MARKER);
  });
});
