// Goal: only the live node with the most up-to-date log — by last term, then last seq — campaigns; a longer log of an older term never wins over a later term.
import { describe, expect, it } from 'vitest';
import { InMemoryCoordinatorState, type LogEnd } from '../src/index.js';
import { HEARD_FORGET_TTLS, type LeaderElector } from '../src/leader-elector.js';
import { ManualClock } from './manual-clock.js';
import { testElector } from './test-elector.js';

const TTL = 600;

function cluster(ends: Record<string, LogEnd>) {
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
  return { electors, won, run, elector: (id: string) => electors.get(id) as LeaderElector };
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
