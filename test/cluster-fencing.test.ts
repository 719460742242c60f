// Goal: a paused or partitioned old leader can neither order nor replicate once deposed, its unreplicated events are not lost, and ingestTs never goes back.
import { describe, expect, it } from 'vitest';
import { expectConverged, metric, postEvents, startCluster, type Cluster } from './cluster-harness.js';

const TTL = ['auditlake.cluster.lease.ttl.ms=1000'];

function batch(prefix: string, n: number) {
  return Array.from({ length: n }, (_, k) => ({ source: 'spark', userId: 'u', action: 'data:Write', eventId: `${prefix}-${k}` }));
}

async function ingestAcked(url: string, prefix: string, n: number, acked: Set<string>, query = ''): Promise<void> {
  const events = batch(prefix, n);
  const res = await postEvents(url, events, query);
  expect(res.status).toBe(200);
  for (const e of events) acked.add(e.eventId);
}

async function otherLeader(cluster: Cluster, not: number): Promise<number> {
  let index = -1;
  await expect.poll(async () => (index = await cluster.leaderIndex()), { timeout: 15_000, interval: 100 }).toSatisfy((i: number) => i >= 0 && i !== not);
  return index;
}

/** The lines a node logged when it cut its log where it diverged from the leader's. */
function divergenceLogs(output: string): Array<{ moved: number; terms: Record<string, number> }> {
  return output.split('\n').flatMap((line) => {
    if (!line.includes('the log diverged from the leader')) return [];
    const entry = JSON.parse(line) as { moved: number; terms: Record<string, number> };
    return [{ moved: entry.moved, terms: entry.terms }];
  });
}

describe('fencing (real processes, SIGSTOP/SIGCONT)', () => {
  it('a leader paused past its lease neither stores nor replicates as leader after it resumes', async () => {
    const cluster = await startCluster({ size: 3, sets: () => TTL });
    const old = await cluster.waitForLeader();
    const acked = new Set<string>();
    for (let i = 0; i < 3; i++) await ingestAcked(cluster.node(i).url, `before-${i}`, 20, acked);
    const before = await expectConverged(cluster, [0, 1, 2], acked);
    const oldTerm = before[before.length - 1]!.term;
    const lastOldTermSeq = before[before.length - 1]!.seq;

    cluster.node(old).pause();
    const next = await otherLeader(cluster, old);
    for (const i of [0, 1, 2].filter((i) => i !== old)) await ingestAcked(cluster.node(i).url, `during-${i}`, 20, acked);
    cluster.node(old).resume();
    // Straight after SIGCONT, before it has talked to Redis: it must not order these itself.
    await Promise.all(Array.from({ length: 5 }, (_, k) => ingestAcked(cluster.node(old).url, `after-resume-${k}`, 10, acked)));

    const log = await expectConverged(cluster, [0, 1, 2], acked);
    const oldTermEntries = log.filter((e) => e.term === oldTerm);
    expect(Math.max(...oldTermEntries.map((e) => e.seq))).toBe(lastOldTermSeq);
    expect(log.filter((e) => e.eventId.startsWith('after-resume-')).every((e) => e.term > oldTerm)).toBe(true);
    const health = (await (await fetch(`${cluster.node(old).url}/health`)).json()) as { role: string };
    expect(health.role).toBe('standby');
    expect(await cluster.leaderIndex()).toBe(next);
  }, 90_000);

  it("an old leader's events that never reached a standby are re-forwarded after the failover, not lost", async () => {
    const cluster = await startCluster({ size: 3, sets: () => TTL });
    const old = await cluster.waitForLeader();
    const standbys = [0, 1, 2].filter((i) => i !== old);
    const acked = new Set<string>();
    await ingestAcked(cluster.node(old).url, 'replicated', 20, acked);
    const oldTerm = (await expectConverged(cluster, [0, 1, 2], acked)).at(-1)!.term;
    // Standbys down: what the leader acknowledges now exists on its disk only. (Killed, not
    // paused: a paused standby could still apply a long-poll answer already in its socket.)
    for (const i of standbys) await cluster.node(i).kill();
    await ingestAcked(cluster.node(old).url, 'only-on-old-leader', 30, acked);
    cluster.node(old).pause();
    for (const i of standbys) await cluster.start(i);
    await otherLeader(cluster, old);
    for (const i of standbys) await ingestAcked(cluster.node(i).url, `new-term-${i}`, 20, acked);
    cluster.node(old).resume();
    const log = await expectConverged(cluster, [0, 1, 2], acked);
    expect(log.filter((e) => e.eventId.startsWith('only-on-old-leader')).length).toBe(30);
    const diverted = (await (await fetch(`${cluster.node(old).url}/metrics`)).text()).match(/^auditlake_events_diverted_total (\d+)$/m)?.[1];
    expect(Number(diverted)).toBe(30);
    // It logged how many entries it moved and of which term, and the leader counted the divergence.
    const moves = divergenceLogs(cluster.node(old).output());
    expect(moves.reduce((n, m) => n + m.moved, 0)).toBe(30);
    expect(moves.flatMap((m) => Object.keys(m.terms))).toEqual(moves.map(() => String(oldTerm)));
    const found = await Promise.all(standbys.map((i) => metric(cluster.node(i).url, 'auditlake_replication_divergences_total')));
    expect(found.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1);
  }, 90_000);

  it('ingestTs never goes backwards across a failover to a node whose clock is a minute behind', async () => {
    const cluster = await startCluster({ size: 2, sets: (i) => (i === 1 ? [...TTL, 'auditlake.debug.clock.offset.ms=-60000'] : TTL) });
    expect(await cluster.waitForLeader()).toBe(0);
    const acked = new Set<string>();
    await ingestAcked(cluster.node(0).url, 'fast-clock', 20, acked);
    await expectConverged(cluster, [0, 1], acked);
    await cluster.node(0).kill();
    await otherLeader(cluster, 0);
    await ingestAcked(cluster.node(1).url, 'slow-clock', 20, acked);
    await cluster.start(0);
    const log = await expectConverged(cluster, [0, 1], acked);
    expect(log.every((e, k) => k === 0 || e.ingestTs >= log[k - 1]!.ingestTs)).toBe(true);
    const lastFast = log.filter((e) => e.eventId.startsWith('fast-clock')).at(-1)!;
    const firstSlow = log.find((e) => e.eventId.startsWith('slow-clock'))!;
    expect(firstSlow.ingestTs).toBeGreaterThanOrEqual(lastFast.ingestTs);
    // Without the guard the new leader would have stamped about a minute earlier.
    expect(firstSlow.ingestTs).toBeGreaterThan(Date.now() - 30_000);
  }, 90_000);

  it('ack=replicated answers only once a standby has the events, on the leader and on a standby', async () => {
    const cluster = await startCluster({ size: 2, sets: () => TTL });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    await cluster.waitForLeaderKnownBy(standby);
    for (const [via, prefix] of [[leader, 'ack-leader'], [standby, 'ack-standby']] as const) {
      const acked = new Set<string>();
      await ingestAcked(cluster.node(via).url, prefix, 5, acked, '?ack=replicated');
      // At the moment of the answer both logs already hold the events.
      for (const i of [leader, standby]) {
        const ids = new Set((await cluster.log(i)).map((e) => e.eventId));
        expect([...acked].every((id) => ids.has(id))).toBe(true);
      }
    }
    const bad = await postEvents(cluster.node(leader).url, batch('bad-ack', 1), '?ack=sometimes');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toBe('parameter ack must be local or replicated: sometimes');
    // With the only standby gone, replicated acks time out with 503 (the events stay stored).
    await cluster.node(standby).kill();
    const res = await fetch(`${cluster.node(leader).url}/v1/api/audit?ack=replicated`, {
      method: 'POST',
      headers: { authorization: 'Token ing-token', 'content-type': 'application/json' },
      body: JSON.stringify(batch('unconfirmed', 1)),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ code: 'AUDIT_REPLICATION_TIMEOUT', error: expect.stringMatching(/^events not confirmed on a standby within 5000 ms/) });
    // Not half-reported: the 503 says unconfirmed, yet the events are durably on the leader.
    expect((await cluster.log(leader)).some((e) => e.eventId === 'unconfirmed-0')).toBe(true);
  }, 90_000);

  it('ack=replicated sent to a standby that becomes the leader meanwhile still waits for a standby (regression)', async () => {
    const cluster = await startCluster({ size: 2, sets: () => [...TTL, 'auditlake.ingest.ack.replicated.timeout.ms=6000'] });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    await cluster.waitForLeaderKnownBy(standby);
    await cluster.node(leader).kill();
    // The survivor takes the events into its outbox, becomes the leader within a few seconds
    // and orders them itself; with no standby left, nothing can confirm them.
    const started = Date.now();
    const res = await postEvents(cluster.node(standby).url, batch('lonely', 3), '?ack=replicated');
    expect(res.status).toBe(503);
    expect(Date.now() - started).toBeGreaterThanOrEqual(5_500);
    expect(await cluster.leaderIndex()).toBe(standby);
    // The events are stored all the same (on the new leader's log).
    expect((await cluster.log(standby)).filter((e) => e.eventId.startsWith('lonely'))).toHaveLength(3);
  }, 60_000);
});
