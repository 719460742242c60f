// Goal: terms are never reused, even when Redis restarts empty and a node that never saw the latest term campaigns first (regression).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it, onTestFinished } from 'vitest';
import { freePort } from './free-port.js';
import { RedisCoordinator, systemClock } from '../src/index.js';
import { LeaderElector } from '../src/leader-elector.js';

const TTL = 600;

describe('LeaderElector', () => {
  it('never hands out a term twice across a Redis restart that loses the term counter', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    let redis: ChildProcess | undefined;
    const startRedis = async () => {
      redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      const probe = new RedisCoordinator({ url, clusterName: 'probe', nodeId: 'probe', leaseTtlMs: 3000 });
      expect(await probe.connected(10_000)).toBe(true);
      await probe.close();
    };
    const stopRedis = async () => {
      if (!redis || redis.exitCode !== null || redis.signalCode !== null) return;
      const exited = once(redis, 'exit');
      redis.kill('SIGKILL');
      await exited;
    };
    onTestFinished(stopRedis);
    await startRedis();

    const won: Array<{ node: string; term: number }> = [];
    const elector = async (nodeId: string) => {
      const coordinator = new RedisCoordinator({ url, clusterName: 'test', nodeId, leaseTtlMs: TTL });
      expect(await coordinator.connected(10_000)).toBe(true);
      const e = new LeaderElector({
        coordinator,
        clock: systemClock,
        nodeId,
        leaseTtlMs: TTL,
        knownTerm: 0,
        logEnd: () => ({ lastSeq: 0, lastTerm: 0 }),
        prepareLeadership: async () => undefined,
        persistTerm: async () => undefined,
        onTick: async () => undefined,
        log: {
          info: (obj: object, msg: string) => {
            if (msg.startsWith('won the leader election')) won.push({ node: nodeId, term: (obj as { term: number }).term });
          },
          warn: () => undefined,
        },
      });
      onTestFinished(async () => {
        await e.close();
        await coordinator.close();
      });
      return e;
    };

    const a = await elector('a');
    a.start('http://a');
    await expect.poll(() => a.isLeader(), { timeout: 10_000, interval: 20 }).toBe(true);
    expect(won).toEqual([{ node: 'a', term: 1 }]);
    await a.close();

    await stopRedis();
    await startRedis();
    // b has never seen term 1 and is connected and ticking the moment Redis is back; the node
    // that remembers term 1 (here a bare coordinator) puts its floor back a little later.
    const b = await elector('b');
    b.start('http://b');
    await new Promise((r) => setTimeout(r, 150));
    const rememberer = new RedisCoordinator({ url, clusterName: 'test', nodeId: 'c', leaseTtlMs: TTL });
    onTestFinished(() => rememberer.close());
    expect(await rememberer.connected(5000)).toBe(true);
    await rememberer.raiseTermFloor(1);
    await expect.poll(() => won.length, { timeout: 10_000, interval: 20 }).toBe(2);
    expect(won[1]).toEqual({ node: 'b', term: 2 });
  });

  it('keeps its lease at terms of 1e14 and more, where Lua writes numbers as 1e+14', async () => {
    const port = await freePort();
    const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    onTestFinished(async () => {
      if (redis.exitCode !== null || redis.signalCode !== null) return;
      const exited = once(redis, 'exit');
      redis.kill('SIGKILL');
      await exited;
    });
    const coordinator = new RedisCoordinator({ url: `redis://127.0.0.1:${port}`, clusterName: 'big-terms', nodeId: 'a', leaseTtlMs: 3000 });
    onTestFinished(() => coordinator.close());
    expect(await coordinator.connected(10_000)).toBe(true);
    const term = await coordinator.campaign(1e14);
    expect(term).toBe(1e14 + 1);
    // The lease names the term exactly, so renewing it in that term works (it read 'a|1e+14' before).
    expect(await coordinator.leader()).toMatchObject({ nodeId: 'a', term: 1e14 + 1 });
    expect(await coordinator.renew(term)).toBe(true);
  });
});
