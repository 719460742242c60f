// Goal: the completeness ledger's counts per day and source are exact — received once per
// eventId, pruned and tiered as retention and the tiering watermark move, taken back when a cut
// suffix leaves the log — the same on a leader and a standby, across a reopen, and built once
// (never twice) for a store written before they existed. Each case is checked against a count
// made from the events themselves.
import type { AuditEvent } from '@auditlake/model';
import { Level } from 'level';
import { describe, expect, it } from 'vitest';
import { DayLedger, dayOf, type DayLedgerRow } from '../src/day-ledger.js';
import { localKey } from '../src/event-keys.js';
import { useTempStores } from './temp-stores.js';

const DAY_MS = 86_400_000;
const DAY0 = Date.UTC(2026, 10, 1);

const stores = useTempStores('auditlake-days-');
const openStore = stores.open;

const closeStore = stores.close;

/** Event i: day i % 3, source by i % 2, a sourceId on every fourth (two of them). */
function ev(i: number): AuditEvent {
  return {
    eventId: `e${i}`,
    userId: 'u',
    source: i % 2 === 0 ? 'trino' : 'spark',
    action: 'data:Select',
    resource: '',
    decision: 'ALLOW',
    tables: [],
    query: i % 5 === 0 ? ',"source":"fake","sourceId":"fake"' : '',
    details: '',
    timestamp: DAY0 + (i % 3) * DAY_MS + i,
    ...(i % 4 === 0 ? { sourceId: `plug "ä" ${i % 8}` } : {}),
  };
}

/** The rows a count over the events gives: which are received, pruned and tiered. */
function expectedRows(events: readonly AuditEvent[], pruned: (e: AuditEvent) => boolean, tiered: (e: AuditEvent) => boolean): DayLedgerRow[] {
  const rows = new Map<string, DayLedgerRow>();
  for (const e of events) {
    const day = dayOf(e.timestamp);
    const key = `${day}!${JSON.stringify([e.sourceId ?? null, e.source])}`;
    const row = rows.get(key) ?? { day, sourceId: e.sourceId ?? null, source: e.source, received: 0, stored: 0, tiered: 0, pruned: 0 };
    row.received++;
    if (pruned(e)) row.pruned++;
    else row.stored++;
    if (tiered(e)) row.tiered++;
    rows.set(key, row);
  }
  return [...rows.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([, row]) => row);
}

describe('the day counts', () => {
  it('count each eventId once per day and source, from the fields and not from look-alike text, on a leader and a standby', async () => {
    const { store: leader } = await openStore();
    const events = Array.from({ length: 60 }, (_, i) => ev(i));
    await leader.append(events.slice(0, 40));
    // A retry of stored events and the rest: the retried ones are not received again.
    await leader.append(events.slice(30));
    const rows = expectedRows(events, () => false, () => false);
    expect(rows.length).toBeGreaterThan(6);
    expect(leader.dayLedger()).toEqual(rows);
    expect(leader.dayLedger({ fromDay: dayOf(DAY0 + DAY_MS), toDay: dayOf(DAY0 + DAY_MS) })).toEqual(rows.filter((r) => r.day === dayOf(DAY0 + DAY_MS)));
    expect(leader.dayLedger({ sourceId: 'plug "ä" 4' })).toEqual(rows.filter((r) => r.sourceId === 'plug "ä" 4'));

    const { store: standby } = await openStore();
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 100));
    expect(standby.dayLedger()).toEqual(rows);
  });

  it('follow the watermark and retention: tiered before pruned, stored = received − pruned, the same after a reopen', async () => {
    let now = DAY0 + 10 * DAY_MS;
    const { store, location } = await openStore(undefined, () => now);
    const events = Array.from({ length: 90 }, (_, i) => ev(i));
    await store.append(events);
    const seqOf = new Map((await store.readBySeq(0, 1000)).map((e) => [e.eventId, e.seq]));
    const through = (seq: number) => (e: AuditEvent) => (seqOf.get(e.eventId) as number) <= seq;

    await store.countTieredThrough(25);
    expect(store.dayLedger()).toEqual(expectedRows(events, () => false, through(25)));
    // Counting again, or through a lower seq, changes nothing.
    await store.countTieredThrough(25);
    await store.countTieredThrough(10);
    expect(store.dayLedger()).toEqual(expectedRows(events, () => false, through(25)));

    // Retention deletes the tiered events of the first day only.
    now = DAY0 + 20 * DAY_MS;
    await store.countTieredThrough(60);
    await store.pruneBefore(DAY0 + DAY_MS, 7, async () => true, 60);
    const prunedOnes = (e: AuditEvent) => e.timestamp < DAY0 + DAY_MS && through(60)(e);
    const afterPrune = expectedRows(events, prunedOnes, through(60));
    expect(afterPrune.some((row) => row.pruned > 0)).toBe(true);
    expect(store.dayLedger()).toEqual(afterPrune);
    // Tiering off: retention deletes untiered events too; they are never counted as tiered.
    await store.pruneBefore(DAY0 + DAY_MS, 7, async () => true);
    const allFirstDay = (e: AuditEvent) => e.timestamp < DAY0 + DAY_MS;
    await store.countTieredThrough(90);
    const final = expectedRows(events, allFirstDay, (e) => through(90)(e) && !(allFirstDay(e) && !through(60)(e)));
    expect(store.dayLedger()).toEqual(final);

    await closeStore(store);
    const { store: reopened } = await openStore(location);
    expect(reopened.dayLedger()).toEqual(final);
  });

  it('count on a lagging standby only what it holds, and the rest once it arrives', async () => {
    const { store: leader } = await openStore();
    const events = Array.from({ length: 40 }, (_, i) => ev(i));
    await leader.append(events);
    const entries = await leader.readEncodedBySeq(0, 100);
    const { store: standby } = await openStore();
    await standby.applyReplicated(entries.slice(0, 15));
    // The watermark it knows is past its log's end.
    await standby.countTieredThrough(30);
    const seqOf = new Map((await leader.readBySeq(0, 1000)).map((e) => [e.eventId, e.seq]));
    const upTo = (seq: number) => (e: AuditEvent) => (seqOf.get(e.eventId) as number) <= seq;
    expect(standby.dayLedger()).toEqual(expectedRows(events.filter(upTo(15)), () => false, () => true));
    await standby.applyReplicated(entries.slice(15));
    await standby.countTieredThrough(30);
    expect(standby.dayLedger()).toEqual(expectedRows(events, () => false, upTo(30)));
  });

  it('take back what a cut suffix held: it is received again when it is ordered again', async () => {
    const { store } = await openStore();
    const events = Array.from({ length: 30 }, (_, i) => ev(i));
    await store.append(events);
    await store.countTieredThrough(25);
    const seqOf = new Map((await store.readBySeq(0, 1000)).map((e) => [e.eventId, e.seq]));
    const upTo = (seq: number) => (e: AuditEvent) => (seqOf.get(e.eventId) as number) <= seq;
    const diverted = await store.divertSuffixToOutbox(21);
    expect(diverted.moved).toBe(10);
    expect(store.dayLedger()).toEqual(expectedRows(events.filter(upTo(20)), () => false, () => true));
    // Ordered again (as a new leader would): received once more, tiered once the watermark says so.
    const outbox = await store.readOutbox(100);
    await store.append(outbox.map((entry) => JSON.parse(entry.json) as AuditEvent));
    await store.countTieredThrough(25);
    const again = new Map((await store.readBySeq(0, 1000)).map((e) => [e.eventId, e.seq]));
    expect(store.dayLedger()).toEqual(expectedRows(events, () => false, (e) => (again.get(e.eventId) as number) <= 25));
  });
});

describe('a store written before the day counts', () => {
  it('gets them counted from its log once, however often it is opened', async () => {
    const { store, location } = await openStore();
    const events = Array.from({ length: 50 }, (_, i) => ev(i));
    await store.append(events);
    const built = store.dayLedger();
    expect(built).toEqual(expectedRows(events, () => false, () => false));
    await closeStore(store);
    // As the previous version left it: its ranges complete (version 1), no day counts.
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    const batch = db.batch();
    for (const key of await db.keys({ gte: 'y!', lt: 'y"' }).all()) batch.del(key);
    batch.put(localKey('ledgerVersion'), '1');
    await batch.write({ sync: true });
    await db.close();

    const { store: reopened } = await openStore(location);
    expect(reopened.dayLedger()).toEqual(built);
    await closeStore(reopened);
    const { store: again } = await openStore(location);
    expect(again.dayLedger()).toEqual(built);
  });

  it('loads stored rows as written', () => {
    const ledger = new DayLedger([[`y!2026-11-02!${JSON.stringify(['a!b', 'trino'])}`, '[5,2,3]']]);
    expect(ledger.rows()).toEqual([{ day: '2026-11-02', sourceId: 'a!b', source: 'trino', received: 5, stored: 3, tiered: 3, pruned: 2 }]);
  });
});
