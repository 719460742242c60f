// Goal: the completeness ledger knows, per source, which sourceSeqs arrived: the highest one
// reached without a hole, and the holes as ranges — the same on the leader and on a standby,
// after a reopen, untouched by retry and retention; and it reads a source only from the
// event's own fields, never from text inside a value; a store written before the ledger gets
// one built from its log when it is first opened. It tracks at most LEDGER_SOURCES_MAX sources
// one by one, counting the events of further ones together, with totals that always equal
// the sum over its entries.
import type { AuditEvent } from '@auditlake/model';
import { Level } from 'level';
import { describe, expect, it } from 'vitest';
import { localKey } from '../src/event-keys.js';
import { useTempStores } from './temp-stores.js';
import { LEDGER_SOURCES_MAX, OTHER_SOURCES_KEY, SOURCE_RANGES_MAX, SourceRanges, sourceOfJson } from '../src/source-ledger.js';
import type { AuditStore } from '../src/audit-store.js';

const stores = useTempStores('auditlake-ledger-');

/** Every key of the ranges, as stored now (h!) and by versions before (g!). */
async function ledgerKeys(db: Level<string, string>): Promise<string[]> {
  return [...(await db.keys({ gte: 'g!', lt: 'g"' }).all()), ...(await db.keys({ gte: 'h!', lt: 'h"' }).all())];
}
const openStore = stores.open;

function ev(id: string, source?: { sourceId: string; sourceSeq?: number }, ts = 1_000): AuditEvent {
  return { eventId: id, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: 'ALLOW', tables: [], query: '', details: '', timestamp: ts, ...(source ?? {}) };
}

/** The ledger entry a brute force gives for a set of sourceSeqs. */
function expected(sourceId: string, seqs: Iterable<number>) {
  const sorted = [...new Set(seqs)].sort((a, b) => a - b);
  const first = sorted[0] as number;
  let contiguous = first;
  while (sorted.includes(contiguous + 1)) contiguous++;
  const gaps: Array<{ fromSeq: number; toSeq: number }> = [];
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1] as number;
    const cur = sorted[i] as number;
    if (cur > prev + 1) gaps.push({ fromSeq: prev + 1, toSeq: cur - 1 });
  }
  const highest = sorted[sorted.length - 1] as number;
  return { sourceId, received: sorted.length, firstSourceSeq: first, contiguousThrough: contiguous, highestSourceSeq: highest, gaps, gapCount: gaps.length, gapsTruncated: false, missing: highest - first + 1 - sorted.length };
}

describe('source ranges', () => {
  it('property: for sourceSeqs received in any order, with repeats, the entry equals a brute force', () => {
    let state = 7;
    const random = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let run = 0; run < 300; run++) {
      const ranges = new SourceRanges();
      const seen: number[] = [];
      const count = 1 + Math.floor(random() * 60);
      for (let i = 0; i < count; i++) {
        const seq = Math.floor(random() * 80);
        const fresh = !seen.includes(seq);
        expect(ranges.add(seq)).toBe(fresh);
        seen.push(seq);
      }
      const entry = ranges.entry('s');
      expect(entry).toEqual(expected('s', seen));
      // Kept as sourceSeqs are added, not summed from the ranges.
      expect(ranges.received).toBe(entry.received);
      expect(ranges.missing).toBe(entry.missing);
    }
  });
});

describe('source ranges past SOURCE_RANGES_MAX', () => {
  it('counts received exactly when the two oldest ranges are joined, the joined hole neither received nor listed', () => {
    const ranges = new SourceRanges();
    // 0, 2, 4, …: every sourceSeq a range of its own, a hole after each.
    const count = SOURCE_RANGES_MAX + 2;
    for (let i = 0; i < count; i++) expect(ranges.add(2 * i)).toBe(true);
    const entry = ranges.entry('holes');
    expect(entry.received).toBe(count);
    expect(ranges.received).toBe(count);
    // Two joins: the two oldest holes (1 and 3) are no longer listed; the rest are.
    expect(ranges.ranges).toHaveLength(SOURCE_RANGES_MAX);
    expect(entry.gaps).toHaveLength(SOURCE_RANGES_MAX - 1);
    expect(entry.gaps[0]).toEqual({ fromSeq: 5, toSeq: 5 });
    expect(entry.missing).toBe(SOURCE_RANGES_MAX - 1);
    expect(ranges.missing).toBe(entry.missing);
    // A sourceSeq inside a joined hole is not new to the ranges (it cannot be told apart).
    expect(ranges.add(1)).toBe(false);
    expect(ranges.received).toBe(count);
    // Copied with the exact count, the joined sourceSeqs known apart.
    expect(ranges.copy().entry('holes')).toEqual(entry);
    expect(ranges.joined).toBe(2);
  });

  it('keeps the exact count in the store, across a reopen', async () => {
    const { store, location } = await openStore();
    const count = SOURCE_RANGES_MAX + 5;
    const events = Array.from({ length: count }, (_, i) => ev(`h${i}`, { sourceId: 'holes', sourceSeq: 2 * i }));
    for (let i = 0; i < events.length; i += 2_000) await store.append(events.slice(i, i + 2_000));
    const [entry] = store.sourceLedger('holes');
    expect(entry).toMatchObject({ received: count, firstSourceSeq: 0, highestSourceSeq: 2 * (count - 1), missing: SOURCE_RANGES_MAX - 1 });
    expect(store.sourceLedgerSummary().missing).toBe(SOURCE_RANGES_MAX - 1);
    await stores.close(store);
    const { store: reopened } = await openStore(location);
    expect(reopened.sourceLedger('holes')).toEqual([entry]);
    expect(reopened.sourceLedgerSummary().missing).toBe(SOURCE_RANGES_MAX - 1);
  });
});

describe('sourceOfJson', () => {
  it('reads the fields, not look-alike text inside a value', () => {
    const json = JSON.stringify({ eventId: 'e', query: ',"sourceId":"fake","sourceSeq":99', details: '"sourceSeq":7', sourceId: 'plug "ä" 😀', sourceSeq: 12 });
    expect(sourceOfJson(json)).toEqual({ sourceId: 'plug "ä" 😀', sourceSeq: 12 });
    expect(sourceOfJson(JSON.stringify({ eventId: 'e', query: ',"sourceId":"fake","sourceSeq":99' }))).toBeUndefined();
    expect(sourceOfJson(JSON.stringify({ eventId: 'e', sourceId: 'only-an-id' }))).toBeUndefined();
  });
});

describe('the store keeps the ledger', () => {
  it('on the leader and a standby alike, across a reopen, untouched by retries and retention', async () => {
    let now = 10_000;
    const { store: leader, location } = await openStore(undefined, () => now);
    const seqs = [1, 2, 3, 5, 6, 9, 10, 11];
    await leader.append(seqs.map((s) => ev(`a${s}`, { sourceId: 'plugin-a', sourceSeq: s }, 100 + s)));
    await leader.append([ev('b1', { sourceId: 'plugin-b', sourceSeq: 4 }), ev('plain'), ev('id-only', { sourceId: 'plugin-c' })]);
    // A retry of sourceSeq 5 under a new eventId, and one filling the hole at 4.
    await leader.append([ev('a5-again', { sourceId: 'plugin-a', sourceSeq: 5 }), ev('a4', { sourceId: 'plugin-a', sourceSeq: 4 })]);
    const a = expected('plugin-a', [...seqs, 4, 5]);
    expect(a).toMatchObject({ contiguousThrough: 6, highestSourceSeq: 11, gaps: [{ fromSeq: 7, toSeq: 8 }], missing: 2 });
    const all = [a, expected('plugin-b', [4])];
    expect(leader.sourceLedger()).toEqual(all);
    expect(leader.sourceLedger('plugin-b')).toEqual([all[1]]);
    expect(leader.sourceLedger('nope')).toEqual([]);

    const { store: standby } = await openStore();
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 100));
    expect(standby.sourceLedger()).toEqual(all);

    // Retention deletes the events; what was received stays received.
    now = 10_000_000;
    const pruned = await leader.pruneBefore(1_000_000, 100, async () => true);
    expect(pruned.deleted).toBeGreaterThan(0);
    expect(leader.sourceLedger()).toEqual(all);

    await stores.close(leader);
    const { store: reopened } = await openStore(location);
    expect(reopened.sourceLedger()).toEqual(all);
  });
});

describe('a store written before the ledger', () => {
  it('gets its ledger built from the log, once, when it is opened', async () => {
    const { store, location } = await openStore();
    const seqs = [1, 2, 4, 7, 8];
    await store.append(seqs.map((s) => ev(`o${s}`, { sourceId: 'old-plugin', sourceSeq: s }, 100 + s)));
    await store.append([ev('plain'), ev('other', { sourceId: 'other', sourceSeq: 3 })]);
    const built = store.sourceLedger();
    expect(built).toEqual([expected('old-plugin', seqs), expected('other', [3])]);
    await stores.close(store);
    // As an older version left it: events, and no ledger keys.
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    const batch = db.batch();
    for (const key of await ledgerKeys(db)) batch.del(key);
    batch.del(localKey('ledgerVersion'));
    await batch.write({ sync: true });
    expect(await ledgerKeys(db)).toEqual([]);
    await db.close();

    const { store: reopened } = await openStore(location);
    expect(reopened.sourceLedger()).toEqual(built);
    await stores.close(reopened);
    // Built once: the keys are stored, and a later open reads them rather than the log.
    const { store: again } = await openStore(location);
    expect(again.sourceLedger()).toEqual(built);
  });
});

/** The summary a sum over every entry gives. */
function summed(store: AuditStore) {
  const sources = store.sourceLedger();
  return { sources: sources.length, sourcesWithGaps: sources.filter((s) => s.missing > 0).length, missing: sources.reduce((n, s) => n + s.missing, 0), retiredSources: 0, retiredMissing: 0 };
}

describe('the ledger is bounded', () => {
  it(`tracks ${LEDGER_SOURCES_MAX} sources one by one and counts the events of further ones together, on a leader and a standby, across a reopen`, async () => {
    const { store: leader, location } = await openStore();
    // A source with a hole first, then one new source per event up to the bound and 30 past it.
    await leader.append([1, 2, 4].map((s) => ev(`h${s}`, { sourceId: 'honest', sourceSeq: s }, 100)));
    const flood = Array.from({ length: LEDGER_SOURCES_MAX + 29 }, (_, i) => ev(`f${i}`, { sourceId: `flood-${String(i).padStart(6, '0')}`, sourceSeq: 7 }, 200 + i));
    await leader.append(flood.slice(0, 6_000));
    await leader.append(flood.slice(6_000));
    // The honest source keeps its place: its later sourceSeqs are ranges as before.
    await leader.append([ev('h3', { sourceId: 'honest', sourceSeq: 3 }), ev('h9', { sourceId: 'honest', sourceSeq: 9 })]);
    // A source past the bound: a retry under another eventId counts again (no ranges to know it).
    await leader.append([ev('late1', { sourceId: 'late', sourceSeq: 1 }), ev('late1-again', { sourceId: 'late', sourceSeq: 1 })]);
    const entries = leader.sourceLedger();
    expect(entries).toHaveLength(LEDGER_SOURCES_MAX);
    expect(leader.sourceLedger('honest')).toEqual([expected('honest', [1, 2, 3, 4, 9])]);
    expect(leader.sourceLedger('late')).toEqual([]);
    expect(leader.sourceLedger(`flood-${String(LEDGER_SOURCES_MAX - 2).padStart(6, '0')}`)).toHaveLength(1);
    expect(leader.sourceLedger(`flood-${String(LEDGER_SOURCES_MAX - 1).padStart(6, '0')}`)).toEqual([]);
    const summary = { ...summed(leader), otherSourceEvents: 30 + 2 };
    expect(summary).toEqual({ sources: LEDGER_SOURCES_MAX, sourcesWithGaps: 1, missing: 4, otherSourceEvents: 32, retiredSources: 0, retiredMissing: 0 });
    expect(leader.sourceLedgerSummary()).toEqual(summary);

    const { store: standby } = await openStore();
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 20_000));
    expect(standby.sourceLedger()).toEqual(entries);
    expect(standby.sourceLedgerSummary()).toEqual(summary);

    await stores.close(leader);
    const { store: reopened } = await openStore(location);
    expect(reopened.sourceLedger()).toEqual(entries);
    expect(reopened.sourceLedgerSummary()).toEqual(summary);
    // Filling the hole changes the totals as it changes the entries.
    await reopened.append([5, 6, 7, 8].map((s) => ev(`h${s}`, { sourceId: 'honest', sourceSeq: s }, 100)));
    expect(reopened.sourceLedgerSummary()).toEqual({ ...summed(reopened), otherSourceEvents: 32 });
    expect(reopened.sourceLedgerSummary()).toMatchObject({ sourcesWithGaps: 0, missing: 0 });
  });

  it('folds the sources a store holds past the bound (written without it) into the others, once', async () => {
    const { store, location } = await openStore();
    await stores.close(store);
    // As a version without the bound left it: a source per key, past the bound.
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    const batch = db.batch();
    for (let i = 0; i < LEDGER_SOURCES_MAX + 40; i++) batch.put(`g!s${String(i).padStart(6, '0')}`, JSON.stringify(i % 2 === 0 ? [[1, 3]] : [[1, 1], [5, 6]]));
    await batch.write({ sync: true });
    await db.close();

    const { store: opened } = await openStore(location);
    expect(opened.sourceLedger()).toHaveLength(LEDGER_SOURCES_MAX);
    // The last 40 by key, each of 3 sourceSeqs.
    const summary = { ...summed(opened), otherSourceEvents: 40 * 3 };
    expect(summary).toMatchObject({ sourcesWithGaps: LEDGER_SOURCES_MAX / 2, missing: (LEDGER_SOURCES_MAX / 2) * 3 });
    expect(opened.sourceLedgerSummary()).toEqual(summary);
    await stores.close(opened);
    const { store: again } = await openStore(location);
    expect(again.sourceLedgerSummary()).toEqual(summary);
  });

  it('is built for a store written before it with the same bound, and counts the other sources once however often it is opened', async () => {
    const { store, location } = await openStore();
    const events = Array.from({ length: LEDGER_SOURCES_MAX + 15 }, (_, i) => ev(`o${i}`, { sourceId: `old-${String(i).padStart(6, '0')}`, sourceSeq: i % 3 === 0 ? 2 : 1 }, 100 + i));
    await store.append(events);
    const built = store.sourceLedger();
    const summary = store.sourceLedgerSummary();
    expect(summary.otherSourceEvents).toBe(15);
    await stores.close(store);
    // As an older version left it: events, no ranges and no ledger version (the other
    // sources' count as a crash midway through the build would leave it).
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    const batch = db.batch();
    for (const key of await ledgerKeys(db)) batch.del(key);
    batch.del(localKey('ledgerVersion'));
    await batch.write({ sync: true });
    expect(await db.get(OTHER_SOURCES_KEY)).toBe('15');
    await db.close();

    const { store: reopened } = await openStore(location);
    expect(reopened.sourceLedger()).toEqual(built);
    expect(reopened.sourceLedgerSummary()).toEqual(summary);
    await stores.close(reopened);
    const { store: again } = await openStore(location);
    expect(again.sourceLedgerSummary()).toEqual(summary);
  });
});
