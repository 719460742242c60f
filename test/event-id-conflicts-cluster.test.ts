// Goal: eventId squatting is caught on a cluster's forwarding path too. Two real `auditlake
// start` processes on a real redis-server: a standby answers a client whose event's id holds
// other content with `conflicts` (from its replica, or an earlier event of the request), and
// the leader, which refuses the event when the standby forwards it, records it (an
// audit:EventIdConflict event naming the standby, replicated to every node) and counts it;
// the forward's answer carries the conflicts back, and the standby logs them. The event stored
// first stays on every node; a true retry through the standby stays a duplicate (also one sent
// without ts, which each node gives its own time: the forward says so).
import { describe, expect, it } from 'vitest';
import { postEvents, startCluster, type Cluster } from './cluster-harness.js';

const TS = 1_790_000_000_000;

function ev(eventId: string, overrides: Record<string, unknown> = {}) {
  return { eventId, source: 'trino', userId: 'alice', action: 'data:Select', tables: ['hive.sales.orders'], query: 'SELECT 1', ts: TS, ...overrides };
}

interface Logged {
  eventId: string;
  source: string;
  action: string;
  userId: string;
  details: string;
}

async function logOf(cluster: Cluster, i: number): Promise<Logged[]> {
  return (await cluster.log(i)) as unknown as Logged[];
}

const conflictRecords = (log: Logged[]) => log.filter((e) => e.source === 'auditlake' && e.action === 'audit:EventIdConflict');

async function conflictsCounted(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^auditlake_event_id_conflicts_total (\d+)$/m.exec(text)?.[1] ?? 'NaN');
}

describe('eventId conflicts on a cluster (2 real nodes, real redis-server)', () => {
  it('a standby reports them, the leader refuses and records them when they are forwarded, the first event stays', async () => {
    const cluster = await startCluster({ size: 2 });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    await cluster.waitForLeaderKnownBy(standby);
    const leaderUrl = cluster.node(leader).url;
    const standbyUrl = cluster.node(standby).url;

    const forged = ev('pay-1', { userId: 'mallory' });
    expect(await (await postEvents(leaderUrl, [forged])).json()).toEqual({ status: 'ok', ingested: 1 });
    await expect.poll(async () => (await logOf(cluster, standby)).some((e) => e.eventId === 'pay-1'), { timeout: 15_000, interval: 50 }).toBe(true);

    // The standby's replica holds pay-1: the real event is answered as a conflict.
    let res = await postEvents(standbyUrl, [ev('pay-1', { action: 'data:Delete' })]);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', ingested: 1, conflicts: 1, conflictEventIds: ['pay-1'] });
    // Two events with one id in one request: the standby keeps the first, and so does the leader.
    res = await postEvents(standbyUrl, [ev('twice', { details: 'first' }), ev('twice', { details: 'second' })]);
    expect(await res.json()).toEqual({ status: 'ok', ingested: 2, conflicts: 1, conflictEventIds: ['twice'] });

    // The leader refused both when the standby forwarded them, and recorded each forward.
    await expect.poll(async () => conflictRecords(await logOf(cluster, leader)).length, { timeout: 15_000, interval: 100 }).toBe(2);
    const records = conflictRecords(await logOf(cluster, leader));
    for (const [record, eventId] of records.map((r, i) => [r, ['pay-1', 'twice'][i]] as const)) {
      expect(record.userId).toBe('unknown');
      expect(record.details).toMatch(new RegExp(`^refused 1 event whose eventId holds an event with other content \\(the event stored first is kept\\); eventId "${eventId}": stored content [0-9a-f]{64}, refused content [0-9a-f]{64}; sent by a client of node node${standby} \\(forwarded: that node's log names the sender\\), received by node node${standby}$`));
      const [, stored, refused] = /stored content ([0-9a-f]{64}), refused content ([0-9a-f]{64})/.exec(record.details) ?? [];
      expect(stored).not.toBe(refused);
    }
    expect(await conflictsCounted(leaderUrl)).toBe(2);
    expect(await conflictsCounted(standbyUrl)).toBe(0);

    // A true retry through the standby is a duplicate, and nothing more is recorded: also of an
    // event sent without ts, which the standby gives another time than the leader gave it.
    res = await postEvents(standbyUrl, [forged]);
    expect(await res.json()).toEqual({ status: 'ok', ingested: 1, duplicates: 1 });
    const untimed = { eventId: 'no-ts', source: 'trino', userId: 'bob', action: 'data:Insert' };
    expect(await (await postEvents(leaderUrl, [untimed])).json()).toEqual({ status: 'ok', ingested: 1 });
    await expect.poll(async () => (await logOf(cluster, standby)).some((e) => e.eventId === 'no-ts'), { timeout: 15_000, interval: 50 }).toBe(true);
    expect(await (await postEvents(standbyUrl, [untimed])).json()).toEqual({ status: 'ok', ingested: 1, duplicates: 1 });
    await expect.poll(async () => (await fetch(`${standbyUrl}/metrics`).then((r) => r.text())).match(/^auditlake_outbox_events (\d+)$/m)?.[1], { timeout: 15_000, interval: 100 }).toBe('0');

    // Every node holds the first event under each id, once, and the leader's records.
    await expect.poll(async () => conflictRecords(await logOf(cluster, standby)).length, { timeout: 15_000, interval: 100 }).toBe(2);
    for (const i of [leader, standby]) {
      const log = await logOf(cluster, i);
      expect(log.filter((e) => e.eventId === 'pay-1')).toMatchObject([{ userId: 'mallory', action: 'data:Select' }]);
      expect(log.filter((e) => e.eventId === 'twice')).toMatchObject([{ details: 'first' }]);
    }
    expect(conflictRecords(await logOf(cluster, leader))).toHaveLength(2);
    expect(await conflictsCounted(leaderUrl)).toBe(2);
    // The standby names the client it had them from, and what the leader answered.
    const output = cluster.node(standby).output();
    expect(output).toContain('received events whose eventId holds an event with other content');
    expect(output).toContain('"principal":"ingest"');
    expect(output).toContain('the leader refused forwarded events whose eventId holds an event with other content');
  });
});
