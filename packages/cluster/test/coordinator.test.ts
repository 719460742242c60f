// Goal: every Coordinator (Redis, and the in-memory one the simulator uses) admits one leader per term, renews only for its holder, and never repeats a term — even after losing its data.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it, onTestFinished } from 'vitest';
import { freePort } from './free-port.js';
import { ManualClock } from './manual-clock.js';
import { InMemoryCoordinator, InMemoryCoordinatorState, RedisCoordinator, type Coordinator } from '../src/index.js';

/** One coordinator implementation under test, with the faults the suite needs. */
interface Subject {
  coordinator(nodeId: string, leaseTtlMs?: number): Promise<Coordinator>;
  /** Lets `ms` pass on the coordinator's clock. */
  passMs(ms: number): Promise<void>;
  /** The coordinator restarts without its data. */
  restartEmpty(): Promise<void>;
  /** A coordinator client that cannot reach its coordinator. */
  unreachable(): Promise<Coordinator>;
}

/** A throwaway redis-server (from PATH) that the test can restart empty on the same port. */
async function redisSubject(): Promise<Subject> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const client = new RedisCoordinator({ url, clusterName: 'probe', nodeId: 'probe', leaseTtlMs: 3000 });
    expect(await client.connected(10_000)).toBe(true);
    await client.close();
  };
  const stop = async () => {
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  };
  await start();
  onTestFinished(stop);
  const clients: RedisCoordinator[] = [];
  return {
    async coordinator(nodeId, leaseTtlMs = 1000) {
      const c = new RedisCoordinator({ url, clusterName: 'test', nodeId, leaseTtlMs });
      clients.push(c);
      onTestFinished(() => c.close());
      expect(await c.connected(5000)).toBe(true);
      return c;
    },
    passMs: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    async restartEmpty() {
      await stop();
      await start();
      for (const c of clients) expect(await c.connected(5000)).toBe(true);
    },
    async unreachable() {
      const c = new RedisCoordinator({ url: `redis://127.0.0.1:${await freePort()}`, clusterName: 'x', nodeId: 'a', leaseTtlMs: 600 });
      onTestFinished(() => c.close());
      return c;
    },
  };
}

async function inMemorySubject(): Promise<Subject> {
  const clock = new ManualClock();
  let tokens = 0;
  const state = new InMemoryCoordinatorState({ clock, newToken: () => `token-${++tokens}` });
  return {
    coordinator: async (nodeId, leaseTtlMs = 1000) => new InMemoryCoordinator(state, { nodeId, leaseTtlMs }),
    async passMs(ms) {
      clock.advance(ms);
    },
    async restartEmpty() {
      state.loseData();
    },
    async unreachable() {
      const lonely = new InMemoryCoordinatorState({ clock, newToken: () => 'never' });
      lonely.reachable = false;
      return new InMemoryCoordinator(lonely, { nodeId: 'a', leaseTtlMs: 600 });
    },
  };
}

describe.each([
  ['RedisCoordinator', redisSubject],
  ['InMemoryCoordinator', inMemorySubject],
])('%s', (_name, subject) => {
  it('lets exactly one of several candidates win, with a fresh term', async () => {
    const s = await subject();
    const nodes = await Promise.all(['a', 'b', 'c'].map((id) => s.coordinator(id)));
    const terms = await Promise.all(nodes.map((n) => n.campaign(0)));
    expect(terms.filter((t) => t > 0)).toEqual([1]);
    const winner = ['a', 'b', 'c'][terms.findIndex((t) => t > 0)]!;
    expect(await nodes[0]!.leader()).toEqual({ nodeId: winner, term: 1 });
  });

  it('renews only for the holder in its term, and hands over after resign or expiry with a higher term', async () => {
    const s = await subject();
    const a = await s.coordinator('a', 300);
    const b = await s.coordinator('b', 300);
    expect(await a.campaign(0)).toBe(1);
    expect(await a.renew(1)).toBe(true);
    expect(await b.renew(1)).toBe(false);
    expect(await a.renew(2)).toBe(false);
    expect(await b.campaign(0)).toBe(0);
    await a.resign(1);
    expect(await b.campaign(0)).toBe(2);
    // Not renewed: the lease expires on its own.
    await s.passMs(450);
    expect(await a.leader()).toBeUndefined();
    expect(await a.campaign(0)).toBe(3);
  });

  it('never reissues a term after a restart that lost every key: campaigns and floors use the terms nodes remember', async () => {
    const s = await subject();
    const a = await s.coordinator('a');
    expect(await a.campaign(0)).toBe(1);
    expect(await a.campaign(0)).toBe(0);
    const token = await a.clusterToken(undefined);
    await s.restartEmpty();
    expect(await a.latestTerm()).toBe(0);
    const b = await s.coordinator('b');
    await b.raiseTermFloor(7);
    expect(await b.latestTerm()).toBe(7);
    await b.raiseTermFloor(5);
    expect(await b.latestTerm()).toBe(7);
    expect(await a.campaign(3)).toBe(8);
    // The remembered cluster token is put back rather than replaced.
    expect(await a.clusterToken(token)).toBe(token);
    expect(await b.clusterToken(undefined)).toBe(token);
  });

  it("keeps a member record another instance refreshed within the last lease TTL, and replaces one its process left behind", async () => {
    const s = await subject();
    const a = await s.coordinator('n1', 300);
    const member = (instance: string | undefined, url: string) => ({ nodeId: 'n1', url, role: 'standby' as const, term: 1, lastSeq: 5, lastTerm: 1, updatedAtMs: 1, ...(instance === undefined ? {} : { instance }) });
    expect(await a.publish(member('dir-a', 'http://127.0.0.1:1'))).toBeUndefined();
    // A second process under the same id (another data dir) is told who holds it, and changes nothing.
    expect(await a.publish(member('dir-b', 'http://127.0.0.1:2'))).toMatchObject({ instance: 'dir-a', url: 'http://127.0.0.1:1' });
    expect((await a.members()).map((m) => m.url)).toEqual(['http://127.0.0.1:1']);
    // The holder refreshes its own record; a restart on its own data dir is the same instance.
    expect(await a.publish(member('dir-a', 'http://127.0.0.1:3'))).toBeUndefined();
    // Not refreshed for more than a TTL (its process gone): another instance takes the id.
    await s.passMs(400);
    expect(await a.publish(member('dir-b', 'http://127.0.0.1:2'))).toBeUndefined();
    expect((await a.members()).map((m) => m.url)).toEqual(['http://127.0.0.1:2']);
    // A record of a version without instances is replaced, and one without an instance replaces.
    expect(await a.publish(member(undefined, 'http://127.0.0.1:4'))).toBeUndefined();
    expect(await a.publish(member('dir-a', 'http://127.0.0.1:1'))).toBeUndefined();
  });

  it('puts the remembered token of a node with data over one a node without data set after the coordinator lost its data, never over one a node with data set', async () => {
    const s = await subject();
    const a = await s.coordinator('a');
    const token = await a.clusterToken(undefined);
    expect(await a.clusterToken(token, true)).toBe(token);
    await s.restartEmpty();
    // A new node (no data) asks first: a token of its own.
    const fresh = await a.clusterToken(undefined, false);
    expect(fresh).not.toBe(token);
    // A node of the cluster (with data) puts the cluster's back; the new node then gets it.
    expect(await a.clusterToken(token, true)).toBe(token);
    expect(await a.clusterToken(fresh, false)).toBe(token);
    // A node with data remembering another token (another cluster's) does not replace it.
    expect(await a.clusterToken('another-clusters-token', true)).toBe(token);
    expect(await a.clusterToken(undefined)).toBe(token);
  });

  it('lists live members and forgets them 3 lease TTLs after they last published', async () => {
    const s = await subject();
    const a = await s.coordinator('a', 100);
    await a.publish({ nodeId: 'a', url: 'http://127.0.0.1:1', role: 'leader', term: 1, lastSeq: 5, lastTerm: 1, updatedAtMs: 1 });
    await a.publish({ nodeId: 'b', url: 'http://127.0.0.1:2', role: 'standby', term: 1, lastSeq: 4, lastTerm: 1, updatedAtMs: 1 });
    expect((await a.members()).map((m) => m.nodeId).sort()).toEqual(['a', 'b']);
    expect((await a.members()).find((m) => m.nodeId === 'b')).toMatchObject({ lastSeq: 4, lastTerm: 1 });
    await s.passMs(400);
    expect(await a.members()).toEqual([]);
  });

  it('fails fast while the coordinator is unreachable instead of queueing commands', async () => {
    const s = await subject();
    const c = await s.unreachable();
    const started = Date.now();
    await expect(c.renew(1)).rejects.toThrow();
    await expect(c.campaign(0)).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
