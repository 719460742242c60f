// Goal: the completeness ledger's counts per day and source are exact — received once per
// eventId, pruned and tiered as retention and the tiering watermark move, taken back when a cut
// suffix leaves the log — the same on a leader and a standby, across a reopen, and built once
// (never twice) for a store written before they existed. Each case is checked against a count
// made from the events themselves. Bounded: past DAY_LEDGER_SOURCES_MAX sources in a day the
// rest count together in the day's overflow row, the totals still exact; and memory holds a
// bounded number of rows however many days the events' times name, the rest read from LevelDB.
import type { AuditEvent } from '@auditlake/model';
import { Level } from 'level';
import { describe, expect, it } from 'vitest';
import { DAY_LEDGER_CACHED_ROWS, DAY_LEDGER_SOURCES_MAX, DayLedger, OTHER_SOURCES, dayOf, type DayLedgerRow } from '../src/day-ledger.js';
import { localKey } from '../src/event-keys.js';
import { useTempStores } from './temp-stores.js';
import type { AuditStore } from '../src/audit-store.js';

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
    expect(await leader.dayLedger()).toEqual(rows);
    expect(await leader.dayLedger({ fromDay: dayOf(DAY0 + DAY_MS), toDay: dayOf(DAY0 + DAY_MS) })).toEqual(rows.filter((r) => r.day === dayOf(DAY0 + DAY_MS)));
    expect(await leader.dayLedger({ sourceId: 'plug "ä" 4' })).toEqual(rows.filter((r) => r.sourceId === 'plug "ä" 4'));

    const { store: standby } = await openStore();
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 100));
    expect(await standby.dayLedger()).toEqual(rows);
  });

  it('follow the watermark and retention: tiered before pruned, stored = received − pruned, the same after a reopen', async () => {
    let now = DAY0 + 10 * DAY_MS;
    const { store, location } = await openStore(undefined, () => now);
    const events = Array.from({ length: 90 }, (_, i) => ev(i));
    await store.append(events);
    const seqOf = new Map((await store.readBySeq(0, 1000)).map((e) => [e.eventId, e.seq]));
    const through = (seq: number) => (e: AuditEvent) => (seqOf.get(e.eventId) as number) <= seq;

    await store.countTieredThrough(25);
    expect(await store.dayLedger()).toEqual(expectedRows(events, () => false, through(25)));
    // Counting again, or through a lower seq, changes nothing.
    await store.countTieredThrough(25);
    await store.countTieredThrough(10);
    expect(await store.dayLedger()).toEqual(expectedRows(events, () => false, through(25)));

    // Retention deletes the tiered events of the first day only.
    now = DAY0 + 20 * DAY_MS;
    await store.countTieredThrough(60);
    await store.pruneBefore(DAY0 + DAY_MS, 7, async () => true, 60);
    const prunedOnes = (e: AuditEvent) => e.timestamp < DAY0 + DAY_MS && through(60)(e);
    const afterPrune = expectedRows(events, prunedOnes, through(60));
    expect(afterPrune.some((row) => row.pruned > 0)).toBe(true);
    expect(await store.dayLedger()).toEqual(afterPrune);
    // Tiering off: retention deletes untiered events too; they are never counted as tiered.
    await store.pruneBefore(DAY0 + DAY_MS, 7, async () => true);
    const allFirstDay = (e: AuditEvent) => e.timestamp < DAY0 + DAY_MS;
    await store.countTieredThrough(90);
    const final = expectedRows(events, allFirstDay, (e) => through(90)(e) && !(allFirstDay(e) && !through(60)(e)));
    expect(await store.dayLedger()).toEqual(final);

    await closeStore(store);
    const { store: reopened } = await openStore(location);
    expect(await reopened.dayLedger()).toEqual(final);
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
    expect(await standby.dayLedger()).toEqual(expectedRows(events.filter(upTo(15)), () => false, () => true));
    await standby.applyReplicated(entries.slice(15));
    await standby.countTieredThrough(30);
    expect(await standby.dayLedger()).toEqual(expectedRows(events, () => false, upTo(30)));
  });

  it('count a batch the sweep committed from its events, as reading it back would; a batch the log no longer holds is left to the read', async () => {
    const { store } = await openStore();
    const events = Array.from({ length: 40 }, (_, i) => ev(i));
    await store.append(events);
    const seqOf = new Map((await store.readBySeq(0, 1000)).map((e) => [e.eventId, e.seq]));
    const upTo = (seq: number) => (e: AuditEvent) => (seqOf.get(e.eventId) as number) <= seq;
    await store.countTieredBatch(await store.readBySeq(0, 25));
    expect(await store.dayLedger()).toEqual(expectedRows(events, () => false, upTo(25)));
    // Again, or an earlier batch: nothing more.
    await store.countTieredBatch(await store.readBySeq(0, 25));
    await store.countTieredBatch(await store.readBySeq(5, 10));
    expect(await store.dayLedger()).toEqual(expectedRows(events, () => false, upTo(25)));
    // A batch after a gap: the gap is read from the log, the batch counted.
    await store.countTieredBatch(await store.readBySeq(30, 5));
    expect(await store.dayLedger()).toEqual(expectedRows(events, () => false, upTo(35)));

    // The sweep read seqs 36..40, then the log was cut there and other events ordered under them.
    const stale = await store.readBySeq(35, 5);
    expect((await store.divertSuffixToOutbox(36)).moved).toBe(5);
    await store.countTieredBatch(stale);
    const kept = events.filter(upTo(35));
    expect(await store.dayLedger()).toEqual(expectedRows(kept, () => false, () => true));
    const others = Array.from({ length: 5 }, (_, i) => ev(100 + i));
    await store.append(others);
    await store.countTieredBatch(stale);
    expect(await store.dayLedger()).toEqual(expectedRows([...kept, ...others], () => false, (e) => kept.includes(e)));
    // The log's own entries are counted when the watermark passes them.
    await store.countTieredThrough(40);
    expect(await store.dayLedger()).toEqual(expectedRows([...kept, ...others], () => false, () => true));
  });

  it('a batch read before a cut is left to the read also when its last seq holds the same event again in the same term, and the entries before it are not counted for it', async () => {
    for (const chain of [true, false]) {
      // A clock that moves on at each reading, as time does between a cut and the next append.
      let clock = DAY0 + 10 * DAY_MS;
      const { store } = await openStore(undefined, () => clock++, { chain });
      const events = Array.from({ length: 40 }, (_, i) => ev(i));
      await store.append(events);
      await store.countTieredThrough(35);
      const stale = await store.readBySeq(35, 5);
      expect(stale.map((e) => e.eventId)).toEqual(['e35', 'e36', 'e37', 'e38', 'e39']);
      expect((await store.divertSuffixToOutbox(36)).moved).toBe(5);
      // Other events under seqs 36..39 in the same term (one term can be handed out twice; a
      // single node's is always the same), then e39 re-sent, landing at seq 40 again.
      const others = [100, 101, 102, 103].map((i) => ({ ...ev(i), source: 'other' }));
      await store.append(others);
      await store.append([ev(39)]);
      expect((await store.readBySeq(39, 1)).map((e) => [e.seq, e.eventId, e.term])).toEqual([[40, 'e39', stale[4]!.term]]);
      await store.countTieredBatch(stale);
      const kept = events.slice(0, 35);
      const held = [...kept, ...others, ev(39)];
      expect(await store.dayLedger(), `chain ${chain}`).toEqual(expectedRows(held, () => false, (e) => kept.includes(e)));
      await store.countTieredThrough(40);
      expect(await store.dayLedger(), `chain ${chain}`).toEqual(expectedRows(held, () => false, () => true));
    }

    // Counted through 20, a batch read at 31..35, then a cut at 16 and 30 other events ordered
    // under 16..45: the stale batch counts nothing, not even "the entries before it".
    const { store } = await openStore();
    const events = Array.from({ length: 40 }, (_, i) => ev(i));
    await store.append(events);
    await store.countTieredThrough(20);
    const stale = await store.readBySeq(30, 5);
    await store.divertSuffixToOutbox(16);
    const others = Array.from({ length: 30 }, (_, i) => ({ ...ev(300 + i), source: 'other' }));
    await store.append(others);
    await store.countTieredBatch(stale);
    const kept = events.slice(0, 15);
    expect(await store.dayLedger()).toEqual(expectedRows([...kept, ...others], () => false, (e) => kept.includes(e)));
  });

  it('a cut landing between a batch\'s check that the log still holds it and the count of the entries before it counts none of the entries the cut put there', async () => {
    // Counted through 20, a batch read at 31..35; its count is asked for, and before its turns
    // run, a cut at 16 and 30 other events ordered under 16..45 queue behind its first turn.
    const { store } = await openStore();
    const events = Array.from({ length: 40 }, (_, i) => ev(i));
    await store.append(events);
    await store.countTieredThrough(20);
    const stale = await store.readBySeq(30, 5);
    const others = Array.from({ length: 30 }, (_, i) => ({ ...ev(300 + i), source: 'other' }));
    const counting = store.countTieredBatch(stale);
    const cut = store.divertSuffixToOutbox(16);
    const appended = store.append(others);
    await Promise.all([counting, cut, appended]);
    const kept = events.slice(0, 15);
    expect(await store.dayLedger()).toEqual(expectedRows([...kept, ...others], () => false, (e) => kept.includes(e)));
  });

  it('a batch some of whose events were pruned since the sweep read them (tiering switched off meanwhile) is left to the read', async () => {
    const { store } = await openStore(undefined, () => DAY0 + 100 * DAY_MS);
    const events = Array.from({ length: 10 }, (_, i) => ({ ...ev(i), timestamp: DAY0 + i + (i === 9 ? 50 * DAY_MS : 0) }));
    await store.append(events);
    const batch = await store.readBySeq(0, 10);
    // Retention with tiering off deletes by age alone (no watermark bound).
    expect((await store.pruneBefore(DAY0 + 10 * DAY_MS, 100, async () => true)).deleted).toBe(9);
    await store.countTieredBatch(batch);
    // Pruned, never tiered: as the read (and a standby) count them.
    expect(await store.dayLedger()).toEqual(expectedRows(events, (e) => e !== events[9], () => false));
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
    expect(await store.dayLedger()).toEqual(expectedRows(events.filter(upTo(20)), () => false, () => true));
    // Ordered again (as a new leader would): received once more, tiered once the watermark says so.
    const outbox = await store.readOutbox(100);
    await store.append(outbox.map((entry) => JSON.parse(entry.json) as AuditEvent));
    await store.countTieredThrough(25);
    const again = new Map((await store.readBySeq(0, 1000)).map((e) => [e.eventId, e.seq]));
    expect(await store.dayLedger()).toEqual(expectedRows(events, () => false, (e) => (again.get(e.eventId) as number) <= 25));
  });
});

describe('a store written before the day counts', () => {
  it('gets them counted from its log once, however often it is opened', async () => {
    const { store, location } = await openStore();
    const events = Array.from({ length: 50 }, (_, i) => ev(i));
    await store.append(events);
    const built = await store.dayLedger();
    expect(built).toEqual(expectedRows(events, () => false, () => false));
    await closeStore(store);
    // As the previous version left it: its ranges complete (version 1), no day counts.
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    const batch = db.batch();
    for (const key of await db.keys({ gte: 'y!', lt: 'y"' }).all()) batch.del(key);
    for (const key of await db.keys({ gte: localKey('dayRows!'), lt: localKey('dayRows"') }).all()) batch.del(key);
    batch.put(localKey('ledgerVersion'), '1');
    await batch.write({ sync: true });
    await db.close();

    const { store: reopened } = await openStore(location);
    expect(await reopened.dayLedger()).toEqual(built);
    await closeStore(reopened);
    const { store: again } = await openStore(location);
    expect(await again.dayLedger()).toEqual(built);
  });

  it('reads stored rows as written', async () => {
    const { store, location } = await openStore();
    await closeStore(store);
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    try {
      await db.put(`y!2026-11-02!${JSON.stringify(['a!b', 'trino'])}`, '[5,2,3]');
      const ledger = new DayLedger(db);
      expect(await ledger.rows()).toEqual([{ day: '2026-11-02', sourceId: 'a!b', source: 'trino', received: 5, stored: 3, tiered: 3, pruned: 2 }]);
    } finally {
      await db.close();
    }
  });
});

describe('the day counts are bounded', () => {
  /** Sums of the rows of one day. */
  const totals = (rows: readonly DayLedgerRow[], day: string) =>
    rows.filter((row) => row.day === day).reduce((sum, row) => ({ received: sum.received + row.received, pruned: sum.pruned + row.pruned, tiered: sum.tiered + row.tiered }), { received: 0, pruned: 0, tiered: 0 });

  it(`keep ${DAY_LEDGER_SOURCES_MAX} sources' rows per day and count further ones in the day's overflow row, exactly, on a leader and a standby, across a reopen`, async () => {
    let now = DAY0 + 10 * DAY_MS;
    const { store: leader, location } = await openStore(undefined, () => now);
    const day = dayOf(DAY0);
    // One new source (name) per event on the first day, 25 past the bound; then the first
    // source again (it keeps its row) and the same flood on the next day (a bound per day).
    const flood = (dayMs: number, prefix: string) =>
      Array.from({ length: DAY_LEDGER_SOURCES_MAX + 25 }, (_, i) => ({ ...ev(0), eventId: `${prefix}${i}`, source: `src-${String(i).padStart(6, '0')}`, query: '', timestamp: dayMs + i }));
    const first = flood(DAY0, 'a');
    await leader.append(first.slice(0, 7_000));
    await leader.append(first.slice(7_000));
    await leader.append([{ ...ev(0), eventId: 'again', source: 'src-000000', query: '', timestamp: DAY0 + 5 }]);
    const second = flood(DAY0 + DAY_MS, 'b').slice(0, 20);
    await leader.append(second);

    const rows = await leader.dayLedger();
    const firstDay = rows.filter((row) => row.day === day);
    expect(firstDay).toHaveLength(DAY_LEDGER_SOURCES_MAX + 1);
    expect(firstDay.filter((row) => row.source === null)).toEqual([{ day, sourceId: OTHER_SOURCES, source: null, received: 25, stored: 25, tiered: 0, pruned: 0 }]);
    expect(firstDay.find((row) => row.source === 'src-000000')).toMatchObject({ received: 2 });
    expect(totals(rows, day)).toEqual({ received: DAY_LEDGER_SOURCES_MAX + 26, pruned: 0, tiered: 0 });
    expect(rows.filter((row) => row.day === dayOf(DAY0 + DAY_MS))).toEqual(expectedRows(second, () => false, () => false));
    expect(await leader.dayLedger({ sourceId: OTHER_SOURCES })).toEqual(firstDay.filter((row) => row.source === null));

    const { store: standby } = await openStore();
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 20_000));
    expect(await standby.dayLedger()).toEqual(rows);

    // Tiered, then retention deletes the first day: the overflow row follows like any other.
    await leader.countTieredThrough(leader.position.lastSeq);
    now = DAY0 + 40 * DAY_MS;
    await leader.pruneBefore(DAY0 + DAY_MS, 5_000, async () => true);
    const pruned = await leader.dayLedger();
    expect(pruned.filter((row) => row.source === null)).toEqual([{ day, sourceId: OTHER_SOURCES, source: null, received: 25, stored: 0, tiered: 25, pruned: 25 }]);
    expect(totals(pruned, day)).toEqual({ received: DAY_LEDGER_SOURCES_MAX + 26, pruned: DAY_LEDGER_SOURCES_MAX + 26, tiered: DAY_LEDGER_SOURCES_MAX + 26 });

    await closeStore(leader);
    const { store: reopened } = await openStore(location, () => now);
    expect(await reopened.dayLedger()).toEqual(pruned);
    // After a reopen (nothing in memory) a new source of the full day still goes to its overflow row.
    await reopened.append([{ ...ev(0), eventId: 'after', source: 'one-more', query: '', timestamp: DAY0 + 7 }]);
    expect((await reopened.dayLedger({ fromDay: day, toDay: day })).filter((row) => row.source === null)).toEqual([{ day, sourceId: OTHER_SOURCES, source: null, received: 26, stored: 1, tiered: 25, pruned: 25 }]);
  });

  it("keep each day's number of rows beside its rows: after a reopen a day's count is read, not counted from its rows; a day without one is counted once and its count kept", async () => {
    const { store, location } = await openStore();
    const day0 = dayOf(DAY0);
    const day1 = dayOf(DAY0 + DAY_MS);
    const onDay = (dayMs: number, source: string, id: string): AuditEvent => ({ ...ev(1), eventId: id, source, query: '', timestamp: dayMs });
    await store.append([onDay(DAY0, 'a', 'x1'), onDay(DAY0, 'b', 'x2'), onDay(DAY0 + DAY_MS, 'a', 'y1')]);
    await closeStore(store);
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    expect(await db.get(localKey(`dayRows!${day0}`))).toBe('2');
    // The count is what is read: said full, the day's next new source goes to its overflow row
    // (counted from its rows, two, it would get a row of its own).
    await db.put(localKey(`dayRows!${day0}`), String(DAY_LEDGER_SOURCES_MAX));
    // A day whose rows an earlier version wrote has no count: counted from its rows when it gets one.
    await db.del(localKey(`dayRows!${day1}`));
    await db.close();
    const { store: reopened } = await openStore(location);
    await reopened.append([onDay(DAY0, 'c', 'x3'), onDay(DAY0 + DAY_MS, 'b', 'y2')]);
    const rows = await reopened.dayLedger();
    expect(rows.filter((row) => row.day === day0).map((row) => [row.sourceId, row.source, row.received])).toEqual(
      expect.arrayContaining([
        [OTHER_SOURCES, null, 1],
        [null, 'a', 1],
        [null, 'b', 1],
      ]),
    );
    expect(rows.filter((row) => row.day === day1).map((row) => row.source).sort()).toEqual(['a', 'b']);
    await closeStore(reopened);
    const after = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await after.open();
    expect(await after.get(localKey(`dayRows!${day1}`))).toBe('2');
    await after.close();
  });

  it('hold a bounded number of rows in memory however many days the events name, and read the others from LevelDB', async () => {
    const { store, location } = await openStore();
    await closeStore(store);
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    try {
      const ledger = new DayLedger(db);
      const write = async (count: (change: ReturnType<DayLedger['begin']>) => void) => {
        const change = ledger.begin();
        count(change);
        await change.prepare();
        const batch = db.batch();
        change.putChanged(batch);
        await batch.write();
        change.commit();
      };
      // One event a day for 25,000 days (68 years), in batches as an append would.
      const days = DAY_LEDGER_CACHED_ROWS + 5_000;
      for (let from = 0; from < days; from += 5_000) {
        await write((change) => {
          for (let i = from; i < from + 5_000; i++) change.count({ timestamp: i * DAY_MS, source: 'trino' }, 'received');
        });
      }
      expect(ledger.cachedRows).toBeLessThanOrEqual(DAY_LEDGER_CACHED_ROWS);
      // The first days' rows left memory: counting them again adds to what LevelDB holds.
      await write((change) => {
        change.count({ timestamp: 0, source: 'trino' }, 'received');
        change.count({ timestamp: 0, source: 'trino' }, 'pruned');
      });
      const rows = await ledger.rows();
      expect(rows).toHaveLength(days);
      expect(rows[0]).toEqual({ day: dayOf(0), sourceId: null, source: 'trino', received: 2, stored: 1, tiered: 0, pruned: 1 });
      expect(rows.slice(1).every((row) => row.received === 1 && row.pruned === 0)).toBe(true);
      expect(ledger.cachedRows).toBeLessThanOrEqual(DAY_LEDGER_CACHED_ROWS);
    } finally {
      await db.close();
    }
  });
});

describe('pages of day rows', () => {
  it('walk every row once, in the order of the whole answer, within a window of days and for one sourceId', async () => {
    const { store } = await openStore();
    // 40 days, 3 sources a day, one of them without a sourceId.
    const events: AuditEvent[] = [];
    for (let d = 0; d < 40; d++) {
      const day = { ...ev(1), query: '', timestamp: DAY0 + d * DAY_MS };
      events.push({ ...day, eventId: `p${d}a`, source: 'trino', sourceId: 'a' }, { ...day, eventId: `p${d}b`, source: 'spark', sourceId: 'b' }, { ...day, eventId: `p${d}`, source: 'trino' });
    }
    await store.append(events);
    const walk = async (filter: Parameters<AuditStore['dayLedger']>[0], limit: number) => {
      const rows: DayLedgerRow[] = [];
      let after: string | undefined;
      for (let pages = 0; pages < 1_000; pages++) {
        const page = await store.dayLedgerPage(filter ?? {}, { ...(after === undefined ? {} : { after }), limit });
        expect(page.rows.length).toBeLessThanOrEqual(limit);
        rows.push(...page.rows);
        if (page.next === null) return rows;
        after = page.next;
      }
      throw new Error('the pages did not end');
    };
    const whole = await store.dayLedger();
    expect(whole).toHaveLength(120);
    expect(await walk({}, 7)).toEqual(whole);
    expect(await walk({}, 120)).toEqual(whole);
    const window = { fromDay: dayOf(DAY0 + 10 * DAY_MS), toDay: dayOf(DAY0 + 19 * DAY_MS) };
    expect(await walk(window, 4)).toEqual(await store.dayLedger(window));
    expect(await walk({ ...window, sourceId: 'b' }, 3)).toEqual(await store.dayLedger({ ...window, sourceId: 'b' }));
    expect(await walk({ ...window, sourceId: 'b' }, 3)).toHaveLength(10);
  });

  it('for one sourceId answer exactly its rows: before, among and after other sources of each day, sourceIds that begin another\'s, several engines, paged', async () => {
    const { store } = await openStore();
    // Every day: sources sorting around the one asked for ('m'), one that begins with it, one with quotes.
    const others = ['a', 'l"x', 'm2', 'mm', 'z', 'm"'];
    const events: AuditEvent[] = [];
    for (let d = 0; d < 12; d++) {
      const day = { ...ev(1), query: '', timestamp: DAY0 + d * DAY_MS };
      for (const sourceId of others) events.push({ ...day, eventId: `o${d}${sourceId}`, source: 'trino', sourceId });
      // 'm' on most days, from two engines on some.
      if (d % 4 !== 3) events.push({ ...day, eventId: `m${d}`, source: 'trino', sourceId: 'm' });
      if (d % 3 === 0) events.push({ ...day, eventId: `m${d}s`, source: 'spark', sourceId: 'm' });
    }
    await store.append(events);
    const all = await store.dayLedger();
    for (const sourceId of ['m', 'm2', 'l"x', 'z', 'a', 'none']) {
      const expected = all.filter((row) => row.sourceId === sourceId);
      expect(await store.dayLedger({ sourceId }), sourceId).toEqual(expected);
      const paged: DayLedgerRow[] = [];
      let after: string | undefined;
      do {
        const page = await store.dayLedgerPage({ sourceId }, { ...(after === undefined ? {} : { after }), limit: 2 });
        paged.push(...page.rows);
        after = page.next ?? undefined;
      } while (after !== undefined);
      expect(paged, sourceId).toEqual(expected);
    }
    expect(all.filter((row) => row.sourceId === 'm')).toHaveLength(9 + 4);
  });

  it('for one sourceId read its rows and a few keys a day, not every source of every day', async () => {
    const { store, location } = await openStore();
    const events: AuditEvent[] = [];
    for (let d = 0; d < 10; d++) {
      const day = { ...ev(1), query: '', timestamp: DAY0 + d * DAY_MS };
      for (let k = 0; k < 50; k++) events.push({ ...day, eventId: `o${d}-${k}`, source: 'trino', sourceId: `s${String(k).padStart(2, '0')}` });
    }
    await store.append(events);
    await closeStore(store);
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    try {
      let read = 0;
      const counted = new Proxy(db, {
        get(target, name) {
          if (name !== 'iterator') return Reflect.get(target, name, target) as unknown;
          return (options: Parameters<typeof db.iterator>[0]) => {
            const iterator = target.iterator(options);
            const next = iterator.next.bind(iterator);
            iterator.next = async () => {
              const entry = await next();
              if (entry !== undefined) read++;
              return entry;
            };
            return iterator;
          };
        },
      });
      const rows = await new DayLedger(counted).rows({ sourceId: 's25' });
      expect(rows).toHaveLength(10);
      // Each day: its first key (then a seek to the source's rows), its row, the key after it (then a seek to the next day). A scan of every row read 500.
      expect(read).toBe(10 * 3);
    } finally {
      await db.close();
    }
  });
});
