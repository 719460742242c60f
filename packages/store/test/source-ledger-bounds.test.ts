// Goal: a holder of an ingest token cannot make the completeness ledger expensive. The ranges
// of all sources together stay within a budget (LEDGER_RANGES_MAX, each source keeping a reserve)
// while `received` stays exact and the newest holes are reported, on a leader, a standby and
// after a reopen; an event writes a few small values whatever the ranges its source holds; a
// store whose ranges a version before kept in one value per source is moved to a key per
// range once, fitted into the bounds, and a second open changes nothing; pages of sources
// walk every source once.
import type { AuditEvent } from '@auditlake/model';
import { Level } from 'level';
import { describe, expect, it } from 'vitest';
import { useTempStores } from './temp-stores.js';
import { LEDGER_RANGES_MAX, LEDGER_SOURCES_MAX, OTHER_SOURCES_KEY, SOURCE_RANGES_MAX, SOURCE_RANGES_RESERVED, SourceLedger } from '../src/source-ledger.js';
import type { AuditStore } from '../src/audit-store.js';

const stores = useTempStores('auditlake-ledger-bounds-');

function ev(id: string, sourceId: string, sourceSeq: number): AuditEvent {
  return { eventId: id, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: 'ALLOW', tables: [], query: '', details: '', timestamp: 1_000, sourceId, sourceSeq };
}

/** The ranges the entries hold, summed (each source's holes and its first range). */
function rangesOf(store: AuditStore): number {
  return store.sourceLedger().reduce((n, entry) => n + entry.gaps.length + 1, 0);
}

/** Every key and value of a LevelDB between two keys. */
async function dump(location: string, gte: string, lt: string): Promise<Array<[string, string]>> {
  const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  await db.open();
  try {
    return await db.iterator({ gte, lt }).all();
  } finally {
    await db.close();
  }
}

describe('the ranges of all sources', () => {
  it('stay within LEDGER_RANGES_MAX under sources that each skip every other sourceSeq; received exact, the newest holes reported, on a standby and after a reopen', async () => {
    const { store: leader, location } = await openStore();
    // 210 sources × 1,000 events, sourceSeqs 0, 2, 4, …: without a budget 210,000 ranges.
    const sources = 210;
    const perSource = 1_000;
    for (let round = 0; round < perSource; round += 50) {
      const events: AuditEvent[] = [];
      for (let i = round; i < round + 50; i++) for (let s = 0; s < sources; s++) events.push(ev(`a${s}-${i}`, `attacker-${String(s).padStart(3, '0')}`, 2 * i));
      await leader.append(events);
    }
    // Then an honest source with 30 holes: it keeps its reserve, so its newest holes are listed.
    const honestSeqs = Array.from({ length: 31 }, (_, i) => 3 * i).flatMap((s) => [s, s + 1]);
    await leader.append(honestSeqs.map((s) => ev(`h${s}`, 'honest', s)));

    const ranges = rangesOf(leader);
    expect(ranges).toBeLessThanOrEqual(200_000);
    expect(LEDGER_RANGES_MAX).toBe(200_000);
    expect(leader.sourceLedgerRanges()).toBe(ranges);
    const shared = LEDGER_RANGES_MAX - LEDGER_SOURCES_MAX * SOURCE_RANGES_RESERVED;
    // Every source its reserve, the shared ranges all taken, none beyond.
    expect(ranges).toBe((sources + 1) * SOURCE_RANGES_RESERVED + shared);
    for (const entry of leader.sourceLedger()) {
      if (entry.sourceId === 'honest') continue;
      expect(entry).toMatchObject({ received: perSource, firstSourceSeq: 0, highestSourceSeq: 2 * (perSource - 1) });
      // The newest hole is always reported.
      expect(entry.gaps[entry.gaps.length - 1]).toEqual({ fromSeq: 2 * perSource - 3, toSeq: 2 * perSource - 3 });
      expect(entry.missing).toBe(entry.gapCount);
    }
    const [honest] = leader.sourceLedger('honest');
    expect(honest).toMatchObject({ received: honestSeqs.length, highestSourceSeq: 91, gapCount: SOURCE_RANGES_RESERVED - 1, missing: SOURCE_RANGES_RESERVED - 1 });
    expect(honest?.gaps[honest.gaps.length - 1]).toEqual({ fromSeq: 89, toSeq: 89 });
    expect(leader.sourceLedgerSummary()).toMatchObject({ sources: sources + 1, sourcesWithGaps: sources + 1 });
    const entries = leader.sourceLedger();
    const summary = leader.sourceLedgerSummary();

    const { store: standby } = await openStore();
    for (let seq = 0; ; ) {
      const entriesRead = await standby.applyReplicated(await leader.readEncodedBySeq(seq, 20_000));
      if (entriesRead === 0) break;
      seq += entriesRead;
    }
    expect(standby.sourceLedger()).toEqual(entries);
    expect(standby.sourceLedgerSummary()).toEqual(summary);

    await stores.close(leader);
    const { store: reopened } = await openStore(location);
    expect(reopened.sourceLedger()).toEqual(entries);
    expect(reopened.sourceLedgerSummary()).toEqual(summary);
    expect(reopened.sourceLedgerRanges()).toBe(ranges);
  }, 300_000);
});

const openStore = stores.open;

/** Records what a batch is given: every key and value, in bytes. */
function recordingBatch() {
  const written: Array<{ key: string; value?: string }> = [];
  return {
    written,
    bytes: () => written.reduce((n, w) => n + Buffer.byteLength(w.key) + Buffer.byteLength(w.value ?? ''), 0),
    put: (key: string, value: string) => written.push({ key, value }),
    del: (key: string) => written.push({ key }),
  };
}

describe('an event of a source holding many ranges', () => {
  it('writes a few small values, not the source\'s whole list', async () => {
    const { store, location } = await openStore();
    await stores.close(store);
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    try {
      const ledger = await SourceLedger.load(db);
      // A source at SOURCE_RANGES_MAX (1,000) ranges: 0, 2, 4, …
      const filling = ledger.begin();
      for (let i = 0; i < 1_000; i++) filling.addJson(JSON.stringify(ev(`f${i}`, 'holes', 2 * i)));
      const batch = db.batch();
      filling.putChanged(batch);
      await batch.write();
      filling.commit();
      expect(ledger.entries('holes')[0]?.gaps).toHaveLength(999);

      // The next sourceSeq counting up, one past the cap (joining the two oldest), one filling a hole.
      const cases: Array<[string, number]> = [
        ['counting up', 1_999],
        ['a new range past the cap', 2_005],
        ['filling a hole', 501],
      ];
      for (const [name, seq] of cases) {
        const change = ledger.begin();
        change.addJson(JSON.stringify(ev(name, 'holes', seq)));
        const recorded = recordingBatch();
        change.putChanged(recorded);
        change.commit();
        // A key per range: at most the joined ranges' keys and the joined count.
        expect(recorded.written.length, name).toBeLessThanOrEqual(4);
        expect(recorded.bytes(), name).toBeLessThan(200);
      }
      expect(SOURCE_RANGES_MAX).toBe(1_000);
      expect(ledger.entries('holes')[0]).toMatchObject({ received: 1_003, gapCount: 998 });
    } finally {
      await db.close();
    }
  });

  it('is stored a key per range, read back the same', async () => {
    const { store, location } = await openStore();
    await store.append(Array.from({ length: 1_500 }, (_, i) => ev(`s${i}`, 'wide', 2 * i)));
    const [entry] = store.sourceLedger('wide');
    await stores.close(store);
    const stored = await dump(location, 'h!', 'h"');
    // The ranges, a key each, the count of sourceSeqs joined in that never arrived, and the
    // number of the day of its newest event (the ledger's first day: 0).
    expect(stored).toHaveLength(SOURCE_RANGES_MAX + 2);
    expect(Math.max(...stored.map(([, value]) => value.length))).toBeLessThanOrEqual(12);
    expect(stored).toContainEqual(['h!wide!j', '500']);
    expect(stored).toContainEqual(['h!wide!t', '0']);
    expect(entry).toMatchObject({ received: 1_500, gapCount: SOURCE_RANGES_MAX - 1 });
    const { store: reopened } = await openStore(location);
    expect(reopened.sourceLedger('wide')).toEqual([entry]);
  });
});

describe('the key of a range', () => {
  it('tells sources apart whose ids hold ! and what looks like a range start, across a reopen', async () => {
    const { store, location } = await openStore();
    // "x!0000000000000001" ends like a range key of source "x"; "x!j" like its joined count.
    const ids = ['x', 'x!0000000000000001', 'x!j', 'x!', '!', 'plug "ä" 😀'];
    await store.append(ids.flatMap((id, n) => [1, 3, 4].map((s) => ev(`${n}-${s}`, id, s + n))));
    const entries = store.sourceLedger();
    expect(entries.map((e) => e.sourceId)).toEqual([...ids].sort());
    for (const entry of entries) expect(entry).toMatchObject({ received: 3, gapCount: 1, missing: 1 });
    await stores.close(store);
    const { store: reopened } = await openStore(location);
    expect(reopened.sourceLedger()).toEqual(entries);
  });
});

describe('a store whose ranges a version before kept in one value per source', () => {
  it('is moved to a key per range when opened, fitted into the bounds, the old values gone; a second open changes nothing', async () => {
    const { store, location } = await openStore();
    await stores.close(store);
    // As a version before left it: the plain array, the form with a joined count, and a source
    // holding more ranges than SOURCE_RANGES_MAX allows now.
    const wide = Array.from({ length: 3_000 }, (_, i) => [4 * i, 4 * i + 1] as [number, number]);
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    await db.batch(
      [
        { type: 'put', key: 'g!plain', value: '[[1,3],[7,7],[10,12]]' },
        { type: 'put', key: 'g!joined!id', value: JSON.stringify({ ranges: [[0, 20], [25, 25]], received: 19 }) },
        { type: 'put', key: 'g!wide', value: JSON.stringify(wide) },
      ],
      { sync: true },
    );
    await db.close();

    const { store: opened } = await openStore(location);
    const expected = [
      { sourceId: 'joined!id', received: 19, firstSourceSeq: 0, contiguousThrough: 20, highestSourceSeq: 25, gaps: [{ fromSeq: 21, toSeq: 24 }], gapCount: 1, gapsTruncated: false, missing: 4 },
      { sourceId: 'plain', received: 7, firstSourceSeq: 1, contiguousThrough: 3, highestSourceSeq: 12, gaps: [{ fromSeq: 4, toSeq: 6 }, { fromSeq: 8, toSeq: 9 }], gapCount: 2, gapsTruncated: false, missing: 5 },
    ];
    expect(opened.sourceLedger().filter((e) => e.sourceId !== 'wide')).toEqual(expected);
    // The oldest 2,001 ranges joined into one: every sourceSeq that arrived still counted.
    const [wideEntry] = opened.sourceLedger('wide');
    expect(wideEntry).toMatchObject({ received: 6_000, firstSourceSeq: 0, contiguousThrough: 4 * 2_000 + 1, highestSourceSeq: 4 * 2_999 + 1, gapCount: SOURCE_RANGES_MAX - 1, missing: 2 * (SOURCE_RANGES_MAX - 1) });
    expect(wideEntry?.gaps[wideEntry.gaps.length - 1]).toEqual({ fromSeq: 4 * 2_998 + 2, toSeq: 4 * 2_998 + 3 });
    const all = opened.sourceLedger();
    const summary = opened.sourceLedgerSummary();
    await stores.close(opened);
    expect(await dump(location, 'g!', 'g"')).toEqual([]);
    const moved = await dump(location, 'h!', 'h"');
    expect(moved).toContainEqual(['h!joined!id!0000000000000000', '20']);
    expect(moved).toContainEqual(['h!joined!id!j', '3']);

    // Opened again: the same ledger, not a key changed.
    const { store: again } = await openStore(location);
    expect(again.sourceLedger()).toEqual(all);
    expect(again.sourceLedgerSummary()).toEqual(summary);
    await stores.close(again);
    expect(await dump(location, 'h!', 'h"')).toEqual(moved);
    // And it goes on from there.
    const { store: third } = await openStore(location);
    await third.append([ev('p8', 'plain', 8), ev('p9', 'plain', 9)]);
    expect(third.sourceLedger('plain')[0]).toMatchObject({ received: 9, gaps: [{ fromSeq: 4, toSeq: 6 }], missing: 3 });
  });

  it('folds the old sources past LEDGER_SOURCES_MAX into the other sources, deleting their values, once', async () => {
    const { store, location } = await openStore();
    await stores.close(store);
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    const batch = db.batch();
    for (let i = 0; i < LEDGER_SOURCES_MAX + 3; i++) batch.put(`g!s${String(i).padStart(6, '0')}`, '[[1,2]]');
    await batch.write({ sync: true });
    await db.close();
    const { store: opened } = await openStore(location);
    expect(opened.sourceLedgerSummary()).toMatchObject({ sources: LEDGER_SOURCES_MAX, otherSourceEvents: 6 });
    await stores.close(opened);
    expect(await dump(location, 'g!', 'g"')).toEqual([]);
    expect(await dump(location, OTHER_SOURCES_KEY, OTHER_SOURCES_KEY + '\u0000')).toEqual([[OTHER_SOURCES_KEY, '6']]);
    const { store: again } = await openStore(location);
    expect(again.sourceLedgerSummary()).toMatchObject({ sources: LEDGER_SOURCES_MAX, otherSourceEvents: 6 });
  });
});

describe('pages of the ledger', () => {
  it('walk every source once, in sourceId order, each with its newest holes up to the bound', async () => {
    const { store } = await openStore();
    const ids = Array.from({ length: 250 }, (_, i) => `src-${String((i * 7) % 250).padStart(3, '0')}`);
    await store.append(ids.flatMap((id) => [0, 2, 4, 6].map((s) => ev(`${id}-${s}`, id, s))));
    const seen: string[] = [];
    let after: string | undefined;
    let pages = 0;
    for (;;) {
      const page = store.sourceLedgerPage({ ...(after === undefined ? {} : { after }), limit: 100, gapsMax: 2 });
      pages++;
      for (const entry of page.sources) {
        seen.push(entry.sourceId);
        expect(entry).toMatchObject({ gaps: [{ fromSeq: 3, toSeq: 3 }, { fromSeq: 5, toSeq: 5 }], gapCount: 3, gapsTruncated: true, missing: 3 });
      }
      if (page.next === null) break;
      after = page.next;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual([...new Set(ids)].sort());
    // A position between sourceIds, and one past the last.
    expect(store.sourceLedgerPage({ after: 'src-0995', limit: 2, gapsMax: 10 }).sources.map((e) => e.sourceId)).toEqual(['src-100', 'src-101']);
    expect(store.sourceLedgerPage({ after: 'zzz', limit: 2, gapsMax: 10 })).toEqual({ sources: [], next: null });
  });
});
