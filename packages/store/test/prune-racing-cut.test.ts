// Goal: a retention batch reads what it deletes before the writer's turn in which it deletes; a cut of the log in between (a standby's divergent suffix moved to its outbox and the leader's entries applied at those seqs) or an erasure rewriting an entry read makes the batch read again, so it never deletes the entry now at a seq it read, never counts a pruned event the cut took back, never records that seq as pruned, and never leaves an index key of the rewritten values behind: the log, its day ledger, its indexes and a node catching up from it stay right.
import { encodeErasureDetails, INTEGRITY_ACTIONS } from '@auditlake/integrity';
import { SELF_SOURCE, type AuditEvent, type StoredEvent } from '@auditlake/model';
import { Level } from 'level';
import { describe, expect, it } from 'vitest';
import { useTempStores } from './temp-stores.js';

const stores = useTempStores('prune-racing-cut-');
const DAY_MS = 86_400_000;
const NOW = Date.UTC(2026, 5, 1);

function ev(eventId: string, timestamp: number, sourceSeq: number): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: 'ALLOW', tables: [], query: '', details: '', timestamp, sourceId: 'src', sourceSeq };
}

describe('retention racing a cut of the log', () => {
  it("reads its batch again after a cut: the leader's entry at the cut seq stays, nothing is counted or recorded as pruned, and a node catching up from this one takes its log", async () => {
    let between: (() => Promise<unknown>) | undefined;
    const { store: leader } = await stores.open(undefined, () => NOW);
    const { store: standby } = await stores.open(undefined, () => NOW, {
      beforePruneWrite: async () => {
        const cut = between;
        between = undefined;
        await cut?.();
      },
    });
    await leader.append([ev('a1', NOW - 1000, 1), ev('a2', NOW - 900, 2)]);
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 100), leader.termStarts());
    // A deposed leader ordered an old event (imported history) at seq 3 the new leader never got.
    await standby.append([ev('old3', NOW - 400 * DAY_MS, 3)]);
    await leader.append([ev('new3', NOW - 100, 4)]);
    // Between retention's read of old3 and its write, the standby moves its suffix aside and applies the leader's seq 3.
    between = async () => {
      await standby.divertSuffixToOutbox(3);
      await standby.applyReplicated(await leader.readEncodedBySeq(2, 100), leader.termStarts(2));
    };
    const result = await standby.pruneBefore(NOW - 365 * DAY_MS, 100, async () => true);
    expect(between).toBeUndefined();
    expect(result.deleted).toBe(0);
    expect((await standby.readBySeq(0, 100)).map((e) => [e.seq, e.eventId])).toEqual([
      [1, 'a1'],
      [2, 'a2'],
      [3, 'new3'],
    ]);
    expect((await standby.getBySeq(3))?.eventId).toBe('new3');
    expect(standby.prunedRanges).toEqual([]);
    expect(await standby.outboxEventIds()).toEqual(['old3']);
    const rows = await standby.dayLedger();
    expect(rows.filter((row) => row.stored < 0 || row.pruned > 0)).toEqual([]);
    expect(rows).toEqual(await leader.dayLedger());

    // old3 comes back through the leader, ordered after new3; a node catching up from the standby takes its whole log.
    await leader.append([ev('old3', NOW - 400 * DAY_MS, 3)]);
    await standby.applyReplicated(await leader.readEncodedBySeq(3, 100), leader.termStarts(3));
    const { store: fresh } = await stores.open(undefined, () => NOW);
    const entries = await standby.readEncodedBySeq(0, 100);
    await fresh.applyReplicated(entries, standby.termStarts(), await standby.skippedByRetention(0, entries));
    const logOf = async (store: typeof leader) => (await store.readBySeq(0, 100)).map((e) => [e.seq, e.eventId, e.chainHash]);
    expect(await logOf(fresh)).toEqual(await logOf(leader));
    expect(await standby.dayLedger()).toEqual(await leader.dayLedger());
  });
});

describe('retention racing an erasure', () => {
  it('reads its batch again after an erasure rewrote an entry it read: no index key of the rewritten values is left pointing at the deleted entry', async () => {
    let between: (() => Promise<unknown>) | undefined;
    const { store, location } = await stores.open(undefined, () => NOW, {
      beforePruneWrite: async () => {
        const erase = between;
        between = undefined;
        await erase?.();
      },
    });
    const event = (eventId: string, userId: string, timestamp: number): AuditEvent => ({ eventId, userId, source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['hive.s.t'], query: 'SELECT 1', details: '', timestamp });
    await store.append([event('old', 'alice', NOW - 400 * DAY_MS), event('new', 'bob', NOW - 1000)]);
    // Between retention's read of `old` and its write, an erasure of old's userId rewrites it (new index keys for the marker).
    between = async () => {
      const target = (await store.getByEventId('old')) as StoredEvent;
      const details = encodeErasureDetails({ v: 1, fields: ['userId'], records: [{ eventId: 'old', seq: target.seq }] });
      await store.append([{ ...event('erase-old', 'admin', NOW - 10), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details }]);
    };
    const result = await store.pruneBefore(NOW - 365 * DAY_MS, 100, async () => true);
    expect(between).toBeUndefined();
    expect(result.deleted).toBe(1);
    expect((await store.readBySeq(0, 100)).map((e) => e.eventId)).toEqual(['new', 'erase-old']);
    await stores.close(store);
    // Every secondary-index key (x!…, the text index's aside) that ends in seq 1 would point at the deleted entry.
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    const keys = (await db.keys({ gte: 'x!', lt: 'x"' }).all()).filter((key) => !key.startsWith('x!T'));
    await db.close();
    expect(keys.filter((key) => key.endsWith('0000000000000001'))).toEqual([]);
  });
});
