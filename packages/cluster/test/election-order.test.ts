// Goal: only the live node with the most up-to-date log — by last term, then last seq — campaigns; a longer log of an older term never wins over a later term; a leader that most of its two or more live standbys no longer reach steps down and yields, so one of them leads.
import { describe, expect, it } from 'vitest';
import { InMemoryCoordinator, InMemoryCoordinatorState, type LogEnd, type MemberInfo } from '../src/index.js';
import { CUT_OFF_TTLS, HEARD_FORGET_TTLS, YIELD_TTLS, type LeaderElector, type LeaderElectorOptions } from '../src/leader-elector.js';
import { ManualClock } from './manual-clock.js';
import { testElector } from './test-elector.js';

const TTL = 600;

function cluster(ends: Record<string, LogEnd>, more: (nodeId: string, state: InMemoryCoordinatorState) => Partial<LeaderElectorOptions> = () => ({})) {
  const clock = new ManualClock();
  const state = new InMemoryCoordinatorState({ clock, newToken: () => 'token' });
  const won: Array<{ node: string; term: number }> = [];
  const electors = new Map(
    Object.entries(ends).map(([nodeId, end]) => [
      nodeId,
      testElector(state, clock, nodeId, {
        leaseTtlMs: TTL,
        knownTerm: end.lastTerm,
        logEnd: () => end,
        log: {
          info: (obj: object, msg: string) => {
            if (msg.startsWith('won the leader election')) won.push({ node: nodeId, term: (obj as { term: number }).term });
          },
          warn: () => undefined,
        },
        ...more(nodeId, state),
      }),
    ]),
  );
  /** Lets `ms` pass in `step` ms steps, letting each step's promises settle. */
  const run = async (ms: number, step = 10) => {
    for (let t = 0; t < ms; t += step) {
      clock.advance(step);
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    }
  };
  return { clock, electors, won, run, elector: (id: string) => electors.get(id) as LeaderElector };
}

/**
 * A cluster whose leader-to-be `a` hears pull requests from the nodes in `pulling` at every
 * step (its lastPullMs), and each node's member record as the coordinator holds it.
 */
function pulledCluster(ends: Record<string, LogEnd>, extra: (nodeId: string, state: InMemoryCoordinatorState) => Partial<LeaderElectorOptions> = () => ({})) {
  const pulls = new Map<string, number>();
  const pulling = new Set<string>();
  const c = cluster(ends, (nodeId, state) => ({ ...(nodeId === 'a' ? { lastPullMs: (peer: string) => pulls.get(peer) } : {}), ...extra(nodeId, state) }));
  const run = async (ms: number) => {
    for (let t = 0; t < ms; t += 10) {
      for (const peer of pulling) pulls.set(peer, c.clock.monotonicMs());
      await c.run(10);
    }
  };
  return { ...c, pulling, run };
}

describe('who campaigns', () => {
  it('the later last term wins over a longer log of an older term, then the longer log of equal terms', async () => {
    const c = cluster({ a: { lastTerm: 2, lastSeq: 5 }, b: { lastTerm: 1, lastSeq: 100 }, d: { lastTerm: 2, lastSeq: 4 } });
    for (const [id, e] of c.electors) e.start(`sim://${id}`);
    await c.run(5 * TTL);
    expect(c.won).toEqual([{ node: 'a', term: 3 }]);
    expect(c.elector('a').isLeader()).toBe(true);
    // a stops: of the live nodes d (term 2, seq 4) beats b (term 1, seq 100); b never campaigns.
    await c.elector('a').close();
    await c.run(5 * TTL);
    expect(c.won).toEqual([
      { node: 'a', term: 3 },
      { node: 'd', term: 4 },
    ]);
    for (const e of c.electors.values()) await e.close();
  });

  it('a node waits while a more up-to-date peer is live, and campaigns once that peer has not published for a lease TTL', async () => {
    const c = cluster({ a: { lastTerm: 1, lastSeq: 10 }, b: { lastTerm: 1, lastSeq: 9 } });
    c.elector('b').start('sim://b');
    await c.run(TTL / 2);
    c.elector('a').start('sim://a');
    await c.run(TTL / 2 + 50);
    // b could campaign by now, but a (live, longer log) holds it back; a stops before it may.
    await c.elector('a').close();
    await c.run(TTL / 2);
    expect(c.won).toEqual([]);
    await c.run(3 * TTL);
    expect(c.won.map((w) => w.node)).toEqual(['b']);
    await c.elector('b').close();
  });

  it(`lists a node that stopped as heard until ${HEARD_FORGET_TTLS} lease TTLs after it was last heard, then forgets it`, async () => {
    const c = cluster({ a: { lastTerm: 1, lastSeq: 1 }, b: { lastTerm: 1, lastSeq: 1 } });
    for (const [id, e] of c.electors) e.start(`sim://${id}`);
    await c.run(5 * TTL);
    const heardBy = (id: string) => c.elector(id).heard().map((h) => h.member.nodeId).sort();
    expect(heardBy('a')).toEqual(['a', 'b']);
    await c.elector('b').close();
    // Its record expires after three TTLs; it stays listed (as not heard for long) well after.
    await c.run((HEARD_FORGET_TTLS - 10) * TTL, 100);
    expect(heardBy('a')).toEqual(['a', 'b']);
    expect(c.elector('a').heard().find((h) => h.member.nodeId === 'b')!.lastHeardMs).toBeGreaterThan((HEARD_FORGET_TTLS - 20) * TTL);
    await c.run(20 * TTL, 100);
    expect(heardBy('a')).toEqual(['a']);
    await c.elector('a').close();
  });
});

describe('a leader its standbys no longer reach', () => {
  const ends = { a: { lastTerm: 1, lastSeq: 10 }, b: { lastTerm: 1, lastSeq: 9 }, c: { lastTerm: 1, lastSeq: 9 } };

  it('keeps leading while one of two standbys reaches it; steps down once neither has for CUT_OFF_TTLS, and one of them leads although its log is shorter', async () => {
    const c = pulledCluster(ends);
    for (const [id, e] of c.electors) e.start(`sim://${id}`);
    c.pulling.add('b').add('c');
    await c.run(3 * TTL);
    expect(c.won).toEqual([{ node: 'a', term: 2 }]);
    c.pulling.delete('c');
    await c.run(3 * CUT_OFF_TTLS * TTL);
    expect(c.elector('a').isLeader()).toBe(true);
    c.pulling.delete('b');
    await c.run((CUT_OFF_TTLS + 1) * TTL);
    expect(c.elector('a').isLeader()).toBe(false);
    expect(c.elector('a').members.find((m) => m.nodeId === 'a')?.yielding).toBe(true);
    await c.run(2 * TTL);
    expect(c.won).toHaveLength(2);
    expect(['b', 'c']).toContain(c.won[1]?.node);
    // a campaigns no more while it yields, and afterwards only as any node does (b or c leads on).
    await c.run(YIELD_TTLS * TTL);
    expect(c.won).toHaveLength(2);
    for (const e of c.electors.values()) await e.close();
  });

  it('never steps down with one standby (nothing tells which of the two is cut off), and gives a standby that just came back the whole period', async () => {
    const two = pulledCluster({ a: ends.a, b: ends.b });
    for (const [id, e] of two.electors) e.start(`sim://${id}`);
    await two.run(3 * CUT_OFF_TTLS * TTL);
    expect(two.won).toEqual([{ node: 'a', term: 2 }]);
    expect(two.elector('a').isLeader()).toBe(true);
    for (const e of two.electors.values()) await e.close();

    const late = pulledCluster(ends);
    late.elector('a').start('sim://a');
    await late.run(2 * CUT_OFF_TTLS * TTL);
    expect(late.elector('a').isLeader()).toBe(true);
    // b and c come up long after a won; they have not pulled yet, and are given CUT_OFF_TTLS from now.
    late.elector('b').start('sim://b');
    late.elector('c').start('sim://c');
    await late.run((CUT_OFF_TTLS - 1) * TTL);
    expect(late.elector('a').isLeader()).toBe(true);
    await late.run(2 * TTL);
    expect(late.elector('a').isLeader()).toBe(false);
    for (const e of late.electors.values()) await e.close();
  });

  it('waits the cut-off it is given (a cluster node passes at least three pull timeouts), and never steps down while a live standby does not leave a yielding node out (an older version)', async () => {
    const longer = pulledCluster(ends, (nodeId) => (nodeId === 'a' ? { cutOffMs: 2 * CUT_OFF_TTLS * TTL } : {}));
    for (const [id, e] of longer.electors) e.start(`sim://${id}`);
    await longer.run(3 * TTL);
    expect(longer.won).toEqual([{ node: 'a', term: 2 }]);
    await longer.run((CUT_OFF_TTLS + 2) * TTL);
    expect(longer.elector('a').isLeader()).toBe(true);
    await longer.run((CUT_OFF_TTLS + 1) * TTL);
    expect(longer.elector('a').isLeader()).toBe(false);
    for (const e of longer.electors.values()) await e.close();

    // c publishes as a version before yielding did (no honoursYielding): a stays, whatever the silence.
    const mixed = pulledCluster(ends, (nodeId, state) => {
      if (nodeId !== 'c') return {};
      const coordinator = new InMemoryCoordinator(state, { nodeId: 'c', leaseTtlMs: TTL });
      const publish = coordinator.publish.bind(coordinator);
      coordinator.publish = async ({ honoursYielding: _dropped, ...older }: MemberInfo) => publish(older);
      return { coordinator };
    });
    for (const [id, e] of mixed.electors) e.start(`sim://${id}`);
    await mixed.run(3 * CUT_OFF_TTLS * TTL);
    expect(mixed.won.map((w) => w.node)).toEqual(['a']);
    expect(mixed.elector('a').isLeader()).toBe(true);
    for (const e of mixed.electors.values()) await e.close();
  });
});
