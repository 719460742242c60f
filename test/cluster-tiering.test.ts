// Goal: only the leader tiers, and after a failover the new leader continues from the replicated watermark: every event lands in S3 exactly once. Table maintenance runs on the leader of a cluster, and its run is an audit event every node holds.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startS3Endpoint } from '@auditlake/s3-endpoint';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ADMIN, INGEST, postEvents, startCluster } from './cluster-harness.js';
import { downloadCommittedParquet, duckdb } from './s3-readers.js';

const CREDENTIALS = { accessKeyId: 'ALCLUSTERTEST0000001', secretAccessKey: 'cluster-test-secret-0123456789abcdefgh' };

async function s3Endpoint(): Promise<{ port: number; props: string[] }> {
  const directory = await mkdtemp(join(tmpdir(), 'auditlake-cluster-s3-'));
  const server = await startS3Endpoint({ directory, host: '127.0.0.1', port: 0, buckets: ['ext'], credentials: CREDENTIALS });
  onTestFinished(async () => {
    await server.close();
    await rm(directory, { recursive: true, force: true });
  });
  const props = [
    `auditlake.s3.connections.ext.endpoint=${server.url}`,
    `auditlake.s3.connections.ext.accessKeyId=${CREDENTIALS.accessKeyId}`,
    `auditlake.s3.connections.ext.secretAccessKey=${CREDENTIALS.secretAccessKey}`,
  ];
  return { port: server.port, props };
}

async function tierStatus(url: string) {
  const res = await fetch(`${url}/admin/audit/settings`, { headers: { authorization: `Token ${ADMIN}` } });
  return ((await res.json()) as { tierStatus: { backlog: number; watermark: { seq: number }; lastError: string | null; heldByStandbys: { throughSeq: number; nodes: string[] } | null } }).tierStatus;
}

/** Saves settings through the node at `url`; answers the HTTP status. */
async function saveSettings(url: string, settings: Record<string, string>): Promise<number> {
  const res = await fetch(`${url}/admin/audit/settings`, { method: 'POST', headers: { authorization: `Token ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify(settings) });
  await res.arrayBuffer();
  return res.status;
}

/** Tiering to a Parquet path over the `ext` connection. */
function parquetAt(path: string): Record<string, string> {
  return { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': path, 'audit.tier.connectionId': 'ext' };
}

/** 40 events with ids `<prefix>0..39`. */
function batch(prefix: string) {
  return Array.from({ length: 40 }, (_, i) => ({ source: 'trino', userId: 'u', action: 'data:Insert', eventId: `${prefix}${i}` }));
}

/**
 * Two nodes with the given lease, tiering at once to the Parquet `path`; a first batch of 40
 * is tiered by the leader and held by the standby. `held`: the leader's last seq then.
 */
/**
 * With `paused` standbys paused past a lease TTL (they then no longer hold tiering back), the
 * leader takes a second batch, tiers what only it holds, and is killed; the standbys resume.
 * Answers the seq the tier holds through.
 */
async function tierOnlyOnLeaderThenKill(cluster: Awaited<ReturnType<typeof startCluster>>, leader: number, paused: readonly number[]): Promise<number> {
  const leaderUrl = cluster.node(leader).url;
  for (const i of paused) cluster.node(i).pause();
  try {
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await postEvents(leaderUrl, batch('second-'))).status).toBe(200);
    const tieredEnd = (await cluster.log(leader)).at(-1)!.seq;
    await expect.poll(async () => (await tierStatus(leaderUrl)).watermark.seq, { timeout: 20_000 }).toBe(tieredEnd);
    await cluster.node(leader).kill();
    return tieredEnd;
  } finally {
    for (const i of paused) cluster.node(i).resume();
  }
}

async function twoNodesFirstBatchTiered(leaseTtlMs: number, path: string, extraSets: readonly string[] = []) {
  const s3 = await s3Endpoint();
  const tiering = [`auditlake.cluster.lease.ttl.ms=${leaseTtlMs}`, 'auditlake.audit.tier.interval.ms=100', 'auditlake.audit.tier.ingest.settle.ms=0', ...s3.props, ...extraSets];
  const cluster = await startCluster({ size: 2, sets: () => tiering });
  const leader = await cluster.waitForLeader();
  const standby = 1 - leader;
  await cluster.waitForLeaderKnownBy(standby);
  const leaderUrl = cluster.node(leader).url;
  expect(await saveSettings(leaderUrl, parquetAt(path))).toBe(200);
  expect((await postEvents(leaderUrl, batch('first-'))).status).toBe(200);
  await expect.poll(async () => (await tierStatus(leaderUrl)).backlog, { timeout: 20_000 }).toBe(0);
  await expect.poll(async () => (await cluster.log(standby)).length, { timeout: 20_000 }).toBe((await cluster.log(leader)).length);
  return { s3, cluster, leader, standby, leaderUrl, held: (await cluster.log(leader)).at(-1)!.seq };
}

describe('tiering across a failover (real processes, real redis-server and S3 endpoint)', () => {
  it('the new leader continues from the replicated watermark; DuckDB counts every event once', async () => {
    const s3 = await s3Endpoint();
    const tiering = ['auditlake.cluster.lease.ttl.ms=1000', 'auditlake.audit.tier.interval.ms=100', 'auditlake.audit.tier.ingest.settle.ms=0', ...s3.props];
    const cluster = await startCluster({ size: 2, sets: () => tiering });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    await cluster.waitForLeaderKnownBy(standby);
    expect(await saveSettings(cluster.node(standby).url, parquetAt('s3://ext/audit'))).toBe(200);
    const batch = (prefix: string) => Array.from({ length: 40 }, (_, i) => ({ source: 'trino', userId: 'u', action: 'data:Insert', eventId: `${prefix}${i}`, ts: Date.now() - (i % 3) * 86_400_000 }));
    for (const i of [leader, standby]) expect((await postEvents(cluster.node(i).url, batch(`before${i}-`))).status).toBe(200);
    // Tiered by the leader, and its watermark replicated to the standby.
    await expect.poll(async () => (await tierStatus(cluster.node(leader).url)).backlog, { timeout: 20_000 }).toBe(0);
    await expect.poll(async () => (await cluster.log(standby)).length, { timeout: 20_000 }).toBe((await cluster.log(leader)).length);

    await cluster.node(leader).kill();
    await expect.poll(() => cluster.leaderIndex(), { timeout: 20_000 }).toBe(standby);
    expect((await postEvents(cluster.node(standby).url, batch('after-'))).status).toBe(200);
    const survivor = cluster.node(standby).url;
    await expect
      .poll(async () => {
        const status = await tierStatus(survivor);
        return status.backlog === 0 && status.watermark.seq === (await cluster.log(standby)).at(-1)!.seq;
      }, { timeout: 20_000 })
      .toBe(true);

    const dir = await downloadCommittedParquet(`http://127.0.0.1:${s3.port}`, 's3://ext/audit', CREDENTIALS);
    const rows = await duckdb(`SELECT count(*)::INTEGER AS n, count(DISTINCT event_id)::INTEGER AS d FROM read_parquet('${dir}/audit/event_date=*/*.parquet')`);
    const logged = (await cluster.log(standby)).length;
    expect(rows).toEqual([{ n: logged, d: logged }]);
    expect(logged).toBeGreaterThanOrEqual(121); // 120 events and the settings change
  }, 90_000);

  it('the leader tiers only what its standby holds: a standby that stops pulling holds tiering back until it catches up', async () => {
    // A lease long enough that the paused standby still counts as reachable.
    const { cluster, leader, standby, leaderUrl, held } = await twoNodesFirstBatchTiered(5000, 's3://ext/held');

    cluster.node(standby).pause();
    try {
      expect((await postEvents(leaderUrl, batch('second-'))).status).toBe(200);
      // Ten sweep intervals: without the bound every event would be tiered by now.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const status = await tierStatus(leaderUrl);
      expect(status.watermark.seq).toBe(held);
      expect(status.backlog).toBe(40);
      // And it says who holds it back.
      expect(status.heldByStandbys).toEqual({ throughSeq: held, nodes: [`node${standby}`] });
    } finally {
      cluster.node(standby).resume();
    }
    const end = (await cluster.log(leader)).at(-1)!.seq;
    await expect.poll(async () => (await tierStatus(leaderUrl)).watermark.seq, { timeout: 20_000 }).toBe(end);
    await expect.poll(async () => (await tierStatus(leaderUrl)).heldByStandbys, { timeout: 20_000 }).toBeNull();
  }, 90_000);

  it('a successor that missed what its dead leader tiered stops tiering; an admin has it take what the tier holds and order its own events after it; DuckDB counts every event once', async () => {
    // A short lease: the paused standby is soon unreachable, and the leader tiers without it.
    const { s3, cluster, leader, standby, held } = await twoNodesFirstBatchTiered(1000, 's3://ext/missed');

    const tieredEnd = await tierOnlyOnLeaderThenKill(cluster, leader, [standby]);
    await expect.poll(() => cluster.leaderIndex(), { timeout: 20_000 }).toBe(standby);
    const survivor = cluster.node(standby).url;
    expect((await postEvents(survivor, batch('third-'))).status).toBe(200);
    // The survivor's log lacks the second batch the tier holds: it stops tiering, and says how to go on.
    const adoptHint = `POST /admin/audit/tier/adopt {"throughSeq": ${tieredEnd}}`;
    await expect.poll(async () => (await tierStatus(survivor)).lastError ?? '', { timeout: 20_000 }).toContain(adoptHint);
    const adopt = (token: string, body: unknown) =>
      fetch(`${survivor}/admin/audit/tier/adopt`, { method: 'POST', headers: { authorization: `Token ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await adopt(INGEST, { throughSeq: tieredEnd })).status).toBe(403);
    const malformed = await adopt(ADMIN, { throughSeq: 'all' });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ code: 'AUDIT_BAD_REQUEST', error: expect.stringContaining('throughSeq was string') as unknown });
    const otherSeq = await adopt(ADMIN, { throughSeq: tieredEnd + 1 });
    expect(otherSeq.status).toBe(400);
    expect(await otherSeq.json()).toMatchObject({ code: 'AUDIT_TIER_TARGET_UNUSABLE', error: expect.stringContaining(adoptHint) as unknown });
    // Refused: nothing was taken from the tier.
    expect((await cluster.log(standby)).some((e) => e.eventId.startsWith('second-'))).toBe(false);
    const clusterView = async () => (await (await fetch(`${survivor}/admin/cluster`, { headers: { authorization: `Token ${ADMIN}` } })).json()) as { role: string; term: number };
    const termBefore = (await clusterView()).term;
    const adopted = await adopt(ADMIN, { throughSeq: tieredEnd });
    expect(adopted.status).toBe(200);
    // Its log was cut: it stepped down, and what it orders next carries a new term.
    await expect.poll(async () => { const view = await clusterView(); return view.role === 'leader' && view.term > termBefore; }, { timeout: 20_000 }).toBe(true);
    expect(await adopted.json()).toMatchObject({ target: 's3://ext/missed', throughSeq: tieredEnd, commonSeq: held, adopted: tieredEnd - held });
    await expect
      .poll(
        async () => {
          const status = await tierStatus(survivor);
          const log = await cluster.log(standby);
          // Every event of the three batches in the log (the second only the tier had), and all of it tiered.
          return status.lastError === null && status.backlog === 0 && log.length >= 122 && status.watermark.seq === log.at(-1)!.seq;
        },
        { timeout: 30_000 },
      )
      .toBe(true);
    // The adoption is an audit event, and so is the refused (403) attempt.
    const adoptions = (await cluster.log(standby)).filter((e) => (e as unknown as { action: string }).action === 'audit:AdoptTier') as unknown as Array<{ decision: string; details: string }>;
    expect(adoptions.map((e) => e.decision).sort()).toEqual(['', 'DENY']);
    // Moved: the third batch and the survivor's own audit of the refused attempts.
    expect(adoptions.find((e) => e.decision === '')?.details).toMatch(new RegExp(`^throughSeq=${tieredEnd}, commonSeq=${held}, adopted=${tieredEnd - held}, moved=4\\d$`));

    const log = await cluster.log(standby);
    const ids = new Set(log.map((e) => e.eventId));
    for (const prefix of ['first-', 'second-', 'third-']) for (let i = 0; i < 40; i++) expect(ids.has(`${prefix}${i}`)).toBe(true);
    expect(ids.size).toBe(log.length);
    const dir = await downloadCommittedParquet(`http://127.0.0.1:${s3.port}`, 's3://ext/missed', CREDENTIALS);
    const rows = await duckdb(`SELECT count(*)::INTEGER AS n, count(DISTINCT event_id)::INTEGER AS d, count(DISTINCT seq)::INTEGER AS s, max(seq)::INTEGER AS m FROM read_parquet('${dir}/missed/event_date=*/*.parquet')`);
    expect(rows).toEqual([{ n: log.length, d: log.length, s: log.length, m: log.at(-1)!.seq }]);
  }, 90_000);

  it('a successor that missed what its dead leader tiered keeps the events it acknowledges under the seqs the tier holds, with retention at 0 days, until an admin adopts', async () => {
    // Retention every 100 ms; settings answers wait 300 ms for the dead standby.
    const { cluster, leader, standby } = await twoNodesFirstBatchTiered(1000, 's3://ext/kept', ['auditlake.audit.retention.interval.ms=100', 'auditlake.ingest.ack.replicated.timeout.ms=300']);
    const tieredEnd = await tierOnlyOnLeaderThenKill(cluster, leader, [standby]);
    await expect.poll(() => cluster.leaderIndex(), { timeout: 20_000 }).toBe(standby);
    const survivor = cluster.node(standby).url;
    expect(await saveSettings(survivor, { 'audit.tier.retain.local.days': '0' })).toBe(200);
    // Acknowledged, most under seqs the tier holds (the dead leader's second batch), never tiered.
    expect((await postEvents(survivor, batch('third-'))).status).toBe(200);
    expect((await cluster.log(standby)).filter((e) => e.eventId.startsWith('third-') && e.seq <= tieredEnd).length).toBeGreaterThanOrEqual(30);
    await expect.poll(async () => (await tierStatus(survivor)).lastError ?? '', { timeout: 20_000 }).toContain(`POST /admin/audit/tier/adopt {"throughSeq": ${tieredEnd}}`);
    // Fifteen retention runs: retention trusting the tier's watermark, or the term it came from,
    // deleted them all (a reviewer lost 100 of 100 acknowledged events so).
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await cluster.log(standby)).filter((e) => e.eventId.startsWith('third-'))).toHaveLength(40);
    expect((await tierStatus(survivor)).backlog).toBeGreaterThanOrEqual(40);
  }, 90_000);

  it('three nodes, both survivors missed what the dead leader tiered: the adoption holds through the election that follows; DuckDB counts every event once', async () => {
    // The standby that did not adopt keeps the cut entries, in a later term than the tier's
    // rows: had the adopter's log ended with those rows, that standby would win the next
    // election and divert the adopted entries again, and tiering would stay stopped.
    const s3 = await s3Endpoint();
    const sets = ['auditlake.cluster.lease.ttl.ms=1000', 'auditlake.audit.tier.interval.ms=100', 'auditlake.audit.tier.ingest.settle.ms=0', ...s3.props];
    const cluster = await startCluster({ size: 3, sets: () => sets });
    const leader = await cluster.waitForLeader();
    const survivors = [0, 1, 2].filter((i) => i !== leader);
    for (const i of survivors) await cluster.waitForLeaderKnownBy(i);
    const leaderUrl = cluster.node(leader).url;
    expect(await saveSettings(leaderUrl, parquetAt('s3://ext/missed3'))).toBe(200);
    expect((await postEvents(leaderUrl, batch('first-'))).status).toBe(200);
    await expect.poll(async () => (await tierStatus(leaderUrl)).backlog, { timeout: 20_000 }).toBe(0);
    for (const i of survivors) await expect.poll(async () => (await cluster.log(i)).length, { timeout: 20_000 }).toBe((await cluster.log(leader)).length);

    const tieredEnd = await tierOnlyOnLeaderThenKill(cluster, leader, survivors);
    const adopter = await cluster.waitForLeader(20_000);
    const other = survivors.find((i) => i !== adopter)!;
    const adopterUrl = cluster.node(adopter).url;
    expect((await postEvents(adopterUrl, batch('third-'))).status).toBe(200);
    await expect.poll(async () => (await cluster.log(other)).length, { timeout: 20_000 }).toBe((await cluster.log(adopter)).length);
    await expect.poll(async () => (await tierStatus(adopterUrl)).lastError ?? '', { timeout: 20_000 }).toContain(`{"throughSeq": ${tieredEnd}}`);

    const adopted = await fetch(`${adopterUrl}/admin/audit/tier/adopt`, { method: 'POST', headers: { authorization: `Token ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ throughSeq: tieredEnd }) });
    expect(adopted.status).toBe(200);
    const answer = (await adopted.json()) as { commonSeq: number; adopted: number; outcome: string };
    // The cut stepped the adopter down: its sweep ends there rather than fail at a commit it may not make.
    expect(answer.outcome).toBe('not-leader');
    // Both survivors converge on the adopter's log, and the leader tiers all of it.
    await expect
      .poll(
        async () => {
          const lead = await cluster.leaderIndex();
          if (lead < 0) return false;
          const status = await tierStatus(cluster.node(lead).url);
          const [a, b] = await Promise.all(survivors.map((i) => cluster.log(i)));
          return status.lastError === null && status.backlog === 0 && a!.length >= 122 && a!.length === b!.length && status.watermark.seq === a!.at(-1)!.seq;
        },
        { timeout: 30_000 },
      )
      .toBe(true);
    // Still so a few lease TTLs later: no election undid it.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const lead = await cluster.leaderIndex();
    expect((await tierStatus(cluster.node(lead).url)).lastError).toBeNull();
    const log = await cluster.log(lead);
    for (const i of survivors) expect((await cluster.log(i)).map((e) => `${e.seq}/${e.term}/${e.eventId}`)).toEqual(log.map((e) => `${e.seq}/${e.term}/${e.eventId}`));
    const ids = new Set(log.map((e) => e.eventId));
    for (const prefix of ['first-', 'second-', 'third-']) for (let i = 0; i < 40; i++) expect(ids.has(`${prefix}${i}`)).toBe(true);
    expect(ids.size).toBe(log.length);
    // The adoption's record is ordered right after the adopted entries, in the term above theirs.
    const records = log.filter((e) => (e as unknown as { action: string }).action === 'audit:AdoptTier');
    expect(records.map((e) => e.seq)).toEqual([answer.commonSeq + answer.adopted + 1]);
    expect(records[0]!.term).toBeGreaterThan(log.find((e) => e.seq === tieredEnd)!.term);
    const dir = await downloadCommittedParquet(`http://127.0.0.1:${s3.port}`, 's3://ext/missed3', CREDENTIALS);
    const rows = await duckdb(`SELECT count(*)::INTEGER AS n, count(DISTINCT event_id)::INTEGER AS d, count(DISTINCT seq)::INTEGER AS s FROM read_parquet('${dir}/missed3/event_date=*/*.parquet')`);
    expect(rows).toEqual([{ n: log.length, d: log.length, s: log.length }]);
  }, 120_000);

  it('maintenance asked of a standby runs on the leader, and its audit event is replicated to the standby', async () => {
    const s3 = await s3Endpoint();
    const props = [
      'auditlake.cluster.lease.ttl.ms=1000',
      'auditlake.audit.tier.interval.ms=100',
      'auditlake.audit.tier.ingest.settle.ms=0',
      'auditlake.iceberg.catalogs.ice.warehouse=s3://ext/warehouse',
      'auditlake.iceberg.catalogs.ice.connectionId=ext',
      ...s3.props,
    ];
    const cluster = await startCluster({ size: 2, sets: () => props });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    await cluster.waitForLeaderKnownBy(standby);
    const admin = { authorization: `Token ${ADMIN}`, 'content-type': 'application/json' };
    const table = 'ice.ops.audit_events';
    expect(await saveSettings(cluster.node(leader).url, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': table })).toBe(200);
    for (let b = 0; b < 2; b++) {
      const events = Array.from({ length: 10 }, (_, i) => ({ source: 'trino', userId: 'u', action: 'data:Insert', eventId: `m${b}-${i}`, ts: Date.now() - i }));
      expect((await postEvents(cluster.node(leader).url, events)).status).toBe(200);
      await expect.poll(async () => (await tierStatus(cluster.node(leader).url)).backlog, { timeout: 20_000 }).toBe(0);
    }

    const res = await fetch(`${cluster.node(standby).url}/admin/audit/maintenance/run`, { method: 'POST', headers: admin, body: JSON.stringify({ table }) });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ table, ok: true, error: null });
    const recorded = async (i: number) => (await cluster.log(i)).filter((e) => (e as unknown as { action: string }).action === 'audit:TableMaintenance').length;
    await expect.poll(() => recorded(standby), { timeout: 20_000 }).toBe(1);
    expect(await recorded(leader)).toBe(1);
  }, 90_000);
});
