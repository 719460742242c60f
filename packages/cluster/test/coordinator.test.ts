// Goal: the Redis lease admits one leader per term, renews only for its holder, and terms never repeat — even after Redis restarts empty.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it, onTestFinished } from 'vitest';
import { freePort } from './free-port.js';
import { Coordinator } from '../src/index.js';
import { ReplicationTracker } from '../src/replication-tracker.js';

/** A throwaway redis-server (from PATH) that the test can restart empty on the same port. */
async function redis(): Promise<{ url: string; restartEmpty(): Promise<void> }> {
  const port = await freePort();
  let child: ChildProcess;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const client = new Coordinator({ url: `redis://127.0.0.1:${port}`, clusterName: 'probe', nodeId: 'probe', leaseTtlMs: 3000 });
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
  return {
    url: `redis://127.0.0.1:${port}`,
    async restartEmpty() {
      await stop();
      await start();
    },
  };
}

async function coordinator(url: string, nodeId: string, leaseTtlMs = 1000): Promise<Coordinator> {
  const c = new Coordinator({ url, clusterName: 'test', nodeId, leaseTtlMs });
  onTestFinished(() => c.close());
  expect(await c.connected(5000)).toBe(true);
  return c;
}

describe('Coordinator', () => {
  it('lets exactly one of several candidates win, with a fresh term', async () => {
    const server = await redis();
    const nodes = await Promise.all(['a', 'b', 'c'].map((id) => coordinator(server.url, id)));
    const terms = await Promise.all(nodes.map((n) => n.campaign(0)));
    expect(terms.filter((t) => t > 0)).toEqual([1]);
    const winner = ['a', 'b', 'c'][terms.findIndex((t) => t > 0)]!;
    expect(await nodes[0]!.leader()).toEqual({ nodeId: winner, term: 1 });
  });

  it('renews only for the holder in its term, and hands over after resign or expiry with a higher term', async () => {
    const server = await redis();
    const a = await coordinator(server.url, 'a', 300);
    const b = await coordinator(server.url, 'b', 300);
    expect(await a.campaign(0)).toBe(1);
    expect(await a.renew(1)).toBe(true);
    expect(await b.renew(1)).toBe(false);
    expect(await a.renew(2)).toBe(false);
    expect(await b.campaign(0)).toBe(0);
    await a.resign(1);
    expect(await b.campaign(0)).toBe(2);
    // Not renewed: the lease expires on its own.
    await new Promise((r) => setTimeout(r, 450));
    expect(await a.leader()).toBeUndefined();
    expect(await a.campaign(0)).toBe(3);
  });

  it('never reissues a term after Redis restarts empty: campaigns and floors use the terms nodes remember', async () => {
    const server = await redis();
    const a = await coordinator(server.url, 'a');
    expect(await a.campaign(0)).toBe(1);
    expect(await a.campaign(0)).toBe(0);
    const token = await a.clusterToken(undefined);
    await server.restartEmpty();
    expect(await a.connected(5000)).toBe(true);
    expect(await a.latestTerm()).toBe(0);
    const b = await coordinator(server.url, 'b');
    await b.raiseTermFloor(7);
    expect(await b.latestTerm()).toBe(7);
    expect(await a.campaign(3)).toBe(8);
    // The remembered cluster token is put back rather than replaced.
    expect(await a.clusterToken(token)).toBe(token);
    expect(await b.clusterToken(undefined)).toBe(token);
  });

  it('lists live members and forgets expired ones', async () => {
    const server = await redis();
    const a = await coordinator(server.url, 'a', 100);
    await a.publish({ nodeId: 'a', url: 'http://127.0.0.1:1', role: 'leader', term: 1, appliedSeq: 5, updatedAtMs: 1 });
    await a.publish({ nodeId: 'b', url: 'http://127.0.0.1:2', role: 'standby', term: 1, appliedSeq: 4, updatedAtMs: 1 });
    expect((await a.members()).map((m) => m.nodeId).sort()).toEqual(['a', 'b']);
    await new Promise((r) => setTimeout(r, 400)); // 3 TTLs
    expect(await a.members()).toEqual([]);
  });

  it('fails fast while Redis is unreachable instead of queueing commands', async () => {
    const c = new Coordinator({ url: `redis://127.0.0.1:${await freePort()}`, clusterName: 'x', nodeId: 'a', leaseTtlMs: 600 });
    onTestFinished(() => c.close());
    const started = Date.now();
    await expect(c.renew(1)).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe('ReplicationTracker', () => {
  it('resolves waiters once any standby reaches the seq, and times out otherwise', async () => {
    const tracker = new ReplicationTracker();
    const waiting = tracker.waitForAny(10, 5000);
    tracker.record('s1', 9);
    tracker.record('s2', 10);
    await expect(waiting).resolves.toBe(true);
    await expect(tracker.waitForAny(10, 10)).resolves.toBe(true);
    await expect(tracker.waitForAny(11, 20)).resolves.toBe(false);
    // Progress never goes back, even if an old pull arrives late.
    tracker.record('s2', 3);
    expect(tracker.progress.find((p) => p.nodeId === 's2')?.appliedSeq).toBe(10);
    const pending = tracker.waitForAny(100, 60_000);
    tracker.close();
    await expect(pending).resolves.toBe(false);
  });
});
