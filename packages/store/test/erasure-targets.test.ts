// Goal: an erasure reaches exactly the records it names, by eventId at seq, wherever they are:
// on a standby holding two copies of one eventId (the first not yet deleted by its own
// retention, the second a re-send the leader stored after deleting the first), whatever order
// its retention and the erasure come in; in the same applied batch as the erasure (a pull or a
// tier adoption that brings a record and the erasure naming it together); and when two
// erasures of one batch name the same record (the second builds on the first).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeErasureDetails, ERASED_MARKER, INTEGRITY_ACTIONS, type ErasableField } from '@auditlake/integrity';
import { SELF_SOURCE, type AuditEvent, type StoredEvent } from '@auditlake/model';
import { Level } from 'level';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AuditStore } from '../src/index.js';
import { localKey, timeKey } from '../src/event-keys.js';

const OLD = Date.UTC(2026, 0, 1);
const SECRET = 'SELECT secret_ssn FROM hr.people';

async function open(): Promise<AuditStore> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-erasure-targets-'));
  const store = await AuditStore.open({ location: join(dir, 'store'), sequencer: () => 1 });
  onTestFinished(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return store;
}

function ev(over: Partial<AuditEvent> = {}): AuditEvent {
  return { eventId: 'X', userId: 'alice', source: 'trino', action: 'data:Select', resource: 'hr.people', decision: 'ALLOW', tables: ['hr.people'], query: SECRET, details: '', timestamp: OLD, ...over };
}

/** An erasure record naming `records`, as the erasure service composes one. */
function erasure(eventId: string, fields: ErasableField[], records: Array<{ eventId: string; seq: number }>): AuditEvent {
  return { ...ev({ eventId, userId: 'admin', resource: '', tables: [], query: '', timestamp: Date.now() }), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details: encodeErasureDetails({ v: 1, fields, records }) };
}

/** Pulls what the standby lacks from the leader, as replication does. */
async function pull(leader: AuditStore, standby: AuditStore): Promise<void> {
  const after = standby.position.lastSeq;
  const entries = await leader.readEncodedBySeq(after, 10_000);
  if (entries.length > 0) await standby.applyReplicated(entries, leader.termStarts(after), await leader.skippedByRetention(after, entries));
}

async function searchIds(store: AuditStore, q: string): Promise<number[]> {
  const seqs: number[] = [];
  for await (const event of store.search({ action: 'all', q })) seqs.push(event.seq);
  return seqs;
}

describe('an erasure and the records it names', () => {
  for (const order of ['pruned, then erased', 'erased, then pruned'] as const) {
    it(`reaches both copies of one eventId on a standby that held both (${order})`, async () => {
      const leader = await open();
      const standby = await open();
      await leader.append([ev(), ev({ eventId: 'other', timestamp: OLD + 5, query: 'SELECT 1' })]);
      await pull(leader, standby);
      // The leader's retention deletes X (tiered); the client re-sends X, stored again at seq 3.
      expect((await leader.pruneBefore(OLD + 1, 100, async () => true)).deleted).toBe(1);
      await leader.append([ev({ timestamp: Date.now() })]);
      await pull(leader, standby);
      expect((await standby.getBySeq(1))?.eventId).toBe('X');
      expect((await standby.getBySeq(3))?.eventId).toBe('X');
      const erase = async () => {
        // The erasure names the tier's copy (seq 1) and the leader's (seq 3).
        await leader.append([erasure('erase-1', ['query'], [{ eventId: 'X', seq: 1 }, { eventId: 'X', seq: 3 }])]);
        await pull(leader, standby);
      };
      const prune = async () => expect((await standby.pruneBefore(OLD + 1, 100, async () => true)).deleted).toBe(1);
      if (order === 'pruned, then erased') {
        await prune();
        // Deleting the first copy leaves the second findable by its eventId.
        expect((await standby.getByEventId('X'))?.seq).toBe(3);
        await erase();
      } else {
        await erase();
        expect((await standby.getBySeq(1))?.query).toBe(ERASED_MARKER);
        await prune();
        expect((await standby.getByEventId('X'))?.seq).toBe(3);
      }
      expect((await standby.getBySeq(3))?.query).toBe(ERASED_MARKER);
      expect((await leader.getBySeq(3))?.query).toBe(ERASED_MARKER);
      expect(await searchIds(standby, 'secret_ssn')).toEqual([]);
    });
  }

  it('reaches a record applied in the same batch as the erasure naming it (a tier adoption, a pull)', async () => {
    const leader = await open();
    await leader.append([ev()]);
    // What a tier holds when its leader died between tiering the erasure record and rewriting the row.
    const unerased = await leader.readEncodedBySeq(0, 10);
    await leader.append([erasure('erase-1', ['query'], [{ eventId: 'X', seq: 1 }])]);
    const erasureEntry = await leader.readEncodedBySeq(1, 10);
    expect((await leader.getBySeq(1))?.query).toBe(ERASED_MARKER);
    const adopter = await open();
    expect((await adopter.adoptSuffix(1, [...unerased, ...erasureEntry], leader.termStarts(0))).adopted).toBe(2);
    const standby = await open();
    await standby.applyReplicated([...unerased, ...erasureEntry], leader.termStarts(0));
    for (const store of [adopter, standby]) {
      expect((await store.getBySeq(1))?.query).toBe(ERASED_MARKER);
      expect(await searchIds(store, 'secret_ssn')).toEqual([]);
    }
  });

  it('applies two erasures of one batch that name the same record: the second builds on the first', async () => {
    const leader = await open();
    await leader.append([ev()]);
    await leader.append([erasure('erase-1', ['query'], [{ eventId: 'X', seq: 1 }]), erasure('erase-2', ['userId'], [{ eventId: 'X', seq: 1 }])]);
    const standby = await open();
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 10), leader.termStarts(0));
    for (const store of [leader, standby]) {
      const record = (await store.getBySeq(1)) as StoredEvent;
      expect([record.query, record.userId]).toEqual([ERASED_MARKER, ERASED_MARKER]);
    }
  });

  it('reaches every record of an erasure naming more than are read together (two reads per 1,000): held, absent, and named twice', async () => {
    const leader = await open();
    const count = 2_500;
    await leader.append(Array.from({ length: count }, (_, i) => ev({ eventId: `e${i}`, userId: `user-${i}` })));
    // Every held one, a seq the log never held, and seqs 1000 and 2001 named again in later chunks.
    const names = [...Array.from({ length: count }, (_, i) => ({ eventId: `e${i}`, seq: i + 1 })), { eventId: 'never', seq: 1 }, { eventId: 'e999', seq: 1000 }, { eventId: 'e2000', seq: 2001 }];
    await leader.append([erasure('erase-1', ['userId'], names)]);
    const standby = await open();
    await pull(leader, standby);
    for (const store of [leader, standby]) {
      const records = await store.readBySeq(0, count + 10);
      const events = records.filter((record) => record.source !== SELF_SOURCE);
      expect(events).toHaveLength(count);
      expect(events.filter((record) => record.userId !== ERASED_MARKER).map((record) => record.eventId)).toEqual([]);
      // The index keys follow: no erased user is found by its name any more.
      for (const i of [0, 999, 1000, 1999, 2000, count - 1]) {
        const found: string[] = [];
        for await (const event of store.search({ action: 'all', user: `user-${i}` })) found.push(event.eventId);
        expect(found, `user-${i}`).toEqual([]);
      }
      // Each named id is recorded as erased, the one never held among them: a re-send with a new time is not stored.
      expect((await store.append([ev({ eventId: 'never', timestamp: OLD + 1 }), ev({ eventId: 'e1500', timestamp: OLD + 1 })])).stored).toEqual([]);
    }
  });

  it('a store holding erasure records it never applied (a node with the chain off, before it applied them) applies them when it opens', async () => {
    const leader = await open();
    await leader.append([ev(), ev({ eventId: 'kept', timestamp: OLD + 1, query: 'SELECT 1' })]);
    const original = await leader.readEncodedBySeq(0, 10);
    await leader.append([erasure('erase-1', ['query'], [{ eventId: 'X', seq: 1 }])]);
    const dir = await mkdtemp(join(tmpdir(), 'auditlake-erasure-targets-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const where = join(dir, 'store');
    const standby = await AuditStore.open({ location: where, chain: false });
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 10), leader.termStarts(0));
    expect((await standby.getBySeq(1))?.query).toBe(ERASED_MARKER);
    await standby.close();
    // As an older version left it: the erasure record stored, the record it names untouched.
    const db = new Level<string, string>(where, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    await db.put(timeKey(OLD, 1), Buffer.from(original[0]!).toString('utf8'));
    await db.del(localKey('erasuresApplied'));
    await db.close();
    const reopened = await AuditStore.open({ location: where, chain: false });
    onTestFinished(() => reopened.close());
    expect((await reopened.getBySeq(1))?.query).toBe(ERASED_MARKER);
    expect((await reopened.getBySeq(2))?.query).toBe('SELECT 1');
    expect(await searchIds(reopened, 'secret_ssn')).toEqual([]);
  });
});

describe('an eventId held at two seqs (a re-send the leader stored after deleting the first, applied on a standby still holding it)', () => {
  async function twoCopies(resentTs: number) {
    const leader = await open();
    let term = 0;
    const dir = await mkdtemp(join(tmpdir(), 'auditlake-erasure-targets-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const standby = await AuditStore.open({ location: join(dir, 'store'), sequencer: () => term });
    onTestFinished(() => standby.close());
    await leader.append([ev(), ev({ eventId: 'other', timestamp: OLD + 5, query: 'SELECT 1' })]);
    await pull(leader, standby);
    expect((await leader.pruneBefore(OLD + 1, 100, async () => true)).deleted).toBe(1);
    await leader.append([ev({ timestamp: resentTs, query: 'SELECT 2' })]);
    await pull(leader, standby);
    expect([(await standby.getBySeq(1))?.eventId, (await standby.getBySeq(3))?.eventId, (await standby.getByEventId('X'))?.seq]).toEqual(['X', 'X', 3]);
    return { standby, lead: () => (term = 2) };
  }

  it('a log cut removing the copy its id key points at leaves the key on the other copy: a re-send is then a duplicate', async () => {
    const { standby, lead } = await twoCopies(Date.now());
    await standby.divertSuffixToOutbox(3);
    expect((await standby.getByEventId('X'))?.seq).toBe(1);
    lead();
    const again = await standby.append([ev()]);
    expect([again.stored.length, again.duplicates]).toEqual([0, 1]);
  });

  it('retention deleting the copy its id key points at first (an older time) leaves the key on the other; deleting both leaves none', async () => {
    const { standby } = await twoCopies(OLD - 60_000);
    expect((await standby.pruneBefore(OLD - 1, 100, async () => true)).deleted).toBe(1);
    expect((await standby.getByEventId('X'))?.seq).toBe(1);
    expect((await standby.pruneBefore(OLD + 1, 100, async () => true)).deleted).toBe(1);
    expect(await standby.getByEventId('X')).toBeUndefined();
    expect((await standby.getBySeq(2))?.eventId).toBe('other');
  });
});
