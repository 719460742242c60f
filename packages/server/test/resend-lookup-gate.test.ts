// Goal: the re-send lookups ingest makes take turns — at most `running` at once (one past its timeout keeps its turn until it ends), at most `waiting` queued in order, and a request beyond both refused at once with a retryable 429 code without its lookup ever running; one sender holds at most half the turns and a quarter of the queue, and a freed turn goes to the sender holding the fewest — and every timer and rejection is accounted for.
import { AuditErrorCode } from '@auditlake/model';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ResendLookupGate, ResendLookupsBusy, ResendLookupTimeout } from '../src/resend-lookup-gate.js';

/** Lookups the test ends by hand: each started one is recorded with its resolve and reject. */
function manualLookups() {
  const started: Array<{ name: string; resolve: (value: string) => void; reject: (err: Error) => void }> = [];
  const lookup = (name: string) => () => new Promise<string>((resolve, reject) => started.push({ name, resolve, reject }));
  return { started, lookup };
}

/** Lets settled promises' callbacks run. */
const flush = () => vi.advanceTimersByTimeAsync(0);

describe('ResendLookupGate', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('runs at most `running` lookups at once and starts the waiting ones in order as turns free', async () => {
    const gate = new ResendLookupGate({ running: 2, waiting: 4 });
    const { started, lookup } = manualLookups();
    const answers = Promise.allSettled(['a', 'b', 'c', 'd'].map((name) => gate.run(lookup(name), 60_000, 'late')));
    expect(started.map((s) => s.name)).toEqual(['a', 'b']);
    expect([gate.running, gate.waiting]).toEqual([2, 2]);
    started[1]!.resolve('B');
    await flush();
    expect(started.map((s) => s.name)).toEqual(['a', 'b', 'c']);
    started[0]!.reject(new Error('bucket said no'));
    await flush();
    expect(started.map((s) => s.name)).toEqual(['a', 'b', 'c', 'd']);
    started[2]!.resolve('C');
    started[3]!.resolve('D');
    const settled = await answers;
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).toEqual(['bucket said no', 'B', 'C', 'D']);
    expect([gate.running, gate.waiting]).toEqual([0, 0]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('refuses a request at once when every turn is taken and the queue is full, without running its lookup', async () => {
    const gate = new ResendLookupGate({ running: 1, waiting: 1 });
    const { started, lookup } = manualLookups();
    const first = gate.run(lookup('first'), 60_000, 'late');
    const second = gate.run(lookup('second'), 60_000, 'late');
    const refused = lookup('refused');
    const third = gate.run(refused, 60_000, 'late');
    await expect(third).rejects.toBeInstanceOf(ResendLookupsBusy);
    const err = (await third.catch((e: unknown) => e)) as ResendLookupsBusy;
    expect(err.code).toBe(AuditErrorCode.LIMIT_EXCEEDED);
    expect(err.retryable).toBe(true);
    expect(err.message).toContain('1 tier lookups for events that may re-send ones retention deleted are running and 1 waiting');
    expect(err.message).toContain('auditlake.ingest.resend.lookup.concurrency');
    expect(err.message).toContain('nothing of this request was stored');
    expect(started.map((s) => s.name)).toEqual(['first']);
    started[0]!.resolve('1');
    await flush();
    started[1]!.resolve('2');
    expect(await Promise.all([first, second])).toEqual(['1', '2']);
    // Turns free again: the next one runs.
    const again = gate.run(lookup('again'), 60_000, 'late');
    started[2]!.resolve('3');
    expect(await again).toBe('3');
  });

  it('times a lookup out after timeoutMs but keeps its turn until it ends: a waiter starts only then', async () => {
    const gate = new ResendLookupGate({ running: 1, waiting: 2 });
    const { started, lookup } = manualLookups();
    const slow = gate.run(lookup('slow'), 1_000, 'the tier did not answer within 1000 ms');
    const slowOutcome = slow.catch((e: unknown) => e);
    const next = gate.run(lookup('next'), 10_000, 'late');
    await vi.advanceTimersByTimeAsync(1_000);
    const timedOut = await slowOutcome;
    expect(timedOut).toBeInstanceOf(ResendLookupTimeout);
    expect((timedOut as Error).message).toBe('the tier did not answer within 1000 ms');
    // Timed out, still reading the bucket: it holds the turn.
    expect([gate.running, gate.waiting]).toEqual([1, 1]);
    expect(started.map((s) => s.name)).toEqual(['slow']);
    // Its late failure is nobody's to handle and must not surface as an unhandled rejection.
    started[0]!.reject(new Error('late failure'));
    await flush();
    expect(started.map((s) => s.name)).toEqual(['slow', 'next']);
    started[1]!.resolve('answer');
    expect(await next).toBe('answer');
  });

  it('a request that waited out its time gives up its place: its lookup never runs and the next waiter takes the turn', async () => {
    const gate = new ResendLookupGate({ running: 1, waiting: 2 });
    const { started, lookup } = manualLookups();
    const running = gate.run(lookup('running'), 60_000, 'late');
    const impatient = gate.run(lookup('impatient'), 500, 'the tier did not answer within 500 ms').catch((e: unknown) => e);
    const patient = gate.run(lookup('patient'), 60_000, 'late');
    await vi.advanceTimersByTimeAsync(500);
    const err = await impatient;
    expect(err).toBeInstanceOf(ResendLookupTimeout);
    expect((err as Error).message).toBe('the tier did not answer within 500 ms; it waited for a turn behind 1 running lookups');
    expect([gate.running, gate.waiting]).toEqual([1, 1]);
    started[0]!.resolve('r');
    await flush();
    expect(started.map((s) => s.name)).toEqual(['running', 'patient']);
    started[1]!.resolve('p');
    expect(await Promise.all([running, patient])).toEqual(['r', 'p']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a lookup that throws before returning a promise fails its request and frees its turn', async () => {
    const gate = new ResendLookupGate({ running: 1, waiting: 1 });
    const throwing = gate.run(() => {
      throw new Error('no tier sources');
    }, 60_000, 'late');
    await expect(throwing).rejects.toThrow('no tier sources');
    expect(gate.running).toBe(0);
    await expect(gate.run(async () => 'fine', 60_000, 'late')).resolves.toBe('fine');
  });

  it('refuses limits that would never run a lookup or are not whole numbers', () => {
    expect(() => new ResendLookupGate({ running: 0, waiting: 1 })).toThrow('running must be a positive integer, got 0');
    expect(() => new ResendLookupGate({ running: 1, waiting: -1 })).toThrow('waiting must be a non-negative integer, got -1');
    expect(() => new ResendLookupGate({ running: 1.5, waiting: 1 })).toThrow('running must be a positive integer, got 1.5');
  });

  it('keeps turns and places for other senders: one sender flooding gets half the turns and a quarter of the queue, and a freed turn goes to the sender holding fewest', async () => {
    const gate = new ResendLookupGate({ running: 4, waiting: 16 });
    const { started, lookup } = manualLookups();
    const as = (sender: string, name: string) => gate.run(lookup(name), 60_000, 'late', sender);
    // The flood: 2 run (half of 4), 4 wait (a quarter of 16), the rest refused at once.
    const flood = Array.from({ length: 10 }, (_, i) => as('mallory', `m${i}`).catch((e: unknown) => e));
    expect(started.map((s) => s.name)).toEqual(['m0', 'm1']);
    expect([gate.running, gate.waiting]).toEqual([2, 4]);
    const refused = (await Promise.all(flood.slice(6))) as Error[];
    expect(refused.every((e) => e instanceof ResendLookupsBusy && e.message.includes('4 tier lookups of "mallory"') && e.message.includes('as many as one sender may'))).toBe(true);
    // Another sender's replay starts at once on a free turn.
    const replay = as('spool', 's0');
    expect(started.map((s) => s.name)).toEqual(['m0', 'm1', 's0']);
    started[2]!.resolve('S0');
    expect(await replay).toBe('S0');
    await flush();
    // With the turns full, a freed turn goes to the waiting sender holding the fewest, not to the flood's queue.
    const more = as('alice', 'a0');
    const more2 = as('bob', 'b0');
    expect(started.map((s) => s.name)).toEqual(['m0', 'm1', 's0', 'a0', 'b0']);
    const carol = as('carol', 'c0');
    expect(gate.waiting).toBe(5);
    started[0]!.resolve('M0');
    await flush();
    expect(started.at(-1)?.name).toBe('c0');
    for (const s of started.slice(1)) s.resolve(s.name);
    await flush();
    // The flood's waiters run as turns free (two at a time at most).
    while (gate.running > 0) {
      for (const s of started) s.resolve(s.name);
      await flush();
    }
    expect(await Promise.all([more, more2, carol])).toEqual(['a0', 'b0', 'c0']);
    expect(started.filter((s) => s.name.startsWith('m')).map((s) => s.name)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'm5']);
    expect(vi.getTimerCount()).toBe(0);
  });
});
