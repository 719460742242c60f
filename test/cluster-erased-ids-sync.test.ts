// Goal: an erased event never comes back through a standby that caught up across the range its
// leader's retention deleted, erasure record included. Two real `auditlake start` processes with
// real Redis and a real S3 endpoint tier to Parquet and keep nothing locally once tiered
// (audit.tier.retain.local.days=0). The standby is killed (SIGKILL); the leader stores an event
// (without ts), erases its user, tiers both and deletes them. The standby comes back and takes
// the leader's erased ids (GET /admin/cluster: erasedIdsTakenThrough reaches the erasure), both
// when an entry after the deleted range reaches it (its pull skips the range) and when none does
// (the leader's log is empty: its answer says its retention deleted everything after the
// standby's end). The leader is killed with SIGKILL and the standby leads: the event re-sent
// without ts (so with a new time, which no tier lookup by time finds) is answered as a retry and
// not stored, and no search on the new leader finds its user. Before the erased ids were carried,
// the re-send was stored as new with the erased value and tiered again (cluster reviews).
import { describe, expect, it } from 'vitest';
import { integrityOf, startParquetTieringPair, tierWatermark } from './checkpoint-failover.js';
import { ADMIN, postEvents, type Cluster } from './cluster-harness.js';

const CREDENTIALS = { accessKeyId: 'ALCLUSTERTEST0000004', secretAccessKey: 'cluster-test-secret-erased-ids-sync' };
const VICTIM = 'victim-user-7f3a';
const GONE = { source: 'trino', userId: VICTIM, action: 'data:Select', resource: 'hive.hr.salaries', eventId: 'erased-while-away' };

function admin(url: string, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${url}${path}`, { ...init, headers: { authorization: `Token ${ADMIN}`, 'content-type': 'application/json' }, signal: AbortSignal.timeout(15_000) });
}

async function erasedIds(cluster: Cluster, i: number): Promise<{ erasedIdsOwed: boolean; erasedIdsTakenThrough: number }> {
  const res = await admin(cluster.node(i).url, '/admin/cluster');
  expect(res.status).toBe(200);
  const { erasedIdsOwed, erasedIdsTakenThrough } = (await res.json()) as { erasedIdsOwed: boolean; erasedIdsTakenThrough: number };
  return { erasedIdsOwed, erasedIdsTakenThrough };
}

/** Every stored record of node `i` (its own log, as NDJSON). */
async function records(cluster: Cluster, i: number): Promise<Array<{ eventId: string; userId: string }>> {
  const res = await admin(cluster.node(i).url, '/admin/audit/integrity/records?limit=10000');
  expect(res.status).toBe(200);
  return (await res.text()).split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as { eventId: string; userId: string });
}

describe('erased ids carried to a standby that skipped the erasure record (2 real nodes, real redis-server and S3 endpoint)', () => {
  it.each([
    ['an entry after the deleted range reaches it', true],
    ['the leader\'s retention deleted its whole log', false],
  ])('the standby, once leader, refuses a re-send of the erased event with a new time: %s', async (_case, entryAfter) => {
    const { cluster } = await startParquetTieringPair(CREDENTIALS, []);
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    await cluster.waitForLeaderKnownBy(standby);
    const leaderUrl = cluster.node(leader).url;

    // Away while the event is stored, erased, tiered and deleted on the leader.
    await cluster.node(standby).kill();
    expect((await postEvents(leaderUrl, [GONE])).status).toBe(200);
    const erased = await admin(leaderUrl, '/admin/audit/erase', { method: 'POST', body: JSON.stringify({ eventIds: [GONE.eventId], fields: ['userId'] }) });
    expect(erased.status, await erased.clone().text()).toBe(200);
    const erasureSeq = ((await erased.json()) as { erasureSeqs: number[] }).erasureSeqs.at(-1)!;
    await expect.poll(() => tierWatermark(leaderUrl), { timeout: 30_000, interval: 100 }).toBeGreaterThanOrEqual(erasureSeq);
    await expect.poll(async () => (await cluster.log(leader)).length, { timeout: 30_000, interval: 100 }).toBe(0);

    // Back, it takes the erased ids: across the deleted range, or told the leader deleted it all.
    await cluster.start(standby);
    await cluster.waitForLeaderKnownBy(standby);
    if (entryAfter) {
      expect((await postEvents(leaderUrl, [{ source: 'trino', userId: 'u', action: 'data:Select', eventId: 'after-gap' }])).status).toBe(200);
      const leaderHead = (await integrityOf(cluster, leader)).head.seq;
      expect(leaderHead).toBeGreaterThan(erasureSeq);
      await expect.poll(async () => (await integrityOf(cluster, standby)).head.seq, { timeout: 30_000, interval: 100 }).toBe(leaderHead);
    }
    await expect.poll(async () => (await erasedIds(cluster, standby)).erasedIdsTakenThrough, { timeout: 30_000, interval: 100 }).toBeGreaterThanOrEqual(erasureSeq);
    expect((await erasedIds(cluster, standby)).erasedIdsOwed).toBe(false);

    await cluster.node(leader).kill();
    await expect.poll(() => cluster.leaderIndex(), { timeout: 20_000 }).toBe(standby);
    const survivor = cluster.node(standby).url;

    // The same event re-sent without ts: a new time, so only the erased id can tell it.
    const resent = await postEvents(survivor, [GONE]);
    expect(resent.status).toBe(200);
    expect(await resent.json()).toEqual({ status: 'ok', ingested: 1, duplicates: 1 });
    expect((await records(cluster, standby)).filter((record) => record.eventId === GONE.eventId)).toEqual([]);
    // The merged search (local and tier) finds no event of the erased user.
    const found = await admin(survivor, `/admin/audit?user=${VICTIM}&from=0`);
    expect(found.status, await found.clone().text()).toBe(200);
    expect(((await found.json()) as { events: unknown[] }).events).toEqual([]);
  }, 180_000);
});
