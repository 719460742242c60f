// Goal: sources that stopped sending give their places in the completeness ledger up, so the
// sources that come after the first LEDGER_SOURCES_MAX are tracked too — but only idle ones
// (no event for more than LEDGER_SOURCE_IDLE_DAYS), only when the ledger is nearly full
// (LEDGER_RETIRE_FROM_SOURCES), with their holes still counted, and by the log alone: a standby
// that applies the same log in other batches, and a store reopened midway, retire the same
// sources at the same event. A store written before days were kept gives its sources the idle
// period from the first day it sees, not from the start of time.
import type { AuditEvent } from '@auditlake/model';
import { Level } from 'level';
import { describe, expect, it } from 'vitest';
import { useTempStores } from './temp-stores.js';
import { LEDGER_DAY_KEY, LEDGER_RETIRE_FROM_SOURCES, LEDGER_SOURCE_IDLE_DAYS, LEDGER_SOURCES_MAX } from '../src/source-ledger.js';
import type { AuditStore } from '../src/audit-store.js';

const stores = useTempStores('auditlake-ledger-idle-');
const DAY = 86_400_000;
/** Noon of the first day the tests ingest on. */
const START = Date.UTC(2026, 0, 1, 12);

function ev(id: string, sourceId: string, sourceSeq: number): AuditEvent {
  return { eventId: id, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: 'ALLOW', tables: [], query: '', details: '', timestamp: START, sourceId, sourceSeq };
}

/** A store whose ingest clock the test sets (`clock.now`). */
async function openAt(clock: { now: number }, location?: string) {
  return stores.open(location, () => clock.now);
}

/** `count` sources `crowd-…`, one event each, in appends of 2,000. */
async function crowd(store: AuditStore, count: number, prefix = 'crowd'): Promise<void> {
  for (let from = 0; from < count; from += 2_000) {
    const events: AuditEvent[] = [];
    for (let i = from; i < Math.min(count, from + 2_000); i++) events.push(ev(`${prefix}-${i}`, `${prefix}-${String(i).padStart(6, '0')}`, 1));
    await store.append(events);
  }
}

/** Copies the leader's whole log to a standby, `batch` entries a pull. */
async function replicate(leader: AuditStore, standby: AuditStore, batch: number): Promise<void> {
  for (let seq = 0; ; ) {
    const read = await standby.applyReplicated(await leader.readEncodedBySeq(seq, batch));
    if (read === 0) return;
    seq += read;
  }
}

describe('idle sources', () => {
  it(`are retired at the first event of a day more than ${LEDGER_SOURCE_IDLE_DAYS} days after their last, when the ledger is nearly full; a standby and a reopened store retire the same`, async () => {
    const clock = { now: START };
    const { store: leader, location } = await openAt(clock);
    // Day 0: a source with two holes, and the crowd that fills the ledger to the threshold.
    await leader.append([1, 3, 6].map((s) => ev(`gappy-${s}`, 'gappy', s)));
    await crowd(leader, LEDGER_RETIRE_FROM_SOURCES);
    // A source that keeps sending, every ten days.
    for (let day = 0; day <= 40; day += 10) {
      clock.now = START + day * DAY;
      await leader.append([ev(`steady-${day}`, 'steady', day / 10)]);
    }
    // The first event of day 40 retired the crowd and `gappy`, last seen on day 0; `steady` was
    // seen on day 30. Its holes still count, as retired.
    const summary = leader.sourceLedgerSummary();
    expect(summary).toMatchObject({ sources: 1, retiredSources: LEDGER_RETIRE_FROM_SOURCES + 1, retiredMissing: 3, missing: 0 });
    expect(leader.sourceLedger('gappy')).toEqual([]);
    expect(leader.sourceLedger('steady')[0]).toMatchObject({ received: 5, highestSourceSeq: 4, missing: 0 });
    // A retired source that sends again starts anew.
    await leader.append([ev('gappy-9', 'gappy', 9)]);
    expect(leader.sourceLedger('gappy')[0]).toMatchObject({ received: 1, firstSourceSeq: 9, missing: 0 });
    const entries = leader.sourceLedger();
    const after = leader.sourceLedgerSummary();

    // The same log, applied in pulls of other sizes (one cuts through the day-40 append).
    for (const batch of [1, 997, 20_000]) {
      const { store: standby } = await stores.open();
      await replicate(leader, standby, batch);
      expect(standby.sourceLedger(), `pulls of ${batch}`).toEqual(entries);
      expect(standby.sourceLedgerSummary(), `pulls of ${batch}`).toEqual(after);
      await stores.close(standby);
    }

    // The retired sources' keys are gone from the store; the reopened ledger is the same.
    await stores.close(leader);
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    const keys = await db.keys({ gte: 'h!', lt: 'h"' }).all();
    await db.close();
    expect(keys.filter((key) => key.startsWith('h!crowd-'))).toEqual([]);
    expect(keys.filter((key) => key.startsWith('h!gappy!'))).toEqual(['h!gappy!0000000000000009', 'h!gappy!t']);
    const { store: reopened } = await openAt(clock, location);
    expect(reopened.sourceLedger()).toEqual(entries);
    expect(reopened.sourceLedgerSummary()).toEqual(after);
  });

  it(`are kept for ${LEDGER_SOURCE_IDLE_DAYS} days after their last event, and whenever the ledger is below the threshold`, async () => {
    const clock = { now: START };
    const { store: full } = await openAt(clock);
    await crowd(full, LEDGER_RETIRE_FROM_SOURCES);
    // Day 30 after day 0: not more than 30 days idle.
    clock.now = START + LEDGER_SOURCE_IDLE_DAYS * DAY;
    await full.append([ev('late-30', 'late', 1)]);
    expect(full.sourceLedgerSummary()).toMatchObject({ sources: LEDGER_RETIRE_FROM_SOURCES + 1, retiredSources: 0 });
    // A later event of the same day changes nothing either: only a day's first event looks.
    await full.append([ev('late-30b', 'late', 2)]);
    expect(full.sourceLedgerSummary()).toMatchObject({ retiredSources: 0 });
    // Day 31: the crowd goes, `late` (seen on day 30) stays.
    clock.now += DAY;
    await full.append([ev('late-31', 'late', 3)]);
    expect(full.sourceLedgerSummary()).toMatchObject({ sources: 1, retiredSources: LEDGER_RETIRE_FROM_SOURCES });

    // Below the threshold, a year idle retires nothing.
    const belowClock = { now: START };
    const { store: below } = await openAt(belowClock);
    await crowd(below, LEDGER_RETIRE_FROM_SOURCES - 2);
    belowClock.now += 400 * DAY;
    await below.append([ev('next', 'next', 1)]);
    expect(below.sourceLedgerSummary()).toMatchObject({ sources: LEDGER_RETIRE_FROM_SOURCES - 1, retiredSources: 0 });
  });

  it(`make room for sources past ${LEDGER_SOURCES_MAX} that were counted together before`, async () => {
    const clock = { now: START };
    const { store } = await openAt(clock);
    await crowd(store, LEDGER_SOURCES_MAX);
    await store.append([ev('newcomer-1', 'newcomer', 1)]);
    expect(store.sourceLedgerSummary()).toMatchObject({ sources: LEDGER_SOURCES_MAX, otherSourceEvents: 1 });
    expect(store.sourceLedger('newcomer')).toEqual([]);
    clock.now += (LEDGER_SOURCE_IDLE_DAYS + 1) * DAY;
    // The day's first event retires the crowd before its own source is looked up.
    await store.append([ev('newcomer-2', 'newcomer', 2), ev('newcomer-4', 'newcomer', 4)]);
    expect(store.sourceLedger('newcomer')[0]).toMatchObject({ received: 2, firstSourceSeq: 2, missing: 1 });
    expect(store.sourceLedgerSummary()).toMatchObject({ sources: 1, retiredSources: LEDGER_SOURCES_MAX, otherSourceEvents: 1 });
  });
});

describe('a store whose sources have no day (written before days were kept)', () => {
  it('dates them by the first day it sees, so they are retired only after the idle period from then', async () => {
    const clock = { now: START };
    const { store, location } = await openAt(clock);
    await crowd(store, LEDGER_RETIRE_FROM_SOURCES);
    await stores.close(store);
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    const batch = db.batch();
    for (const key of await db.keys({ gte: 'h!', lt: 'h"' }).all()) if (key.endsWith('!t')) batch.del(key);
    batch.del(LEDGER_DAY_KEY);
    await batch.write({ sync: true });
    await db.close();

    clock.now += 100 * DAY;
    const { store: upgraded } = await openAt(clock, location);
    await upgraded.append([ev('first', 'first', 1)]);
    expect(upgraded.sourceLedgerSummary()).toMatchObject({ sources: LEDGER_RETIRE_FROM_SOURCES + 1, retiredSources: 0 });
    clock.now += (LEDGER_SOURCE_IDLE_DAYS + 1) * DAY;
    await upgraded.append([ev('first-2', 'first', 2)]);
    expect(upgraded.sourceLedgerSummary()).toMatchObject({ sources: 1, retiredSources: LEDGER_RETIRE_FROM_SOURCES });
  });
});
