// Goal: a retention longer than the time since 1970 (36500 days, "keep 100 years") puts the cutoff before the epoch, which means nothing is old enough: prune and the held-back count neither throw nor delete or count anything, and a later ordinary cutoff still prunes.
import type { AuditEvent } from '@auditlake/model';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DAY_MS, RetentionPruner } from '../src/index.js';
import { useTempStores } from './temp-stores.js';

const stores = useTempStores('auditlake-retention-epoch-');

function ev(eventId: string, timestamp: number): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp };
}

describe('a cutoff before the epoch', () => {
  it('prunes nothing and counts nothing held back, without throwing', async () => {
    const { store } = await stores.open();
    const now = Date.now();
    // The oldest event time there is (0) and one 50 years old: neither is older than 100 years.
    await store.append([ev('epoch', 0), ev('fifty', now - 50 * 365 * DAY_MS), ev('new', now)]);
    const cutoffMs = now - 36_500 * DAY_MS;
    expect(cutoffMs).toBeLessThan(0);
    expect(await store.pruneBefore(cutoffMs, 10, async () => true)).toEqual({ deleted: 0, batches: 0 });
    expect(await store.pruneBefore(cutoffMs, 10, async () => true, 3)).toEqual({ deleted: 0, batches: 0 });
    expect(await store.countHeldBack(cutoffMs, 0, 100)).toBe(0);
    expect((await store.readBySeq(0, 100)).map((e) => e.eventId)).toEqual(['epoch', 'fifty', 'new']);
    // The same store still prunes by an ordinary cutoff.
    expect(await store.pruneBefore(now - DAY_MS, 10, async () => true)).toMatchObject({ deleted: 2 });
  });

  it('a pruner with a 36500-day retention runs, prunes nothing and reports no error', async () => {
    const { store } = await stores.open();
    const now = Date.now();
    await store.append([ev('epoch', 0), ev('new', now)]);
    const errors: unknown[] = [];
    const pruner = new RetentionPruner(store, { intervalMs: 60_000, batchSize: 10, policy: (nowMs) => ({ cutoffMs: nowMs - 36_500 * DAY_MS }), onError: (err) => errors.push(err) });
    onTestFinished(() => pruner.close());
    expect(await pruner.trigger()).toEqual({ deleted: 0, batches: 0 });
    expect(errors).toEqual([]);
    expect((await store.readBySeq(0, 100)).map((e) => e.eventId)).toEqual(['epoch', 'new']);
  });
});
