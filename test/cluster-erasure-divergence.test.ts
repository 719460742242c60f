// Goal: an erasure ordered by a leader whose standby was down, and the event it erased, both cut
// from that leader's log when the standby leads meanwhile, come back through the outbox without
// the erased value reappearing and without the erasure naming an unrelated event: the new leader
// re-applies the erasure by eventId. Two real `auditlake start` processes, real redis-server,
// then `auditlake verify` (the real command, online) on both nodes.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { auditlakeBin } from '@auditlake/testkit';
import { describe, expect, it } from 'vitest';
import { ADMIN, expectConverged, postEvents, startCluster, type Cluster } from './cluster-harness.js';

const run = promisify(execFile);
const MARKER = '[erased by auditlake]';

async function verifyOnline(url: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [auditlakeBin(), 'verify', '--url', url, '--token', ADMIN, '--threads', '0'], { timeout: 120_000 });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, out: (failed.stdout ?? '') + (failed.stderr ?? '') };
  }
}

interface Rec {
  eventId: string;
  seq: number;
  userId: string;
  action: string;
  details: string;
  erased?: Record<string, string>;
}

/** Node i's whole log as the integrity endpoint lists it (stored records, erased fields as the marker). */
async function records(cluster: Cluster, i: number): Promise<Rec[]> {
  const res = await fetch(`${cluster.node(i).url}/admin/audit/integrity/records?limit=10000`, { headers: { authorization: `Token ${ADMIN}` } });
  expect(res.status).toBe(200);
  return (await res.text()).split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Rec);
}

async function post(url: string, path: string, body: unknown): Promise<Response> {
  return fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Token ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

describe('an erasure cut from a diverged log (2 real nodes, real redis-server)', () => {
  it('is re-applied by eventId on the new leader: the value never comes back and verify passes', async () => {
    const cluster = await startCluster({ size: 2, sets: () => ['auditlake.cluster.lease.ttl.ms=1000'] });
    const first = await cluster.waitForLeader();
    const other = 1 - first;
    const acked = new Set(['base-1']);
    expect((await postEvents(cluster.node(first).url, [{ eventId: 'base-1', source: 'spark', userId: 'u', action: 'data:Write' }])).status).toBe(200);
    await expectConverged(cluster, [0, 1], acked);

    // The standby down: the leader stores E and erases its user on its own disk only.
    await cluster.node(other).kill();
    expect((await postEvents(cluster.node(first).url, [{ eventId: 'div-E', source: 'trino', userId: 'divuser-secret', action: 'data:Select', tables: ['div_tbl'] }])).status).toBe(200);
    const erase = await post(cluster.node(first).url, '/admin/audit/erase', { eventIds: ['div-E'], fields: ['userId'] });
    expect(erase.status).toBe(200);
    expect((await records(cluster, first)).find((r) => r.eventId === 'div-E')?.userId).toBe(MARKER);

    // The leader dies; the other node leads and orders other events at the same seqs.
    await cluster.node(first).kill();
    await cluster.start(other);
    await expect.poll(() => cluster.leaderIndex(), { timeout: 20_000, interval: 100 }).toBe(other);
    const xs = ['div-X1', 'div-X2', 'div-X3'];
    expect((await postEvents(cluster.node(other).url, xs.map((eventId) => ({ eventId, source: 'trino', userId: 'x', action: 'data:Select' })))).status).toBe(200);
    for (const id of [...xs, 'div-E']) acked.add(id);

    // The old leader comes back as a standby: it cuts its diverged tail into its outbox and forwards it.
    await cluster.start(first);
    await expectConverged(cluster, [0, 1], acked, 40_000);
    let log: Rec[] = [];
    await expect
      .poll(async () => (log = await records(cluster, other)).filter((r) => r.action === 'audit:EraseFields').length, { timeout: 20_000, interval: 200 })
      .toBe(1);
    const copies = log.filter((r) => r.eventId === 'div-E');
    expect(copies).toHaveLength(1);
    const e = copies[0]!;
    // The value never comes back, and the field is erased (kept hash), not a literal marker.
    expect(e.userId).toBe(MARKER);
    expect(Object.keys(e.erased ?? {})).toEqual(['userId']);
    expect(JSON.stringify(log)).not.toContain('divuser-secret');
    // The erasure names E where the new leader holds it, never the unrelated event at E's old seq.
    const erasure = log.find((r) => r.action === 'audit:EraseFields')!;
    expect(erasure.seq).toBeGreaterThan(e.seq);
    expect((JSON.parse(erasure.details) as { records: unknown[] }).records).toEqual([{ eventId: 'div-E', seq: e.seq }]);
    for (const x of xs) expect(log.find((r) => r.eventId === x)?.userId).toBe('x');
    // Search by the user finds nothing on either node.
    for (const i of [0, 1]) {
      const res = await fetch(`${cluster.node(i).url}/admin/audit?user=divuser-secret`, { headers: { authorization: `Token ${ADMIN}` } });
      expect(((await res.json()) as { events: unknown[] }).events).toEqual([]);
    }
    for (const i of [0, 1]) {
      await expect.poll(async () => (await records(cluster, i)).find((r) => r.action === 'audit:EraseFields')?.seq, { timeout: 20_000 }).toBe(erasure.seq);
      const verified = await verifyOnline(cluster.node(i).url);
      expect(verified.out).not.toMatch(/altered|broken/i);
      expect(verified.code).toBe(0);
    }
  }, 150_000);
});
