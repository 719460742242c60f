// Goal: with auditlake.cluster.secret, whoever reads the coordinator holds the cluster token but
// opens no internal endpoint with it (the security review pulled the whole log and forwarded
// forged records with the token alone), a request signed for one node is refused at another,
// a node holding another secret takes no part, and the cluster replicates as before.
// Real redis-server and `auditlake start` processes; the secret given in the environment.
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ADMIN, expectConverged, ingestLoad, postEvents, signedPeerHeader, startCluster } from './cluster-harness.js';

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

  it('sends a fake leader that Redis names no event, and takes a signed request once, an unsigned one not even to its body (review)', async () => {
    const cluster = await startCluster({ size: 2, secret: () => SECRET });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    await cluster.waitForLeaderKnownBy(standby);
    const token = await cluster.clusterToken();
    const leaderUrl = cluster.node(leader).url;

    // A signed request captured on the wire and sent again: taken once.
    const pullBody = JSON.stringify({ nodeId: 'intruder', after: 0, lastTerm: 0, term: 0, limit: 10, waitMs: 0, metaHash: '', catchUp: true });
    const headers = { 'content-type': 'application/json', 'x-auditlake-cluster-token': token, 'x-auditlake-peer-signature': signedPeerHeader(SECRET, `${leaderUrl}/internal/v1/pull`, pullBody) };
    expect((await fetch(`${leaderUrl}/internal/v1/pull`, { method: 'POST', headers, body: pullBody })).status).toBe(200);
    const replayed = await fetch(`${leaderUrl}/internal/v1/pull`, { method: 'POST', headers, body: pullBody });
    expect(replayed.status).toBe(401);
    expect(((await replayed.json()) as { error: string }).error).toBe('internal endpoint: peer request replayed: a request with its signature was taken before (each signed request is taken once)');

    // The token alone, with a 64 MiB body announced: answered before any of it is sent.
    const early = await new Promise<number>((resolve, reject) => {
      const req = request(`${leaderUrl}/internal/v1/forward`, { method: 'POST', headers: { 'content-type': 'application/x-ndjson', 'content-length': 64 * 1024 * 1024, 'x-auditlake-cluster-token': token } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    expect(early).toBe(401);

    // A writer of Redis names a leader of its own, at a URL it listens on, and keeps it named.
    const received: Array<{ path: string; body: string }> = [];
    const fake = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({ path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"term":1000,"nodeId":"fake","lastSeq":0}');
      });
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => fake.close(() => resolve())));
    const fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
    const redis = new Redis(cluster.redis.url);
    onTestFinished(() => void redis.disconnect());
    const nameFake = async () => {
      const member = { nodeId: 'fake', url: fakeUrl, role: 'leader', term: 1000, lastSeq: 1e9, lastTerm: 1000, updatedAtMs: Date.now() };
      await redis.multi().set('auditlake:default:term', '1000').set('auditlake:default:leader', 'fake|1000', 'PX', 5000).set('auditlake:default:member:fake', JSON.stringify(member), 'PX', 5000).sadd('auditlake:default:members', 'fake').exec();
    };
    await nameFake();
    const steering = setInterval(() => void nameFake(), 200);
    onTestFinished(() => clearInterval(steering));
    // Both nodes follow it: neither leads.
    await expect.poll(async () => (await fetch(`${cluster.node(leader).url}/admin/cluster`, { headers: { authorization: `Token ${ADMIN}` } }).then((r) => r.json())) as { leader: { nodeId: string } | null }, { timeout: 15_000, interval: 100 }).toMatchObject({ leader: { nodeId: 'fake' } });
    await expect.poll(() => received.some((r) => r.path === '/internal/v1/pull'), { timeout: 15_000, interval: 100 }).toBe(true);

    // Events sent meanwhile are stored (in each node's outbox) but go nowhere near the fake.
    const acked = new Set<string>();
    for (const i of [leader, standby]) {
      const events = Array.from({ length: 10 }, (_, k) => ({ eventId: `steered-${i}-${k}`, userId: 'ana', source: 'trino', action: 'data:Select', resource: 'hive.hr.payroll', query: "SELECT * FROM payroll WHERE ssn='123-45-6780'" }));
      expect((await postEvents(cluster.node(i).url, events)).status).toBe(200);
      for (const e of events) acked.add(e.eventId);
    }
    // Each node keeps trying to forward (its retries come every 100 ms to 5 s) while it pulls from the fake every second or so.
    const pullsBefore = received.filter((r) => r.path === '/internal/v1/pull').length;
    await expect.poll(() => received.filter((r) => r.path === '/internal/v1/pull').length, { timeout: 15_000, interval: 100 }).toBeGreaterThan(pullsBefore + 6);
    expect(received.filter((r) => r.path !== '/internal/v1/pull')).toEqual([]);
    expect(received.some((r) => r.body.includes('payroll') || r.body.includes('steered-'))).toBe(false);

    // Redis is put right: a real node leads again, and every event acknowledged meanwhile is on both.
    clearInterval(steering);
    await redis.del('auditlake:default:leader', 'auditlake:default:member:fake');
    await redis.srem('auditlake:default:members', 'fake');
    await expectConverged(cluster, [leader, standby], acked, 60_000);
  });

  it('kill -9 of the leader under load: the standbys forward to the new leader once a pull proved it, nothing acknowledged is lost', async () => {
    // Forwards wait for a proven leader: after a failover nothing goes until a pull from the new
    // leader answered with the secret, and then everything waiting in the outboxes does.
    const cluster = await startCluster({ size: 3, secret: () => SECRET });
    const leader = await cluster.waitForLeader();
    const alive = new Set([0, 1, 2]);
    const load = ingestLoad(() => [...alive].map((i) => cluster.node(i).url), { prefix: 'secret-failover' });
    await expect.poll(() => load.acked.size, { timeout: 10_000 }).toBeGreaterThan(300);
    alive.delete(leader);
    await cluster.node(leader).kill();
    const newLeader = await cluster.waitForLeader(20_000);
    expect(newLeader).not.toBe(leader);
    const before = load.acked.size;
    await expect.poll(() => load.acked.size, { timeout: 10_000 }).toBeGreaterThan(before + 300);
    await cluster.start(leader);
    alive.add(leader);
    await new Promise((r) => setTimeout(r, 1000));
    await load.stop();
    await expectConverged(cluster, [0, 1, 2], load.acked, 60_000);
  }, 120_000);
});
