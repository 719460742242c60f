// Goal: refusals are recorded one by one only up to a per-client threshold per window (an IPv6 client is its /64); past it the client is limited and its window becomes one summary event, and past SUMMARIES_RECORDED_MAX summaries at once the rest become one, so a flood from any number of addresses cannot grow the store without bound; a flood without credentials cannot use up the records of principals' refusals, and refusals over the per-second bound are recorded as summaries, per principal (manual clock).
import type { AuditEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { ClientRefusals } from '../src/auth/client-refusals.js';
import { DenyRecorder, SUMMARIES_RECORDED_MAX, type RefusedAccess } from '../src/auth/deny-recorder.js';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);

function recorder(clock: { nowMs: number }, options: { perClientMax?: number; perSecond?: number; clientsMax?: number } = {}) {
  const recorded: AuditEvent[] = [];
  const deny = new DenyRecorder({
    perSecond: options.perSecond ?? 1_000_000,
    perClientMax: options.perClientMax ?? 3,
    perClientWindowMs: 60_000,
    ...(options.clientsMax === undefined ? {} : { clientsMax: options.clientsMax }),
    now: () => clock.nowMs,
    record: async (event) => {
      recorded.push(event);
    },
  });
  return { deny, recorded };
}

function access(clientAddress: string, extra: Partial<RefusedAccess> = {}): RefusedAccess {
  return { status: 401, userId: 'anonymous', action: 'auth:Authenticate', resource: 'GET /admin/audit', reason: 'unknown token', clientAddress, ...extra };
}

describe('DenyRecorder', () => {
  it('records 3 refusals of a client, limits the rest of its window with Retry-After, and records them as one summary when the window ends', async () => {
    const clock = { nowMs: T0 };
    const { deny, recorded } = recorder(clock);
    const verdicts = [];
    for (let i = 0; i < 50; i++) {
      verdicts.push(deny.refuse(access('10.0.0.9', { scheme: 'Token', fingerprint: '0a1b2c3d' })));
      clock.nowMs += 100;
    }
    expect(verdicts.slice(0, 3)).toEqual([{ limited: false }, { limited: false }, { limited: false }]);
    // The 4th came at T0+300 ms: the window (60 s from T0) ends in 59.7 s, so 60 s rounded up.
    expect(verdicts[3]).toEqual({ limited: true, retryAfterSec: 60 });
    expect(verdicts[49]).toEqual({ limited: true, retryAfterSec: 56 });
    expect(recorded).toHaveLength(3);
    expect(recorded[0]).toMatchObject({ decision: 'DENY', source: 'auditlake', details: 'HTTP 401: unknown token; scheme Token; credential fingerprint 0a1b2c3d; client 10.0.0.9' });

    // Another client is not limited by this one's flood.
    expect(deny.refuse(access('10.0.0.7'))).toEqual({ limited: false });

    clock.nowMs = T0 + 60_000;
    deny.flush();
    expect(recorded).toHaveLength(5);
    expect(recorded[4]).toMatchObject({
      userId: 'anonymous',
      action: 'auth:Authenticate',
      decision: 'DENY',
      resource: 'client 10.0.0.9',
      details: '47 refused requests from 10.0.0.9 between 2026-12-01T12:00:00.000Z and 2026-12-01T12:01:00.000Z, answered 429 after the first 3 (recorded one by one); this summary stands for them',
    });
    // Summarised once; a new window starts fresh.
    deny.flush();
    expect(recorded).toHaveLength(5);
    expect(deny.refuse(access('10.0.0.9'))).toEqual({ limited: false });
    await deny.close();
  });

  it('bounds what a flood stores: per client and window, the threshold plus one summary, however many requests', async () => {
    const clock = { nowMs: T0 };
    const { deny, recorded } = recorder(clock, { perClientMax: 20 });
    for (let window = 0; window < 3; window++) {
      for (let i = 0; i < 10_000; i++) deny.refuse(access('203.0.113.5'));
      clock.nowMs += 60_000;
    }
    await deny.close();
    expect(recorded).toHaveLength(3 * (20 + 1));
    expect(recorded.filter((e) => e.resource === 'client 203.0.113.5').map((e) => e.details.split(' ')[0])).toEqual(['9980', '9980', '9980']);
  });

  it('records the summaries of many flooding clients ending at once as SUMMARIES_RECORDED_MAX events and one combined event', async () => {
    const clock = { nowMs: T0 };
    const { deny, recorded } = recorder(clock, { perClientMax: 2, perSecond: 1_000_000 });
    // 3,000 addresses, each past its threshold (client i refused 3 + i % 5 times).
    for (let i = 0; i < 3000; i++) for (let k = 0; k < 3 + (i % 5); k++) deny.refuse(access(`2001:db8:${i.toString(16)}::1`));
    const oneByOne = recorded.length;
    expect(oneByOne).toBe(3000 * 2);
    clock.nowMs = T0 + 60_000;
    deny.flush();
    const summaries = recorded.slice(oneByOne);
    expect(summaries).toHaveLength(SUMMARIES_RECORDED_MAX + 1);
    const combined = summaries.at(-1)!;
    // Past each threshold: 1 + i % 5 refusals; 2,980 clients in the combined one.
    const total = Array.from({ length: 3000 }, (_, i) => 1 + (i % 5)).slice(SUMMARIES_RECORDED_MAX).reduce((a, b) => a + b, 0);
    expect(combined).toMatchObject({ resource: '2980 clients', details: expect.stringMatching(new RegExp(`^${total} refused requests from 2980 more clients between 2026-12-01T12:00:00.000Z and 2026-12-01T12:01:00.000Z, each answered 429 after its first 2 .*those refused most: 2001:db8:[0-9a-f]+:0::/64 \\(5\\)`)) });
    await deny.close();
  });

  it('close() records the summary of a window still open, and is idempotent', async () => {
    const clock = { nowMs: T0 };
    const { deny, recorded } = recorder(clock);
    for (let i = 0; i < 5; i++) deny.refuse(access('::1'));
    await deny.close();
    await deny.close();
    expect(recorded.map((e) => e.details.split(';')[0])).toEqual(['HTTP 401: unknown token', 'HTTP 401: unknown token', 'HTTP 401: unknown token', '2 refused requests from 0:0:0:0::/64 between 2026-12-01T12:00:00.000Z and 2026-12-01T12:01:00.000Z, answered 429 after the first 3 (recorded one by one)']);
  });

  it('counts an IPv6 client by its /64: 500 addresses of one /64 share one threshold', async () => {
    const clock = { nowMs: T0 };
    const { deny, recorded } = recorder(clock, { perClientMax: 20 });
    const verdicts = [];
    for (let i = 0; i < 500; i++) for (let k = 0; k < 20; k++) verdicts.push(deny.refuse(access(`2001:db8:1:2::${i.toString(16)}`)));
    expect(verdicts.filter((v) => !v.limited)).toHaveLength(20);
    await deny.close();
    expect(recorded).toHaveLength(21);
    expect(recorded[20]).toMatchObject({ resource: 'client 2001:db8:1:2::/64', details: expect.stringMatching(/^9980 refused requests from 2001:db8:1:2::\/64 /) });
    // The one-by-one records name the address itself.
    expect(recorded[0]?.details).toBe('HTTP 401: unknown token; client 2001:db8:1:2::0');
  });

  it('a flood without credentials from many addresses leaves every refusal of a principal recorded one by one', async () => {
    const clock = { nowMs: T0 };
    const { deny, recorded } = recorder(clock, { perClientMax: 20, perSecond: 20 });
    // 120 addresses, 16 bad tokens each (under their threshold), and a principal's 10 refused erasures among them.
    for (let round = 0; round < 16; round++) {
      for (let a = 0; a < 120; a++) deny.refuse(access(`127.0.${a}.1`));
      if (round < 10) deny.refuse(access('10.1.1.1', { status: 403, userId: 'engine-1', action: 'audit:EraseFields', resource: 'POST /admin/audit/erase', reason: 'ingest principals may not erase' }));
      clock.nowMs += 10;
    }
    expect(recorded.filter((e) => e.userId === 'engine-1' && e.details.startsWith('HTTP 403'))).toHaveLength(10);
    await deny.close();
  });

  it('records the refusals the per-second bound dropped as summaries at the next flush: one for those without credentials, one per principal', async () => {
    const clock = { nowMs: T0 };
    const { deny, recorded } = recorder(clock, { perClientMax: 1_000, perSecond: 2 });
    for (let i = 0; i < 5; i++) deny.refuse(access(`198.51.100.${i}`));
    for (let i = 0; i < 10; i++) deny.refuse(access('10.1.1.1', { status: 403, userId: 'alice', action: i < 7 ? 'audit:EraseFields' : 'audit:Search', resource: 'POST /admin/audit/erase', reason: 'forbidden' }));
    for (let p = 0; p < SUMMARIES_RECORDED_MAX + 3; p++) deny.refuse(access('10.1.1.2', { status: 403, userId: `p${p}`, action: 'audit:Search', resource: 'GET /admin/audit', reason: 'forbidden' }));
    expect(recorded).toHaveLength(4);
    clock.nowMs += 1_000;
    deny.flush();
    const summaries = recorded.slice(4);
    expect(summaries[0]).toMatchObject({ userId: 'anonymous', action: 'auth:Authenticate', decision: 'DENY', details: '3 refused requests without valid credentials between 2026-12-01T12:00:00.000Z and 2026-12-01T12:00:00.000Z, over the bound of 2 recorded one by one per second; this summary stands for them' });
    // alice's two were recorded one by one; her other eight, by action, and each other principal's one.
    expect(summaries[1]).toMatchObject({ userId: 'alice', action: 'audit:EraseFields', details: expect.stringContaining('8 refused requests of principal alice between') as unknown });
    expect(summaries[1]?.details).toContain(': audit:EraseFields 5, audit:Search 3;');
    const principals = summaries.slice(1, 1 + SUMMARIES_RECORDED_MAX);
    expect(principals.map((e) => e.userId)).toEqual(['alice', ...Array.from({ length: SUMMARIES_RECORDED_MAX - 1 }, (_, p) => `p${p}`)]);
    expect(summaries.at(-1)).toMatchObject({ userId: 'several principals', details: expect.stringMatching(/^4 refused requests of principals other than the 20 refused most/) });
    expect(summaries).toHaveLength(1 + SUMMARIES_RECORDED_MAX + 1);
    // Recorded once.
    deny.flush();
    expect(recorded).toHaveLength(4 + summaries.length);
    await deny.close();
  });

  it('tracks at most clientsMax addresses; more share one bounded entry', () => {
    const refusals = new ClientRefusals({ refusalsMax: 1, windowMs: 60_000, clientsMax: 2 });
    expect(refusals.refuse('a', T0)).toEqual({ limited: false });
    expect(refusals.refuse('b', T0)).toEqual({ limited: false });
    expect(refusals.refuse('c', T0)).toEqual({ limited: false });
    expect(refusals.refuse('d', T0)).toEqual({ limited: true, retryAfterSec: 60 });
    expect(refusals.clientCount).toBe(3);
    expect(refusals.takeEnded(T0 + 60_000).map((s) => [s.clientAddress, s.count])).toEqual([['*', 1]]);
    expect(refusals.clientCount).toBe(0);
  });
});
