// Goal: each store keeps the term runs of its own log — written with the entries that start them, cut with a truncation, copied from the sender on replication (also across gaps retention made) — and its log end survives losing its last entries.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordHasher } from '@auditlake/integrity';
import { encodeEvent, type AuditEvent, type EncodedEvent } from '@auditlake/model';
import { Level } from 'level';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AuditStore } from '../src/index.js';

async function location(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-runs-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'store');
}

function ev(eventId: string, timestamp = 1_000): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Insert', resource: '', decision: '', tables: [], query: '', details: '', timestamp };
}

/** A store whose sequencer stamps whatever `term.value` is. */
async function storeWithTerm(loc?: string, now?: () => number): Promise<{ store: AuditStore; term: { value: number }; location: string }> {
  const term = { value: 1 };
  const where = loc ?? (await location());
  const store = await AuditStore.open({ location: where, sequencer: () => term.value, ...(now ? { now } : {}) });
  onTestFinished(() => store.close());
  return { store, term, location: where };
}

const ids = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => ev(`${prefix}${i + 1}`));

describe('term runs', () => {
  it('start where a term this node orders starts, answer termAt for every seq, and survive a reopen', async () => {
    const { store, term, location: loc } = await storeWithTerm();
    expect(store.termAt(0)).toBe(0);
    await store.append(ids(3, 'a'));
    await store.append(ids(2, 'b'));
    term.value = 4;
    await store.append(ids(2, 'c'));
    expect([1, 3, 5, 6, 7].map((s) => store.termAt(s))).toEqual([1, 1, 1, 4, 4]);
    expect(store.termStarts()).toEqual([{ term: 1, firstSeq: 1 }, { term: 4, firstSeq: 6 }]);
    expect(store.termStarts(5)).toEqual([{ term: 4, firstSeq: 6 }]);
    expect(store.runAt(7)).toEqual({ firstSeq: 6, term: 4, received: false });
    await store.close();
    const reopened = await AuditStore.open({ location: loc });
    onTestFinished(() => reopened.close());
    expect(reopened.termStarts()).toEqual([{ term: 1, firstSeq: 1 }, { term: 4, firstSeq: 6 }]);
    expect(reopened.position).toMatchObject({ lastSeq: 7, lastTerm: 4 });
  });

  it('are copied from the sender on replication, with the sender’s boundaries inside a gap it pruned', async () => {
    const { store: leader, term } = await storeWithTerm();
    await leader.append(ids(3, 'a'));
    term.value = 2;
    await leader.append(ids(3, 'b'));
    term.value = 5;
    await leader.append(ids(3, 'c'));
    // The leader has runs 1@1, 2@4, 5@7; a standby that missed seqs 3–7 (pruned on the
    // leader) still learns that term 2 held 4–6 and term 5 started at 7.
    const standby = await AuditStore.open({ location: await location() });
    onTestFinished(() => standby.close());
    const all = await leader.readEncodedBySeq(0, 100);
    expect(await standby.applyReplicated(all.slice(0, 2), leader.termStarts(0))).toBe(2);
    expect(await standby.applyReplicated(all.slice(7), leader.termStarts(2))).toBe(2);
    expect(standby.termStarts()).toEqual(leader.termStarts());
    expect([2, 3, 4, 6, 7, 9].map((s) => standby.termAt(s))).toEqual([1, 1, 2, 2, 5, 5]);
    expect(standby.runAt(8)).toEqual({ firstSeq: 7, term: 5, received: true });
    expect(standby.position).toMatchObject({ lastSeq: 9, lastTerm: 5 });
  });

  it('start a new run where received entries follow entries this node ordered in the same term', async () => {
    // One clock and the same record keys for both: the two logs then hold the same first entries,
    // record chain included (as two logs agreeing on an entry's seq and term do).
    const now = () => 1_000;
    const hasher = new RecordHasher();
    const keyed = (events: AuditEvent[]): EncodedEvent[] =>
      events.map((event) => {
        const salt = Buffer.alloc(16, event.eventId).toString('base64url');
        return { ...encodeEvent(event), chainContent: { ...hasher.contentOfValues(event, salt), salt } };
      });
    const { store, term } = await storeWithTerm(undefined, now);
    term.value = 3;
    await store.appendEncoded(keyed(ids(2, 'own')));
    const { store: other, term: otherTerm } = await storeWithTerm(undefined, now);
    otherTerm.value = 3;
    await other.appendEncoded(keyed([...ids(2, 'own'), ...ids(2, 'more')]));
    await store.applyReplicated((await other.readEncodedBySeq(2, 10)), other.termStarts(2));
    expect(store.runAt(2)).toEqual({ firstSeq: 1, term: 3, received: false });
    expect(store.runAt(3)).toEqual({ firstSeq: 3, term: 3, received: true });
    expect(store.termStarts()).toEqual([{ term: 3, firstSeq: 1 }]);
  });

  it('are cut with a truncation, atomically with the entries moved to the outbox', async () => {
    const { store, term, location: loc } = await storeWithTerm();
    await store.append(ids(2, 'a'));
    term.value = 2;
    await store.append(ids(3, 'b'));
    term.value = 3;
    await store.append(ids(1, 'c'));
    expect(await store.divertSuffixToOutbox(4)).toEqual({ moved: 3, terms: { 2: 2, 3: 1 } });
    expect(store.termStarts()).toEqual([{ term: 1, firstSeq: 1 }, { term: 2, firstSeq: 3 }]);
    expect(store.position).toMatchObject({ lastSeq: 3, lastTerm: 2 });
    expect((await store.outboxEventIds()).sort()).toEqual(['b2', 'b3', 'c1']);
    // Cutting inside the first run leaves it, shortened.
    expect((await store.divertSuffixToOutbox(2)).moved).toBe(2);
    expect(store.termStarts()).toEqual([{ term: 1, firstSeq: 1 }]);
    await store.close();
    const reopened = await AuditStore.open({ location: loc, sequencer: () => 9 });
    onTestFinished(() => reopened.close());
    expect(reopened.position).toMatchObject({ lastSeq: 1, lastTerm: 1 });
    expect((await reopened.append([ev('d1')])).stored[0]).toMatchObject({ seq: 2, term: 9 });
    expect(reopened.termStarts()).toEqual([{ term: 1, firstSeq: 1 }, { term: 9, firstSeq: 2 }]);
  });

  it('keep answering for entries retention deleted, and the log end and ingestTs survive deleting the last ones and a reopen', async () => {
    let now = 5_000;
    const loc = await location();
    const term = { value: 2 };
    const store = await AuditStore.open({ location: loc, sequencer: () => term.value, now: () => now });
    await store.append([ev('old1', 10), ev('old2', 20)]);
    term.value = 3;
    now = 6_000;
    await store.append([ev('old3', 30)]);
    const pruned = await store.pruneBefore(1_000, 100, async () => true);
    expect(pruned.deleted).toBe(3);
    expect([1, 2, 3].map((s) => store.termAt(s))).toEqual([2, 2, 3]);
    await store.close();
    now = 1_000;
    // No time passes on the clock that never steps: ingestTs stays where the log ends.
    const reopened = await AuditStore.open({ location: loc, sequencer: () => 4, now: () => now, monotonicNow: () => 0 });
    onTestFinished(() => reopened.close());
    expect(reopened.position).toEqual({ lastSeq: 3, lastTerm: 3, lastIngestTs: 6_000 });
    expect((await reopened.append([ev('new', 40)])).stored[0]).toMatchObject({ seq: 4, ingestTs: 6_000 });
  });

  it('are rebuilt once from the log of a store written before they were kept', async () => {
    const { store, term, location: loc } = await storeWithTerm();
    await store.append(ids(2, 'a'));
    term.value = 6;
    await store.append(ids(2, 'b'));
    await store.close();
    // Remove what an older version never wrote.
    const db = new Level<string, string>(loc);
    await db.open();
    const runKeys = await db.keys({ gte: 'r!', lt: 'r"' }).all();
    await db.batch([...runKeys, 'l!logEnd'].map((key) => ({ type: 'del' as const, key })));
    await db.close();
    const reopened = await AuditStore.open({ location: loc });
    onTestFinished(() => reopened.close());
    expect(reopened.termStarts()).toEqual([{ term: 1, firstSeq: 1 }, { term: 6, firstSeq: 3 }]);
    expect(reopened.position).toMatchObject({ lastSeq: 4, lastTerm: 6 });
    // Who ordered them is unknown: counted as this node's own.
    expect(reopened.runAt(4)?.received).toBe(false);
  });
});
