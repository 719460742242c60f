// Goal: sources that stopped sending give their places in the completeness ledger up, so the
// sources that come after the first LEDGER_SOURCES_MAX are tracked too — but only idle ones
// (no event over more than LEDGER_SOURCE_IDLE_DAYS days of events: a clock jumping a year
// ahead is one day), only when the ledger is nearly full (LEDGER_RETIRE_FROM_SOURCES), with
// their holes still counted, and by the log alone: a standby that applies the same log in
// other batches, and a store reopened midway, retire the same sources at the same event. A
// store written before days were kept gives its sources the idle period from the first day it
// sees, not from the start of time.
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

/** One event of `sourceId` on each day from `first` to `last` (sourceSeq: the day), the clock set to each. */
async function eventDays(store: AuditStore, clock: { now: number }, sourceId: string, first: number, last: number): Promise<void> {
  for (let day = first; day <= last; day++) {
    clock.now = START + day * DAY;
    await store.append([ev(`${sourceId}-${day}`, sourceId, day)]);
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
  it(`are retired at the first event of a day when their last came more than ${LEDGER_SOURCE_IDLE_DAYS} days of events before, when the ledger is nearly full; a standby and a reopened store retire the same`, async () => {
    const clock = { now: START };
    const { store: leader, location } = await openAt(clock);
    // Day 0: a source with two holes, and the crowd that fills the ledger to the threshold.
    await leader.append([1, 3, 6].map((s) => ev(`gappy-${s}`, 'gappy', s)));
    await crowd(leader, LEDGER_RETIRE_FROM_SOURCES);
    // A source that keeps sending, every day for 40 days.
    await eventDays(leader, clock, 'steady', 1, 40);
    // The first event of day 31 retired the crowd and `gappy`, last seen on day 0. Its holes
    // still count, as retired.
    const summary = leader.sourceLedgerSummary();
    expect(summary).toMatchObject({ sources: 1, retiredSources: LEDGER_RETIRE_FROM_SOURCES + 1, retiredMissing: 3, missing: 0 });
    expect(leader.sourceLedger('gappy')).toEqual([]);
    expect(leader.sourceLedger('steady')[0]).toMatchObject({ received: 40, firstSourceSeq: 1, highestSourceSeq: 40, missing: 0 });
    // A retired source that sends again starts anew.
    await leader.append([ev('gappy-9', 'gappy', 9)]);
    expect(leader.sourceLedger('gappy')[0]).toMatchObject({ received: 1, firstSourceSeq: 9, missing: 0 });
    const entries = leader.sourceLedger();
    const after = leader.sourceLedgerSummary();

    // The same log, applied in pulls of other sizes (997 cuts through the crowd).
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

  it(`are kept over ${LEDGER_SOURCE_IDLE_DAYS} days of events after their last, whatever the calendar says, and whenever the ledger is below the threshold`, async () => {
    const clock = { now: START };
    const { store: full } = await openAt(clock);
    await crowd(full, LEDGER_RETIRE_FROM_SOURCES);
    // The clock a year ahead: ingest time follows it, but it is one day of events.
    clock.now = START + 365 * DAY;
    await full.append([ev('late-0', 'late', 0)]);
    expect(full.sourceLedgerSummary()).toMatchObject({ sources: LEDGER_RETIRE_FROM_SOURCES + 1, retiredSources: 0 });
    // 29 more days of events: the crowd has been idle over 30 of them, not more.
    for (let day = 1; day < LEDGER_SOURCE_IDLE_DAYS; day++) {
      clock.now = START + (365 + day) * DAY;
      await full.append([ev(`late-${day}`, 'late', day)]);
    }
    expect(full.sourceLedgerSummary()).toMatchObject({ retiredSources: 0 });
    // A later event of the same day changes nothing either: only a day's first event looks.
    await full.append([ev('late-again', 'late', 100)]);
    expect(full.sourceLedgerSummary()).toMatchObject({ retiredSources: 0 });
    // The next day of events: the crowd goes, `late` stays.
    clock.now += DAY;
    await full.append([ev('late-next', 'late', 101)]);
    expect(full.sourceLedgerSummary()).toMatchObject({ sources: 1, retiredSources: LEDGER_RETIRE_FROM_SOURCES });

    // Below the threshold, 40 days of events retire nothing.
    const belowClock = { now: START };
    const { store: below } = await openAt(belowClock);
    await crowd(below, LEDGER_RETIRE_FROM_SOURCES - 2);
    await eventDays(below, belowClock, 'next', 1, 40);
    expect(below.sourceLedgerSummary()).toMatchObject({ sources: LEDGER_RETIRE_FROM_SOURCES - 1, retiredSources: 0 });
  });

  it(`make room for sources past ${LEDGER_SOURCES_MAX} that were counted together before`, async () => {
    const clock = { now: START };
    const { store } = await openAt(clock);
    await crowd(store, LEDGER_SOURCES_MAX);
    await store.append([ev('newcomer-1', 'newcomer', 1)]);
    expect(store.sourceLedgerSummary()).toMatchObject({ sources: LEDGER_SOURCES_MAX, otherSourceEvents: 1 });
    expect(store.sourceLedger('newcomer')).toEqual([]);
    // Days of events from an untracked source count all the same.
    await eventDays(store, clock, 'ticker', 1, LEDGER_SOURCE_IDLE_DAYS);
    expect(store.sourceLedgerSummary()).toMatchObject({ sources: LEDGER_SOURCES_MAX, otherSourceEvents: 1 + LEDGER_SOURCE_IDLE_DAYS, retiredSources: 0 });
    // The next day's first event retires the crowd before its own source is looked up.
    clock.now += DAY;
    await store.append([ev('newcomer-2', 'newcomer', 2), ev('newcomer-4', 'newcomer', 4)]);
    expect(store.sourceLedger('newcomer')[0]).toMatchObject({ received: 2, firstSourceSeq: 2, missing: 1 });
    expect(store.sourceLedgerSummary()).toMatchObject({ sources: 1, retiredSources: LEDGER_SOURCES_MAX, otherSourceEvents: 1 + LEDGER_SOURCE_IDLE_DAYS });
  });
});

describe('a store whose sources have no day (written before days were kept)', () => {
  it('dates them by the first day of events it sees, so they are retired only after the idle period from then', async () => {
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

    // Opened 100 days later; its first day dates the crowd, which then has 30 days of events.
    const { store: upgraded } = await openAt(clock, location);
    await eventDays(upgraded, clock, 'first', 100, 100 + LEDGER_SOURCE_IDLE_DAYS);
    expect(upgraded.sourceLedgerSummary()).toMatchObject({ sources: LEDGER_RETIRE_FROM_SOURCES + 1, retiredSources: 0 });
    await eventDays(upgraded, clock, 'first', 101 + LEDGER_SOURCE_IDLE_DAYS, 101 + LEDGER_SOURCE_IDLE_DAYS);
    expect(upgraded.sourceLedgerSummary()).toMatchObject({ sources: 1, retiredSources: LEDGER_RETIRE_FROM_SOURCES });
  });
});
