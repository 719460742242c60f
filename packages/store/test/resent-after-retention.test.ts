// Goal: an event re-sent after retention deleted its local copy is judged against the copy the
// tier holds (a retry: a duplicate, nothing written; other content: a conflict), looked for only
// when it can be such a re-send (an id the client chose, timed at or before the newest event
// retention deleted, not in the log), and an append whose lookup fails stores nothing. An
// eventId an erasure named is never stored again: a re-send of it (whatever its time, with a
// tier or without one) cannot bring the erased values back, on the leader, on a standby that
// applied the erasure, after a restart, for erasures applied before ids were kept, and when
// the erasure lands while the re-send is being chosen. An id whose tiered event retention
// deleted is kept with that event's time, so a re-send under it with any other time is looked for
// in the tier at the original's time and judged against that copy (a conflict, never a second
// record under one id): after a restart too, before the filter of those ids is filled, and when
// retention deletes the first copy while the re-send is being written; ordinary ingest reads none.
// A store whose retention deleted events under a version that kept no record of them looks such a
// re-send up in the tier once upgraded.
import { Level } from 'level';
import { encodeErasureDetails, INTEGRITY_ACTIONS, newSaltKey, RecordHasher } from '@auditlake/integrity';
import { encodeEvent, SELF_SOURCE, type AuditEvent, type EncodedEvent, type StoredEvent } from '@auditlake/model';
import { describe, expect, it, vi } from 'vitest';
import { appendForwarded, type AuditStore, type TieredCopyLookup } from '../src/index.js';
import { useTempStores } from './temp-stores.js';

// Events here are timed in 2023: their ids are kept whatever the year the tests run in, except
// where a test sets how long ids are kept.
const KEPT_FOR_GOOD = 1_000 * 365 * 24 * 60 * 60 * 1000;
const stores = useTempStores('auditlake-resent-', { prunedIdsKeepMs: KEPT_FOR_GOOD });
const OLD_MS = 1_700_000_000_000;
const hasher = new RecordHasher();

function ev(eventId: string, overrides: Partial<AuditEvent> = {}): AuditEvent {
  return { eventId, userId: 'alice', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t1'], query: 'SELECT 1', details: '', timestamp: OLD_MS, ...overrides };
}

/** As ingest encodes it: its content part computed under a key of its own. */
function ingested(event: AuditEvent): EncodedEvent {
  const salt = newSaltKey();
  return { ...encodeEvent(event), chainContent: { ...hasher.contentOfValues(event, salt), salt } };
}

/** A store whose retention deleted `gone` (tiered, as far as the lookup is concerned), with `kept` still in the log. */
async function prunedStore() {
  const { store, location } = await stores.open();
  await store.appendEncoded([ingested(ev('gone')), ingested(ev('kept', { timestamp: OLD_MS + 10_000 }))]);
  // What the tier holds of it: the record as the log stored it (its salt included).
  const tierCopy = JSON.stringify(await store.getByEventId('gone'));
  expect((await store.pruneBefore(OLD_MS + 1, 100, async () => true)).deleted).toBe(1);
  const asked: Array<Map<string, number>> = [];
  let failure: Error | undefined;
  const lookup: TieredCopyLookup = async (eventTimes) => {
    asked.push(new Map(eventTimes));
    if (failure) throw failure;
    return new Map([...eventTimes.keys()].filter((id) => id === 'gone').map((id) => [id, tierCopy]));
  };
  store.setTieredCopyLookup(lookup);
  return { store, location, asked, fail: (err: Error) => (failure = err) };
}

/**
 * A tier lookup whose first call waits until `release()` (later ones answer at once), answering
 * the copies `tier` holds of the ids asked for; `asked` records each call's ids and times.
 */
function gatedLookup(store: AuditStore, tier: ReadonlyMap<string, string>): { asked: Array<Map<string, number>>; release: () => void } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const asked: Array<Map<string, number>> = [];
  store.setTieredCopyLookup(async (times) => {
    asked.push(new Map(times));
    if (asked.length === 1) await gate;
    return new Map([...times.keys()].flatMap((id) => (tier.has(id) ? [[id, tier.get(id) as string] as const] : [])));
  });
  return { asked, release };
}

describe('events re-sent after retention deleted them', () => {
  it('a retry of a deleted event is a duplicate of the tier\'s copy and is not written; other content under its id is a conflict', async () => {
    const { store, asked } = await prunedStore();
    const lastSeq = store.position.lastSeq;
    const retry = await store.appendEncoded([ingested(ev('gone')), ingested(ev('gone'))]);
    expect(retry).toEqual({ stored: [], duplicates: 2, conflicts: [], heldByTier: ['gone'] });
    // Remembered, so an ack=replicated wait counts it confirmed (the log never will hold it).
    expect(store.heldByTier('gone')).toBe(true);
    expect(store.heldByTier('kept')).toBe(false);
    expect(asked).toEqual([new Map([['gone', OLD_MS]])]);
    const other = await store.appendEncoded([ingested(ev('new1', { timestamp: OLD_MS - 5 })), ingested(ev('gone', { query: 'DROP TABLE t1' }))]);
    expect(other.duplicates).toBe(0);
    expect(other.conflicts.map((c) => c.eventId)).toEqual(['gone']);
    expect(other.stored.map((s) => s.eventId)).toEqual(['new1']);
    expect(store.position.lastSeq).toBe(lastSeq + 1);
    expect(await store.getByEventId('gone')).toBeUndefined();
  });

  it('looks nothing up for ids this node made, events timed after the newest deleted one, or ids the log holds', async () => {
    const { store, asked } = await prunedStore();
    expect(store.prunedTimeMax).toBe(OLD_MS);
    const fresh = ingested(ev('made-here'));
    const result = await store.appendEncoded([fresh, ingested(ev('later', { timestamp: OLD_MS + 1 })), ingested(ev('kept', { timestamp: OLD_MS + 10_000 }))], { freshIds: new Set(['made-here']) });
    expect(result.stored.map((s) => s.eventId)).toEqual(['made-here', 'later']);
    expect(result.duplicates).toBe(1);
    expect(asked).toEqual([]);
    // An old event the log still holds (never deleted): found in the log, the tier not asked.
    const { store: other, asked: otherAsked } = await prunedStore();
    await other.appendEncoded([ingested(ev('old-held', { timestamp: OLD_MS - 1 }))]);
    expect((await other.appendEncoded([ingested(ev('old-held', { timestamp: OLD_MS - 1 }))])).duplicates).toBe(1);
    expect(otherAsked).toEqual([new Map([['old-held', OLD_MS - 1]])]);
  });

  it('an append whose lookup fails stores nothing of it, and the newest deleted time survives a restart', async () => {
    const { store, location, fail } = await prunedStore();
    const lastSeq = store.position.lastSeq;
    fail(new Error('the bucket is unreachable'));
    await expect(store.appendEncoded([ingested(ev('new2')), ingested(ev('gone'))])).rejects.toThrow('the bucket is unreachable');
    expect(store.position.lastSeq).toBe(lastSeq);
    expect(await store.getByEventId('new2')).toBeUndefined();
    await stores.close(store);
    const { store: reopened } = await stores.open(location);
    expect(reopened.prunedTimeMax).toBe(OLD_MS);
  });

  it('a store whose retention deleted events under a version that recorded none of it looks a re-send up in the tier once upgraded; a store this version made gets no such bound', async () => {
    const { store, location } = await stores.open();
    await store.appendEncoded([ingested(ev('gone')), ingested(ev('kept', { timestamp: OLD_MS + 10_000 }))]);
    const tierCopy = JSON.stringify(await store.getByEventId('gone'));
    expect((await store.pruneBefore(OLD_MS + 1, 100, async () => true)).deleted).toBe(1);
    await stores.close(store);
    // As versions before 2026-12-04 left a store: no deleted ids, no newest deleted time.
    const db = new Level<string, string>(location);
    await db.open();
    const forgotten = [...(await db.keys({ gte: 'p!', lt: 'p"' }).all()), 'l!prunedTimeMax', 'l!prunedTimeMaxComplete'];
    await db.batch(forgotten.map((key) => ({ type: 'del' as const, key })));
    await db.close();

    const upgradedAt = Date.now() + 24 * 60 * 60 * 1000;
    const { store: upgraded } = await stores.open(location, () => upgradedAt);
    expect(upgraded.prunedTimeMax).toBe(upgradedAt);
    const asked: Array<Map<string, number>> = [];
    upgraded.setTieredCopyLookup(async (times) => {
      asked.push(new Map(times));
      return new Map([...times.keys()].filter((id) => id === 'gone').map((id) => [id, tierCopy]));
    });
    const lastSeq = upgraded.position.lastSeq;
    expect(await upgraded.appendEncoded([ingested(ev('gone'))])).toEqual({ stored: [], duplicates: 1, conflicts: [], heldByTier: ['gone'] });
    expect(asked).toEqual([new Map([['gone', OLD_MS]])]);
    // Ingest timed after the upgrade looks nothing up.
    expect((await upgraded.appendEncoded([ingested(ev('after', { timestamp: upgradedAt + 1 }))])).stored.map((e) => e.eventId)).toEqual(['after']);
    expect(asked.length).toBe(1);
    expect(upgraded.position.lastSeq).toBe(lastSeq + 1);
    // The bound is kept, and not raised again at the next open.
    await stores.close(upgraded);
    const { store: again } = await stores.open(location, () => upgradedAt + 1_000_000);
    expect(again.prunedTimeMax).toBe(upgradedAt);

    // One that retention emptied under a version that did not even record where its log ended:
    // no entries at all, but the replicated metadata of a store that was used.
    const { store: emptied, location: emptiedAt } = await stores.open();
    await emptied.appendEncoded([ingested(ev('gone-too'))]);
    await emptied.putMeta({ watermark: { seq: 1 } });
    expect((await emptied.pruneBefore(OLD_MS + 1, 100, async () => true)).deleted).toBe(1);
    await stores.close(emptied);
    const raw = new Level<string, string>(emptiedAt);
    await raw.open();
    await raw.batch([...(await raw.keys({ gte: 'p!', lt: 'p"' }).all()), 'l!prunedTimeMax', 'l!prunedTimeMaxComplete', 'l!logEnd'].map((key) => ({ type: 'del' as const, key })));
    await raw.close();
    const { store: emptiedUpgraded } = await stores.open(emptiedAt, () => upgradedAt);
    expect(emptiedUpgraded.position.lastSeq).toBe(0);
    expect(emptiedUpgraded.prunedTimeMax).toBe(upgradedAt);

    // A store this version made, never pruned: no bound at its next open, nothing looked up.
    const { store: fresh, location: freshAt } = await stores.open();
    await fresh.appendEncoded([ingested(ev('x'))]);
    await stores.close(fresh);
    const { store: reopened } = await stores.open(freshAt, () => upgradedAt);
    expect(reopened.prunedTimeMax).toBeUndefined();
  });

  it('a standby whose log skips what the leader deleted takes the leader\'s newest deleted time, and keeps it over a restart', async () => {
    const { store: leader } = await prunedStore();
    const entries = await leader.readEncodedBySeq(0, 10);
    const skipped = await leader.skippedByRetention(0, entries);
    expect(skipped.timeMax).toBe(OLD_MS);
    const { store: standby, location } = await stores.open();
    expect(await standby.applyReplicated(entries, [], skipped)).toBe(1);
    expect(standby.prunedTimeMax).toBe(OLD_MS);
    await stores.close(standby);
    expect((await stores.open(location)).store.prunedTimeMax).toBe(OLD_MS);
    // A log that skips nothing takes nothing: a time the sender says it deleted is not believed
    // unless the entries show a hole (nothing would ever have been deleted here otherwise).
    const { store: whole } = await stores.open();
    await whole.appendEncoded([ingested(ev('w1'))]);
    const { store: copy } = await stores.open();
    await copy.applyReplicated(await whole.readEncodedBySeq(0, 10), [], { timeMax: OLD_MS + 99 });
    expect(copy.prunedTimeMax).toBeUndefined();
  });

  it("a re-send found in the tier counts its sourceSeq as received: a standby that skipped it, leading now, closes the ledger's hole", async () => {
    const { store: leader } = await stores.open();
    const e2 = ev('e2', { timestamp: OLD_MS, sourceId: 'src-A', sourceSeq: 2 });
    await leader.appendEncoded([ingested(ev('e1', { timestamp: OLD_MS + 5_000, sourceId: 'src-A', sourceSeq: 1 })), ingested(e2), ingested(ev('e3', { timestamp: OLD_MS + 10_000, sourceId: 'src-A', sourceSeq: 3 }))]);
    const tierCopy = JSON.stringify(await leader.getByEventId('e2'));
    // The standby holds seq 1, then is down while the leader tiers and deletes seq 2.
    const { store: standby } = await stores.open();
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 1), []);
    expect((await leader.pruneBefore(OLD_MS + 1, 100, async () => true)).deleted).toBe(1);
    const rest = await leader.readEncodedBySeq(1, 10);
    await standby.applyReplicated(rest, [], await leader.skippedByRetention(1, rest));
    expect(standby.sourceLedgerPage({ limit: 10, gapsMax: 10 }).sources[0]?.gaps).toEqual([{ fromSeq: 2, toSeq: 2 }]);
    // It leads now, and the source re-sends what the ledger reports missing.
    standby.setTieredCopyLookup(async (times) => new Map([...times.keys()].filter((id) => id === 'e2').map((id) => [id, tierCopy])));
    expect((await standby.appendEncoded([ingested(e2)])).duplicates).toBe(1);
    expect(standby.sourceLedgerPage({ limit: 10, gapsMax: 10 }).sources[0]?.gaps).toEqual([]);
  });

  it('an event the log held when its request was looked at, deleted by retention before the request was written, is judged against the tier and not stored again', async () => {
    const { store } = await stores.open();
    await store.appendEncoded([ingested(ev('gone')), ingested(ev('A', { timestamp: OLD_MS + 5_000 }))]);
    expect((await store.pruneBefore(OLD_MS + 1, 100, async () => true)).deleted).toBe(1);
    const tierCopyOfA = JSON.stringify(await store.getByEventId('A'));
    const seqOfA = (await store.getByEventId('A'))!.seq;
    // The tier holds A (tiered before retention deletes it); the lookup of X waits until released.
    const { asked, release } = gatedLookup(store, new Map([['A', tierCopyOfA]]));
    // A retried request: X (old enough to be looked for) and A (still in the log: left to the writer).
    const pending = store.appendEncoded([ingested(ev('X', { timestamp: OLD_MS - 1 })), ingested(ev('A', { timestamp: OLD_MS + 5_000 }))]);
    await expect.poll(() => asked.length).toBe(1);
    expect(asked[0]).toEqual(new Map([['X', OLD_MS - 1]]));
    // Retention deletes A while X is looked for.
    expect((await store.pruneBefore(OLD_MS + 6_000, 100, async () => true)).deleted).toBe(1);
    release();
    const result = await pending;
    // Chosen again once written would have stored A anew: A is the tier's duplicate, X is new.
    expect(asked[1]).toEqual(new Map([['X', OLD_MS - 1], ['A', OLD_MS + 5_000]]));
    expect(result.stored.map((s) => s.eventId)).toEqual(['X']);
    expect(result.duplicates).toBe(1);
    expect(result.heldByTier).toEqual(['A']);
    expect(await store.getByEventId('A')).toBeUndefined();
    expect(seqOfA).toBeLessThan(result.stored[0]!.seq);
  });

  it('an append holding an event the log still holds, timed before what retention deleted, is not chosen again when a prune deletes other events meanwhile', async () => {
    const { store } = await stores.open();
    // A late event L (an old time, stored after retention ran) stays in the log; another old one, O, will be deleted.
    await store.appendEncoded([ingested(ev('gone', { timestamp: OLD_MS }))]);
    expect((await store.pruneBefore(OLD_MS + 10_000, 100, async () => true)).deleted).toBe(1);
    await store.appendEncoded([ingested(ev('O', { timestamp: OLD_MS + 5_500 })), ingested(ev('L', { timestamp: OLD_MS + 5_000 }))]);
    const seqOfL = (await store.getByEventId('L'))!.seq;
    const { asked, release } = gatedLookup(store, new Map());
    const pending = store.appendEncoded([ingested(ev('X', { timestamp: OLD_MS - 1 })), ingested(ev('L', { timestamp: OLD_MS + 5_000 }))]);
    await expect.poll(() => asked.length).toBe(1);
    // Retention deletes O (not L: above maxSeq) while X is looked for, and raises the newest deleted time past L's.
    expect((await store.pruneBefore(OLD_MS + 6_000, 100, async () => true, seqOfL - 1)).deleted).toBe(1);
    release();
    const result = await pending;
    // L is still in the log: a duplicate, and no second round (no second lookup).
    expect(asked).toHaveLength(1);
    expect(result.stored.map((s) => s.eventId)).toEqual(['X']);
    expect(result.duplicates).toBe(1);
  });
});

/**
 * Stands in for the tier: the copies it holds (stored JSON by eventId), each found only when
 * asked at its own event time, as the tier reads only the files whose event-time bounds hold the
 * time asked. `asked` records each call's ids and times.
 */
function tierOf(store: AuditStore, tier: ReadonlyMap<string, string>): { asked: Array<Map<string, number>> } {
  const asked: Array<Map<string, number>> = [];
  store.setTieredCopyLookup(async (times) => {
    asked.push(new Map(times));
    return new Map([...times].flatMap(([id, time]) => {
      const json = tier.get(id);
      return json !== undefined && (JSON.parse(json) as StoredEvent).timestamp === time ? [[id, json] as const] : [];
    }));
  });
  return { asked };
}

/** Deletes events before `cutoffMs` as a tiering node's retention does: what the tier holds (through the log's end here), counted as tiered first. */
async function pruneTiered(store: AuditStore, cutoffMs: number): Promise<number> {
  const tieredThrough = store.position.lastSeq;
  await store.countTieredThrough(tieredThrough);
  return (await store.pruneBefore(cutoffMs, 100, async () => true, tieredThrough)).deleted;
}

/** A store whose tiered event `gone` (at OLD_MS) retention deleted, `kept` still in the log, and the tier's copy of `gone`. */
async function tieredAndPruned() {
  const { store, location } = await stores.open();
  await store.appendEncoded([ingested(ev('gone')), ingested(ev('kept', { timestamp: OLD_MS + 10_000 }))]);
  const tier = new Map([['gone', JSON.stringify(await store.getByEventId('gone'))]]);
  expect(await pruneTiered(store, OLD_MS + 1)).toBe(1);
  expect(store.prunedTimeMax).toBe(OLD_MS);
  return { store, location, tier, ...tierOf(store, tier) };
}

describe('ids retention deleted', () => {
  it('a re-send under a deleted id with a later or an earlier time is a conflict with the tier\'s copy, looked for at the original\'s time; nothing stored', async () => {
    const { store, asked } = await tieredAndPruned();
    const lastSeq = store.position.lastSeq;
    // Later than anything retention deleted: not looked for by its time.
    const later = await store.appendEncoded([ingested(ev('gone', { timestamp: OLD_MS + 60_000, query: 'DROP TABLE t1' }))]);
    expect(later.stored).toEqual([]);
    expect(later.conflicts.map((c) => c.eventId)).toEqual(['gone']);
    expect(asked).toEqual([new Map([['gone', OLD_MS]])]);
    // Earlier than the original: at or before the newest deleted time (every deleted time is), so
    // it was looked for before too, but at its own time, where the tier holds no copy of it.
    const earlier = await store.appendEncoded([ingested(ev('gone', { timestamp: OLD_MS - 60_000 }))]);
    expect(earlier.stored).toEqual([]);
    expect(earlier.conflicts.map((c) => c.eventId)).toEqual(['gone']);
    expect(asked[1]).toEqual(new Map([['gone', OLD_MS]]));
    // The same event with its own time is still a duplicate; so is one sent without `ts`, given the server's time.
    expect(await store.appendEncoded([ingested(ev('gone'))])).toMatchObject({ stored: [], duplicates: 1, conflicts: [] });
    expect(await store.appendEncoded([{ ...ingested(ev('gone', { timestamp: OLD_MS + 90_000 })), timeAssigned: true }])).toMatchObject({ stored: [], duplicates: 1, conflicts: [] });
    expect(store.position.lastSeq).toBe(lastSeq);
    expect(await store.getByEventId('gone')).toBeUndefined();
    // Control: an event retention deleted that was never tiered (a node without a tier) leaves no
    // id behind, since no tier holds a copy: a later re-send is stored, as before.
    await store.appendEncoded([ingested(ev('untiered', { timestamp: OLD_MS + 20_000 }))]);
    expect((await store.pruneBefore(OLD_MS + 20_001, 100, async () => true)).deleted).toBe(2);
    expect((await store.appendEncoded([ingested(ev('untiered', { timestamp: OLD_MS + 60_000 }))])).stored.map((e) => e.eventId)).toEqual(['untiered']);
    // Not looked for at all: a kept id would have been, at its deleted event's time.
    expect(asked.some((times) => times.has('untiered'))).toBe(false);
  });

  it('are kept over a restart: a re-send right after open, before the filter is filled, and one after it is filled, are both caught', async () => {
    const { store, location, tier } = await tieredAndPruned();
    await stores.close(store);
    const { store: reopened } = await stores.open(location);
    // The filter is filled in the background; until then every id is read, not ruled out.
    const loadWhenSent = reopened.prunedIdsLoad;
    const { asked } = tierOf(reopened, tier);
    const early = await reopened.appendEncoded([ingested(ev('gone', { timestamp: OLD_MS + 60_000 }))]);
    expect(early.conflicts.map((c) => c.eventId)).toEqual(['gone']);
    expect(early.stored).toEqual([]);
    expect(loadWhenSent).toBe('loading');
    await expect.poll(() => reopened.prunedIdsLoad).toBe('loaded');
    const late = await reopened.appendEncoded([ingested(ev('gone', { timestamp: OLD_MS + 70_000 })), ingested(ev('new', { timestamp: OLD_MS + 70_000 }))]);
    expect(late.conflicts.map((c) => c.eventId)).toEqual(['gone']);
    expect(late.stored.map((e) => e.eventId)).toEqual(['new']);
    expect(asked).toEqual([new Map([['gone', OLD_MS]]), new Map([['gone', OLD_MS]])]);
  });

  it('with the filter at its memory bound, every id is read: a re-send is still caught, and the figures say the filter is full', async () => {
    const { store, location } = await tieredAndPruned();
    await stores.close(store);
    // Too little memory for even the first filter: full at the first id kept.
    const { store: bounded } = await stores.open(location, undefined, { prunedIdsFilterBytesMax: 1_000 });
    await expect.poll(() => bounded.prunedIdsLoad).toBe('loaded');
    expect(bounded.prunedIdsFigures).toMatchObject({ ids: 1, filterBytes: 0, filterFull: true });
    const { asked } = tierOf(bounded, new Map([['gone', JSON.stringify({ ...ev('gone'), seq: 1 })]]));
    const resent = await bounded.appendEncoded([ingested(ev('gone', { timestamp: OLD_MS + 60_000 }))]);
    expect(resent.stored).toEqual([]);
    expect(asked).toEqual([new Map([['gone', OLD_MS]])]);
  });

  it('ordinary ingest after a prune reads no deleted id and asks the tier nothing; a re-send reads its own id only', async () => {
    const { store, asked } = await tieredAndPruned();
    await expect.poll(() => store.prunedIdsLoad).not.toBe('loading');
    const getMany = vi.spyOn(Level.prototype, 'getMany');
    try {
      const prunedIdReads = () => getMany.mock.calls.flatMap((call) => (call[0] as string[]).filter((key) => key.startsWith('p!')));
      const fresh = Array.from({ length: 500 }, (_, i) => ingested(ev(`new-${i}`, { timestamp: OLD_MS + 100_000 + i })));
      expect((await store.appendEncoded(fresh)).stored).toHaveLength(500);
      expect(prunedIdReads()).toEqual([]);
      expect(asked).toEqual([]);
      const resent = await store.appendEncoded([ingested(ev('gone', { timestamp: OLD_MS + 200_000 })), ingested(ev('new-500', { timestamp: OLD_MS + 200_000 }))]);
      expect(resent.conflicts.map((c) => c.eventId)).toEqual(['gone']);
      expect(prunedIdReads()).toEqual(['p!gone']);
    } finally {
      getMany.mockRestore();
    }
    // Filled, not failed: what ruled the ids out was the filter.
    expect(store.prunedIdsLoad).toBe('loaded');
  });

  it('a re-send whose first copy the log held when it was chosen, deleted by retention before it was written, is chosen again and judged against the tier at the original\'s time', async () => {
    const { store } = await stores.open();
    await store.appendEncoded([ingested(ev('gone')), ingested(ev('A', { timestamp: OLD_MS + 5_000 }))]);
    const tier = new Map([
      ['gone', JSON.stringify(await store.getByEventId('gone'))],
      ['A', JSON.stringify(await store.getByEventId('A'))],
    ]);
    expect(await pruneTiered(store, OLD_MS + 1)).toBe(1);
    const lastSeq = store.position.lastSeq;
    const { asked, release } = gatedLookup(store, tier);
    // A retry of `gone` (looked up, and waits) with other content under A, timed after anything
    // retention will have deleted: A is in the log now, so it is left to the writer.
    const pending = store.appendEncoded([ingested(ev('gone')), ingested(ev('A', { timestamp: OLD_MS + 6_000, query: 'DROP TABLE t1' }))]);
    await expect.poll(() => asked.length).toBe(1);
    expect(asked[0]).toEqual(new Map([['gone', OLD_MS]]));
    // Retention deletes A while `gone` is looked for; the newest deleted time stays before the re-send's.
    expect(await pruneTiered(store, OLD_MS + 5_001)).toBe(1);
    expect(store.prunedTimeMax).toBe(OLD_MS + 5_000);
    release();
    const result = await pending;
    expect(asked[1]).toEqual(new Map([['gone', OLD_MS], ['A', OLD_MS + 5_000]]));
    expect(result.stored).toEqual([]);
    expect(result.duplicates).toBe(1);
    expect(result.conflicts.map((c) => c.eventId)).toEqual(['A']);
    expect(store.position.lastSeq).toBe(lastSeq);
    expect(await store.getByEventId('A')).toBeUndefined();
  });

  it('a standby\'s own retention keeps the ids it deletes: leading later, it judges a re-send against the tier', async () => {
    const { store: leader } = await stores.open();
    await leader.appendEncoded([ingested(ev('gone')), ingested(ev('kept', { timestamp: OLD_MS + 10_000 }))]);
    const tier = new Map([['gone', JSON.stringify(await leader.getByEventId('gone'))]]);
    const { store: standby } = await stores.open();
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 10), []);
    expect(await pruneTiered(standby, OLD_MS + 1)).toBe(1);
    const { asked } = tierOf(standby, tier);
    const result = await standby.appendEncoded([ingested(ev('gone', { timestamp: OLD_MS + 60_000, query: 'DROP TABLE t1' }))]);
    expect(result.stored).toEqual([]);
    expect(result.conflicts.map((c) => c.eventId)).toEqual(['gone']);
    expect(asked).toEqual([new Map([['gone', OLD_MS]])]);
  });

  it('a standby that knows a watermark past its log deletes only what it counted as tiered: every deleted id is kept, the ledger counts each tiered', async () => {
    const { store: leader } = await stores.open();
    await leader.appendEncoded(Array.from({ length: 10 }, (_, i) => ingested(ev(`e${i + 1}`, { timestamp: OLD_MS + i }))));
    const tier = new Map(await Promise.all(Array.from({ length: 10 }, async (_, i) => [`e${i + 1}`, JSON.stringify(await leader.getByEventId(`e${i + 1}`))] as const)));
    const watermark = leader.position.lastSeq;
    const entries = await leader.readEncodedBySeq(0, 100);
    const { store: standby } = await stores.open();
    await standby.applyReplicated(entries.slice(0, 5), []);
    // Retention's policy counts what is tiered (here up to its log's end), then replication
    // applies the rest, then the prune runs under the leader's watermark.
    await standby.countTieredThrough(watermark);
    expect(standby.tieredCountedThrough).toBe(5);
    await standby.applyReplicated(entries.slice(5), []);
    expect((await standby.pruneBefore(OLD_MS + 1_000, 100, async () => true, watermark, true)).deleted).toBe(5);
    await standby.countTieredThrough(watermark);
    expect((await standby.pruneBefore(OLD_MS + 1_000, 100, async () => true, watermark, true)).deleted).toBe(5);
    const days = await standby.dayLedger();
    expect(days.reduce((sum, row) => sum + row.tiered, 0)).toBe(10);
    expect(days.reduce((sum, row) => sum + row.pruned, 0)).toBe(10);
    // Leading now, it refuses other content under any of the ten ids.
    const { asked } = tierOf(standby, tier);
    const resent = await standby.appendEncoded([ingested(ev('e8', { timestamp: OLD_MS + 60_000, query: 'DROP TABLE t1' })), ingested(ev('e2', { timestamp: OLD_MS + 60_000, query: 'DROP TABLE t1' }))]);
    expect(resent.stored).toEqual([]);
    expect(resent.conflicts.map((c) => c.eventId)).toEqual(['e8', 'e2']);
    expect(asked).toEqual([new Map([['e8', OLD_MS + 7], ['e2', OLD_MS + 1]])]);
  });

  it('closing the store while the filter is being filled stops the scan and closes its iterator: nothing thrown, the store reopens', async () => {
    const { store, location } = await tieredAndPruned();
    await stores.close(store);
    // As a store holds them after years of retention: many pages for the scan to read.
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    await db.batch(Array.from({ length: 50_000 }, (_, i) => ({ type: 'put' as const, key: `p!old-${i}`, value: String(OLD_MS - 1_000 - i) })));
    await db.close();
    const { store: reopened } = await stores.open(location);
    expect(reopened.prunedIdsLoad).toBe('loading');
    await stores.close(reopened);
    // Stopped, not failed: the scan ended before LevelDB closed, instead of reading a closed database.
    expect(reopened.prunedIdsLoad).toBe('stopped');
    const { store: again } = await stores.open(location);
    await expect.poll(() => again.prunedIdsLoad).toBe('loaded');
  });
});

const DAY = 24 * 60 * 60 * 1000;

/** The `p!` keys a closed store at `location` holds, with their values. */
async function keptIds(location: string): Promise<Array<[string, string]>> {
  const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  try {
    return await db.iterator({ gte: 'p!', lt: 'p"' }).all();
  } finally {
    await db.close();
  }
}

describe('how long deleted ids are kept (prunedIdsKeepMs)', () => {
  it('a sweep deletes the ids whose events are older than that, keeps younger ones, and a prune keeps no id already past it', async () => {
    let nowMs = OLD_MS + DAY;
    const { store, location } = await stores.open(undefined, () => nowMs, { prunedIdsKeepMs: 10 * DAY });
    await store.appendEncoded([ingested(ev('a')), ingested(ev('b', { timestamp: OLD_MS + 5 * DAY })), ingested(ev('c', { timestamp: OLD_MS + 9 * DAY }))]);
    const tier = new Map(await Promise.all(['a', 'b'].map(async (id) => [id, JSON.stringify(await store.getByEventId(id))] as const)));
    nowMs = OLD_MS + 6 * DAY;
    expect(await pruneTiered(store, OLD_MS + 5 * DAY + 1)).toBe(2);
    // Eleven days after a's time, four after b's: a's id is past ten days, b's is not (by a clock
    // the log's ingest time has reached: an event ingested now).
    nowMs = OLD_MS + 11 * DAY;
    await store.appendEncoded([ingested(ev('now', { timestamp: nowMs }))]);
    expect(await store.sweepPrunedIds()).toBe('loaded');
    const { asked } = tierOf(store, tier);
    // a's id is no longer kept: a re-send timed after anything deleted is judged by its time alone, as before ids were kept.
    const resentA = await store.appendEncoded([ingested(ev('a', { timestamp: OLD_MS + 10 * DAY, query: 'DROP TABLE t1' }))]);
    expect(resentA.stored.map((e) => e.eventId)).toEqual(['a']);
    expect(asked).toEqual([]);
    const resentB = await store.appendEncoded([ingested(ev('b', { timestamp: OLD_MS + 10 * DAY, query: 'DROP TABLE t1' }))]);
    expect(resentB.stored).toEqual([]);
    expect(resentB.conflicts.map((c) => c.eventId)).toEqual(['b']);
    expect(asked).toEqual([new Map([['b', OLD_MS + 5 * DAY]])]);
    // c, deleted now, was timed nine days after OLD_MS: younger than ten days, kept; the re-sent a
    // (timed ten days after) too. A prune of an event already past ten days keeps nothing of it.
    nowMs = OLD_MS + 13 * DAY;
    await store.appendEncoded([ingested(ev('d', { timestamp: OLD_MS + 2 * DAY }))]);
    expect(await pruneTiered(store, OLD_MS + 10 * DAY + 1)).toBe(3);
    await stores.close(store);
    expect(await keptIds(location)).toEqual([
      ['p!a', String(OLD_MS + 10 * DAY)],
      ['p!b', String(OLD_MS + 5 * DAY)],
      ['p!c', String(OLD_MS + 9 * DAY)],
    ]);
  });

  it('a store opened with its clock far ahead of its log keeps its ids: expiry goes by the log\'s newest ingest time at most', async () => {
    let nowMs = OLD_MS + DAY;
    const { store, location } = await stores.open(undefined, () => nowMs, { prunedIdsKeepMs: 10 * DAY });
    await store.appendEncoded([ingested(ev('a')), ingested(ev('b', { timestamp: OLD_MS + 5 * DAY }))]);
    expect(await pruneTiered(store, OLD_MS + 1)).toBe(1);
    await stores.close(store);
    // Opened once with the clock 400 days ahead (a stepped host clock, a debug offset).
    nowMs = OLD_MS + 400 * DAY;
    const { store: ahead } = await stores.open(location, () => nowMs, { prunedIdsKeepMs: 10 * DAY });
    await expect.poll(() => ahead.prunedIdsLoad).toBe('loaded');
    expect(await ahead.sweepPrunedIds()).toBe('loaded');
    await stores.close(ahead);
    expect(await keptIds(location)).toEqual([['p!a', String(OLD_MS)]]);
  });

  it('an id a prune keeps while a sweep builds the new filter is in that filter', async () => {
    const { store, location } = await stores.open();
    await store.appendEncoded([ingested(ev('gone')), ingested(ev('kept', { timestamp: OLD_MS + 10_000 }))]);
    const tier = new Map([['gone', JSON.stringify(await store.getByEventId('gone'))]]);
    await stores.close(store);
    // Many kept ids, so the sweep reads several pages while the prune runs.
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.batch(Array.from({ length: 60_000 }, (_, i) => ({ type: 'put' as const, key: `p!earlier-${i}`, value: String(OLD_MS - 1_000 - i) })));
    await db.close();
    const { store: reopened } = await stores.open(location);
    await expect.poll(() => reopened.prunedIdsLoad).toBe('loaded');
    const sweeping = reopened.sweepPrunedIds();
    expect(await pruneTiered(reopened, OLD_MS + 1)).toBe(1);
    expect(await sweeping).toBe('loaded');
    const { asked } = tierOf(reopened, tier);
    const result = await reopened.appendEncoded([ingested(ev('gone', { timestamp: OLD_MS + 60_000, query: 'DROP TABLE t1' }))]);
    expect(result.stored).toEqual([]);
    expect(result.conflicts.map((c) => c.eventId)).toEqual(['gone']);
    expect(asked).toEqual([new Map([['gone', OLD_MS]])]);
  });
});

const SECRET = 'erin-secret-user';

/** Appends an erasure of `fields` of the records named (by eventId and seq), timed after everything pruned here. */
async function erase(store: AuditStore, records: Array<{ eventId: string; seq: number }>, fields: Array<'userId' | 'query'> = ['userId']): Promise<void> {
  const details = encodeErasureDetails({ v: 1, fields, records });
  await store.append([{ ...ev(`erase-${records[0]!.eventId}-${fields.join('+')}`, { timestamp: OLD_MS + 50_000 }), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details }]);
}

/** Every stored event holding the erased value anywhere in its text. */
async function holdingSecret(store: AuditStore): Promise<string[]> {
  return (await store.readBySeq(0, 1_000)).filter((e) => JSON.stringify(e).includes(SECRET)).map((e) => e.eventId);
}

/** A store that held `x` (userId SECRET, not erased) until retention deleted it. */
async function storedAndPruned() {
  const { store, location } = await stores.open();
  await store.appendEncoded([ingested(ev('x', { userId: SECRET }))]);
  const seq = (await store.getByEventId('x'))!.seq;
  expect((await store.pruneBefore(OLD_MS + 1, 100, async () => true)).deleted).toBe(1);
  return { store, location, seq };
}

/** A store holding `x` (userId SECRET), erased, then deleted by retention (the erasure record kept). */
async function erasedAndPruned() {
  const { store, location } = await stores.open();
  await store.appendEncoded([ingested(ev('x', { userId: SECRET }))]);
  const seq = (await store.getByEventId('x'))!.seq;
  await erase(store, [{ eventId: 'x', seq }]);
  const tierCopy = JSON.stringify(await store.getByEventId('x'));
  expect(tierCopy).not.toContain(SECRET);
  expect((await store.pruneBefore(OLD_MS + 1, 100, async () => true)).deleted).toBe(1);
  expect(await store.getByEventId('x')).toBeUndefined();
  return { store, location, seq, tierCopy };
}

/** The re-send a source makes without `ts`: the original values, the server's time now (after anything deleted). */
const resent = (overrides: Partial<AuditEvent> = {}): EncodedEvent => ({ ...ingested(ev('x', { userId: SECRET, timestamp: OLD_MS + 100_000, ...overrides })), timeAssigned: true });

describe('events an erasure named', () => {
  it('are never stored again once retention deleted the erased copy, whatever their time, with no tier at all; an id never erased still is', async () => {
    const { store, location } = await erasedAndPruned();
    const lastSeq = store.position.lastSeq;
    expect(await store.appendEncoded([resent()])).toEqual({ stored: [], duplicates: 1, conflicts: [], heldByTier: ['x'] });
    // Not even under other content: the id is spent.
    expect((await store.appendEncoded([resent({ query: 'DROP TABLE t1' })])).stored).toEqual([]);
    expect(store.position.lastSeq).toBe(lastSeq);
    expect(await holdingSecret(store)).toEqual([]);
    // Control: a deleted event no erasure named, re-sent after the newest deleted time, is stored (no tier to ask).
    await store.appendEncoded([ingested(ev('plain'))]);
    expect((await store.pruneBefore(OLD_MS + 1, 100, async () => true)).deleted).toBe(1);
    expect((await store.appendEncoded([ingested(ev('plain', { timestamp: OLD_MS + 100_000 }))])).stored.map((e) => e.eventId)).toEqual(['plain']);
    // Kept over a restart.
    await stores.close(store);
    const { store: reopened } = await stores.open(location);
    expect((await reopened.appendEncoded([resent()])).duplicates).toBe(1);
    expect(await holdingSecret(reopened)).toEqual([]);
  });

  it('are judged against the tier\'s erased copy when sent with their time (a duplicate, or a conflict for other content) and not looked for beyond it; neither stored', async () => {
    const { store, tierCopy } = await erasedAndPruned();
    const asked: Array<Map<string, number>> = [];
    store.setTieredCopyLookup(async (times) => {
      asked.push(new Map(times));
      return new Map([...times.keys()].filter((id) => id === 'x').map((id) => [id, tierCopy]));
    });
    // Sent with its time: found in the tier there; the erased field counts as equal.
    const withTime = ingested(ev('x', { userId: SECRET }));
    expect(await store.appendEncoded([withTime])).toMatchObject({ stored: [], duplicates: 1, conflicts: [] });
    expect(asked).toEqual([new Map([['x', OLD_MS]])]);
    const other = await store.appendEncoded([ingested(ev('x', { userId: SECRET, query: 'DROP TABLE t1' }))]);
    expect(other.stored).toEqual([]);
    expect(other.conflicts.map((c) => c.eventId)).toEqual(['x']);
    // Without its time (the server's, after anything deleted): not looked for (a scan of every
    // file would only tell a duplicate from a conflict), not stored.
    expect(await store.appendEncoded([resent()])).toMatchObject({ stored: [], duplicates: 1 });
    expect(asked).toHaveLength(2);
    expect(await holdingSecret(store)).toEqual([]);
  });

  it('an erasure and a re-send written in the same writer turn: the re-send is chosen again and not stored', async () => {
    const { store, seq } = await storedAndPruned();
    // Queued in one tick under one sequencer (as on a cluster leader, where ingest and erasures share the elector's): one group.
    const [erased, result] = await Promise.all([erase(store, [{ eventId: 'x', seq }]), store.appendEncoded([resent()])]);
    expect(erased).toBeUndefined();
    expect(result).toMatchObject({ stored: [], duplicates: 1 });
    expect(await holdingSecret(store)).toEqual([]);
  });

  it('a re-send chosen by its time whose lookup found no copy, with an erasure written before its turn: chosen again, not stored', async () => {
    const { store, seq } = await storedAndPruned();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let lookups = 0;
    // The tier cannot be read (the node's lookup then answers no copies).
    store.setTieredCopyLookup(async () => {
      if (++lookups === 1) await gate;
      return new Map();
    });
    const pending = store.appendEncoded([ingested(ev('x', { userId: SECRET }))]);
    await expect.poll(() => lookups).toBe(1);
    // The lookup answers, and in the same tick an erasure is queued ahead of the re-send's writer turn.
    release();
    await Promise.all([erase(store, [{ eventId: 'x', seq }]), pending]);
    expect((await pending).stored).toEqual([]);
    expect(await holdingSecret(store)).toEqual([]);
  });

  it('an erased event moved to the outbox by a log cut and ordered again (its fields hold the marker) is stored again, with its erasure: nothing acknowledged is lost', async () => {
    const { store } = await stores.open();
    await store.appendEncoded([ingested(ev('x', { userId: SECRET, timestamp: OLD_MS + 200_000 }))]);
    const seq = (await store.getByEventId('x'))!.seq;
    await erase(store, [{ eventId: 'x', seq }]);
    expect(await store.divertSuffixToOutbox(seq)).toMatchObject({ moved: 2 });
    const outbox = await store.readOutbox(10);
    // What the outbox forwarder does when this node leads again.
    await appendForwarded(store, outbox.map((entry) => encodeEvent(JSON.parse(entry.json) as AuditEvent)), {});
    await store.deleteOutbox(outbox.map((entry) => entry.key));
    expect((await store.getByEventId('x'))?.userId).toBe('[erased by auditlake]');
    expect(await holdingSecret(store)).toEqual([]);
    // The values themselves still never come back.
    expect((await store.appendEncoded([resent({ timestamp: OLD_MS + 300_000 })])).stored).toEqual([]);
  });

  it('a request repeating an erased id, first with the marker and an old time, then with the values: neither stored, and the append ends', async () => {
    const { store, tierCopy: _ } = await erasedAndPruned();
    store.setTieredCopyLookup(async () => new Map());
    const lastSeq = store.position.lastSeq;
    const marked = ingested(ev('x', { userId: '[erased by auditlake]', timestamp: 0 }));
    const result = await store.appendEncoded([marked, resent()]);
    expect(result.stored).toEqual([]);
    expect(store.position.lastSeq).toBe(lastSeq);
    expect(await holdingSecret(store)).toEqual([]);
  });

  it('an event erased in one field before and in another by an erasure earlier in the same write is judged by both', async () => {
    const { store } = await stores.open();
    await store.appendEncoded([ingested(ev('x', { userId: SECRET, query: 'SELECT secret' }))]);
    const seq = (await store.getByEventId('x'))!.seq;
    await erase(store, [{ eventId: 'x', seq }], ['query']);
    expect((await store.pruneBefore(OLD_MS + 1, 100, async () => true)).deleted).toBe(1);
    // userId erased now, in the same write as a re-send holding the marker in query but the user id itself.
    const [, result] = await Promise.all([erase(store, [{ eventId: 'x', seq }], ['userId']), store.appendEncoded([resent({ query: '[erased by auditlake]' })])]);
    expect(result.stored).toEqual([]);
    expect(await holdingSecret(store)).toEqual([]);
  });

  it('an erased id kept in the form of an earlier version (a seq, not the fields) counts as every field erased', async () => {
    const { store, location } = await erasedAndPruned();
    await stores.close(store);
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    await db.put('v!x', '000000000000007b');
    await db.close();
    const { store: reopened } = await stores.open(location);
    // Only the query differs from the marker-free original: still refused (every field counts as erased).
    expect((await reopened.appendEncoded([resent({ userId: '[erased by auditlake]' })])).stored).toEqual([]);
  });

  it('an erasure whose write failed leaves no id refused: nothing was erased', async () => {
    const { store, seq } = await storedAndPruned();
    let calls = 0;
    // The term changes while the erasure is prepared: its write fails, nothing stored.
    const details = encodeErasureDetails({ v: 1, fields: ['userId'], records: [{ eventId: 'x', seq }] });
    const failing = store.append([{ ...ev('erase-x', { timestamp: OLD_MS + 50_000 }), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details }], { sequencer: () => (++calls === 1 ? 1 : 2) });
    await expect(failing).rejects.toThrow(/term changed/);
    expect((await store.appendEncoded([resent()])).stored.map((e) => e.eventId)).toEqual(['x']);
  });

  it('a standby that applied the erasure refuses the re-send too once it leads, also after a restart', async () => {
    const { store: leader } = await stores.open();
    await leader.appendEncoded([ingested(ev('x', { userId: SECRET }))]);
    await erase(leader, [{ eventId: 'x', seq: (await leader.getByEventId('x'))!.seq }]);
    const { store: standby, location } = await stores.open();
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 10), []);
    expect((await standby.pruneBefore(OLD_MS + 1, 100, async () => true)).deleted).toBe(1);
    expect((await standby.appendEncoded([resent()])).stored).toEqual([]);
    await stores.close(standby);
    const { store: reopened } = await stores.open(location);
    expect((await reopened.appendEncoded([resent()])).stored).toEqual([]);
    expect(await holdingSecret(reopened)).toEqual([]);
  });

  it('a standby with the record chain off applies the leader\'s erasure all the same: no copy of the erased value stays there', async () => {
    const { store: leader } = await stores.open();
    await leader.appendEncoded([ingested(ev('x', { userId: SECRET })), ingested(ev('y', { timestamp: OLD_MS + 5 }))]);
    const { store: standby } = await stores.open(undefined, undefined, { chain: false });
    // x reaches the standby before the erasure does, as it would in a cluster.
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 10), []);
    expect(await holdingSecret(standby)).toEqual(['x']);
    await erase(leader, [{ eventId: 'x', seq: (await leader.getByEventId('x'))!.seq }]);
    await standby.applyReplicated(await leader.readEncodedBySeq(2, 10), []);
    expect(await holdingSecret(standby)).toEqual([]);
    expect((await standby.getByEventId('x'))?.userId).toBe('[erased by auditlake]');
    // Nor in the user index, which an indexed search reads.
    const found: string[] = [];
    for await (const event of standby.search({ user: SECRET, action: 'all' })) found.push(event.eventId);
    expect(found).toEqual([]);
    // And it keeps the id: leading later, it does not store a re-send.
    expect((await standby.pruneBefore(OLD_MS + 1, 100, async () => true)).deleted).toBe(1);
    expect((await standby.appendEncoded([resent()])).stored).toEqual([]);
  });

  it('a store whose erasures were applied before erased ids were kept learns them from its erasure records when opened', async () => {
    const { store, location } = await erasedAndPruned();
    await stores.close(store);
    // As a store of the version before: no erased-id keys, no mark that they were recorded.
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    const keys = await db.keys({ gte: 'v!', lt: 'v"' }).all();
    expect(keys).toEqual(['v!x']);
    await db.batch([...keys.map((key) => ({ type: 'del' as const, key })), { type: 'del', key: 'l!erasedIds' }]);
    await db.close();
    const { store: reopened } = await stores.open(location);
    expect((await reopened.appendEncoded([resent()])).stored).toEqual([]);
    expect(await holdingSecret(reopened)).toEqual([]);
  });

  it('a re-send chosen before an erasure of its deleted copy was written is chosen again, and not stored', async () => {
    const { store, seq } = await storedAndPruned();
    // X is looked up first and waits; the tier is asked for nothing it holds.
    const { asked, release } = gatedLookup(store, new Map());
    const pending = store.appendEncoded([ingested(ev('X', { timestamp: OLD_MS - 1 })), resent()]);
    await expect.poll(() => asked.length).toBe(1);
    // x was not a candidate: timed after the newest deleted time, no erasure named it yet.
    expect(asked[0]).toEqual(new Map([['X', OLD_MS - 1]]));
    // The erasure of x (held only by the tier now) lands while X is looked for.
    await erase(store, [{ eventId: 'x', seq }]);
    release();
    const result = await pending;
    // Chosen again: x is now judged as erased (not looked for beyond its time), X looked for again.
    expect(asked[1]).toEqual(new Map([['X', OLD_MS - 1]]));
    expect(result.stored.map((e) => e.eventId)).toEqual(['X']);
    expect(result.duplicates).toBe(1);
    expect(await holdingSecret(store)).toEqual([]);
  });
});
