// Goal: the store keeps the record chain: the leader stores chain fields that verify, a standby
// refuses entries that do not continue its chain (and stores nothing of their batch), a
// truncated log continues the chain from its common prefix, retention keeps what the verifier
// needs, integrity records are indexed, and an erasure rewrites every copy keeping the proof.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  canonicalContent,
  ChainVerifier,
  checkpointEvent,
  checkpointHash,
  encodeErasureDetails,
  ERASED_MARKER,
  INTEGRITY_ACTIONS,
  keyRegistrationEvent,
  nodeKeyOf,
  publishKey,
  RecordHasher,
  signCheckpoint,
  type VerifyReport,
} from '@auditlake/integrity';
import { AuditErrorCode, encodeEvent, isAuditError, SELF_SOURCE, type AuditEvent, type EncodedEvent, type StoredEvent } from '@auditlake/model';
import { describe, expect, it, onTestFinished } from 'vitest';
import { Level } from 'level';
import { AuditStore } from '../src/index.js';

async function location(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-chain-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'store');
}

async function openStore(options: { location?: string; sequencer?: () => number; chain?: boolean } = {}): Promise<AuditStore> {
  const store = await AuditStore.open({
    location: options.location ?? (await location()),
    ...(options.sequencer ? { sequencer: options.sequencer } : {}),
    ...(options.chain !== undefined ? { chain: options.chain } : {}),
  });
  onTestFinished(() => store.close());
  return store;
}

let ids = 0;
function ev(timestamp: number, overrides: Partial<AuditEvent> = {}): AuditEvent {
  ids++;
  return { eventId: `e${ids}`, userId: 'u', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t1', 't2'], query: `q${ids}`, details: '', timestamp, ...overrides };
}

async function verify(store: AuditStore, options: ConstructorParameters<typeof ChainVerifier>[0] = {}): Promise<VerifyReport> {
  const verifier = new ChainVerifier(options);
  for (const event of await store.readBySeq(0, 1_000_000)) verifier.add(event);
  return verifier.finish();
}

function tamper(bytes: Uint8Array, change: (event: Record<string, unknown>) => void): Buffer {
  const event = JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, unknown>;
  change(event);
  return Buffer.from(JSON.stringify(event));
}

describe('the leader', () => {
  it('stores chain fields that verify, and keeps the head across a reopen', async () => {
    const loc = await location();
    const first = await openStore({ location: loc });
    await first.append([ev(1), ev(2), ev(3, { sourceId: 'plugin-1', sourceSeq: 7 })]);
    await first.append([ev(4, { tables: ['a,b'], query: 'x"y\\z\n' })]);
    expect((await verify(first)).message).toBe('verified 4 records, seq 1..4, 0 checkpoints');
    const head = first.chainHead;
    await first.close();
    const again = await openStore({ location: loc });
    expect(again.chainHead).toEqual(head);
    await again.append([ev(5)]);
    expect((await verify(again)).message).toBe('verified 5 records, seq 1..5, 0 checkpoints');
  });

  it('continues the chain after retention deleted the last entry, and records what it deleted', async () => {
    const loc = await location();
    const first = await openStore({ location: loc });
    await first.append([ev(50_000), ev(60_000), ev(1_000)]);
    const head = first.chainHead;
    // Deletes seq 3 (the last entry, an old event time) and nothing else.
    expect((await first.pruneBefore(10_000, 10, async () => true)).deleted).toBe(1);
    expect(first.prunedRanges).toEqual([{ fromSeq: 3, toSeq: 3, chainHash: head.chainHash }]);
    await first.close();
    const again = await openStore({ location: loc });
    expect(again.chainHead.chainHash).toBe(head.chainHash);
    await again.append([ev(70_000)]);
    const report = await verify(again, { pruned: again.prunedRanges });
    expect(report.message).toBe('verified 3 records, seq 1..4, 0 checkpoints; 1 record removed by retention');
    // Without what the store declared, the hole is a break.
    expect((await verify(again)).message).toBe('missing records: seq 3..3 (1 record)');
  });

  it('stores the same bytes whether ingest computed the content part or the leader reads it from the JSON', async () => {
    // The same clock and term for both: only the path differs.
    const now = () => 1_800_000_000_000;
    const plain = await AuditStore.open({ location: await location(), now });
    const precomputed = await AuditStore.open({ location: await location(), now });
    onTestFinished(() => plain.close());
    onTestFinished(() => precomputed.close());
    const hasher = new RecordHasher();
    const events = [ev(1), ev(2, { sourceId: 'plugin-1', sourceSeq: 7, userId: 'Zoë "z" \\ \n' }), ev(3, { tables: [], query: '監査 🔒', details: '{"a":1}' })];
    await plain.appendEncoded(events.map(encodeEvent));
    // Each record's key is drawn where its content is hashed: given the keys the leader drew, ingest's path stores the same bytes.
    const salts = (await plain.readBySeq(0, 10)).map((stored) => stored.salt as string);
    expect(salts.every((salt) => /^[A-Za-z0-9_-]{22}$/.test(salt))).toBe(true);
    await precomputed.appendEncoded(events.map((event, i): EncodedEvent => ({ ...encodeEvent(event), chainContent: { ...hasher.contentOfValues(event, salts[i]), salt: salts[i] } })));
    expect(await precomputed.readEncodedBySeq(0, 10)).toEqual(await plain.readEncodedBySeq(0, 10));
    expect((await verify(precomputed)).message).toBe('verified 3 records, seq 1..3, 0 checkpoints');
  });

  it('a content part that does not belong to its event is stored as given, and a standby refuses it', async () => {
    const leader = await openStore();
    const hasher = new RecordHasher();
    const wrong = hasher.content(canonicalContent(ev(9, { query: 'not what is stored' })));
    await leader.appendEncoded([{ ...encodeEvent(ev(1)), chainContent: wrong }]);
    const standby = await openStore();
    const err = await standby.applyReplicated(await leader.readEncodedBySeq(0, 10)).then(() => undefined, (e: unknown) => e);
    expect(isAuditError(err) && err.code).toBe(AuditErrorCode.INTEGRITY_MISMATCH);
    expect(await standby.readBySeq(0, 10)).toEqual([]);
    expect((await verify(leader)).ok).toBe(false);
  });

  it('stores no chain fields with the chain off', async () => {
    const store = await openStore({ chain: false });
    await store.append([ev(1)]);
    const [event] = await store.readBySeq(0, 1);
    expect(event).not.toHaveProperty('recordHash');
  });
});

describe('a standby', () => {
  it('applies a chain that continues its own, and refuses one that does not, storing nothing of the batch', async () => {
    const leader = await openStore();
    const standby = await openStore();
    await leader.append([ev(1), ev(2), ev(3), ev(4)]);
    const entries = await leader.readEncodedBySeq(0, 10);
    expect(await standby.applyReplicated(entries.slice(0, 2))).toBe(2);

    const refused = async (batch: Uint8Array[], why: RegExp) => {
      const err = await standby.applyReplicated(batch).then(() => undefined, (e: unknown) => e);
      expect(isAuditError(err, AuditErrorCode.INTEGRITY_MISMATCH), String(err)).toBe(true);
      expect((err as Error).message).toMatch(why);
      expect(standby.position.lastSeq).toBe(2);
    };
    // Content changed, hashes kept.
    await refused([entries[2]!, tamper(entries[3]!, (e) => (e['query'] = 'forged'))], /seq 4: its record_hash does not match its content/);
    // A record of another chain at the right seq (its record hash is right for its content).
    const other = await openStore();
    await other.append([ev(1), ev(2), ev(3)]);
    await refused([(await other.readEncodedBySeq(0, 10))[2]!], /seq 3: its chain_hash does not follow this node's chain/);
    // Chain fields stripped after the chain started.
    await refused([tamper(entries[2]!, (e) => { delete e['recordHash']; delete e['chainHash']; delete e['fieldCheck']; })], /seq 3: it has no chain fields/);
    expect(await standby.applyReplicated(entries)).toBe(2);
    expect(standby.chainHead).toEqual(leader.chainHead);
  });

  it('continues the chain from the common prefix after a divergent suffix is cut', async () => {
    const a = await openStore({ sequencer: () => 1 });
    const b = await openStore({ sequencer: () => 1 });
    await a.append([ev(1), ev(2), ev(3)]);
    await b.applyReplicated(await a.readEncodedBySeq(0, 10));
    // b, still leading in term 1, orders two events (and a checkpoint record) no one else gets.
    const key = nodeKeyOf(generateKeyPairSync('ed25519').privateKey);
    const signed = signCheckpoint({ v: 1, chainId: 'c', seq: 3, chainHash: b.chainHead.chainHash, timeMs: 9, term: 1, keyId: key.keyId, nodeId: 'b', previousCheckpointHash: '' }, key.privateKey);
    await b.append([ev(4), checkpointEvent('cp-b', signed), ev(6)]);
    expect((await b.checkpoints()).map((c) => c.seq)).toEqual([5]);
    // a leads term 2 and orders others.
    await a.append([ev(7), ev(8)]);
    expect(await b.divertSuffixToOutbox(4)).toEqual({ moved: 2, terms: { 1: 3 } });
    // The checkpoint of the cut chain is dropped, not re-forwarded; its index entry is gone.
    expect((await b.readOutbox(10)).map((o) => (JSON.parse(o.json) as AuditEvent).action)).toEqual(['data:Select', 'data:Select']);
    expect(await b.checkpoints()).toEqual([]);
    expect(await b.applyReplicated(await a.readEncodedBySeq(3, 10))).toBe(2);
    expect(b.chainHead).toEqual(a.chainHead);
    expect((await verify(b)).ok).toBe(true);
  });
});

describe('integrity records', () => {
  it('are indexed on the leader and on a standby: checkpoints by seq, keys by id', async () => {
    const leader = await openStore();
    const standby = await openStore();
    const key = nodeKeyOf(generateKeyPairSync('ed25519').privateKey);
    await leader.append([keyRegistrationEvent('reg-1', publishKey(key, 'n1'), 5), ev(6)]);
    const signed = signCheckpoint({ v: 1, chainId: 'c', seq: 2, chainHash: leader.chainHead.chainHash, timeMs: 7, term: 0, keyId: key.keyId, nodeId: 'n1', previousCheckpointHash: '' }, key.privateKey);
    await leader.append([checkpointEvent('cp-1', signed)]);
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 10));
    for (const store of [leader, standby]) {
      expect((await store.checkpoints()).map((c) => [c.seq, checkpointHash(JSON.parse(c.checkpoint) as typeof signed)])).toEqual([[3, checkpointHash(signed)]]);
      expect([...(await store.registeredKeys()).entries()].map(([id, k]) => [id, k.seq])).toEqual([[key.keyId, 1]]);
      expect((await verify(store)).message).toBe('verified 3 records, seq 1..3, 1 checkpoint');
    }
  });
});

describe('erasure', () => {
  it('rewrites the named fields of every copy with the marker and keeps the proof', async () => {
    const leader = await openStore();
    const standby = await openStore();
    await leader.append([ev(1, { userId: 'alice', query: 'SELECT secret' }), ev(2)]);
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 10));
    const target = (await leader.getBySeq(1)) as StoredEvent;
    const details = encodeErasureDetails({ v: 1, fields: ['userId', 'query', 'tables'], records: [{ eventId: target.eventId, seq: 1 }] });
    await leader.append([{ ...ev(3), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details }]);
    await standby.applyReplicated(await leader.readEncodedBySeq(2, 10));
    for (const store of [leader, standby]) {
      const erased = (await store.getBySeq(1)) as StoredEvent;
      expect(erased).toMatchObject({ userId: ERASED_MARKER, query: ERASED_MARKER, tables: [ERASED_MARKER], recordHash: target.recordHash, chainHash: target.chainHash });
      expect(Object.keys(erased.erased ?? {}).sort()).toEqual(['query', 'tables', 'userId']);
      expect((await verify(store)).message).toBe('verified 3 records, seq 1..3, 0 checkpoints; 3 fields erased');
    }
    // The secondary indexes lose the erased user too (an index key holds the value).
    for (const store of [leader, standby]) {
      const byUser: number[] = [];
      for await (const event of store.search({ action: 'all', user: 'alice' })) byUser.push(event.seq);
      expect(byUser).not.toContain(1);
      const byMarker: number[] = [];
      for await (const event of store.search({ action: 'all', user: ERASED_MARKER })) byMarker.push(event.seq);
      expect(byMarker).toEqual([1]);
    }
    // What a pull is served is the erased copy (nothing kept of the old bytes).
    expect(Buffer.from((await leader.readEncodedBySeq(0, 1))[0]!).toString('utf8')).not.toContain('SELECT secret');
    // A standby that catches up later gets the erased copy, which verifies too.
    const late = await openStore();
    await late.applyReplicated(await leader.readEncodedBySeq(0, 10));
    expect((await verify(late)).ok).toBe(true);
  });
});

describe('erasing tables', () => {
  /** The table-name dictionary as LevelDB holds it (the store closed to read it, then opened again). */
  async function dictionaryOf(store: AuditStore): Promise<string[]> {
    const where = store.location;
    await store.close();
    const db = new Level<string, string>(where);
    try {
      return (await db.keys({ gte: 'x!T', lt: 'x!U' }).all()).map((key) => key.slice(3));
    } finally {
      await db.close();
    }
  }

  it('drops a name no event names any more from the dictionary of every copy, and keeps a name still in use', async () => {
    const leaderAt = await location();
    const standbyAt = await location();
    let leader = await openStore({ location: leaderAt });
    let standby = await openStore({ location: standbyAt });
    await leader.append([ev(1, { tables: ['hive.med.carol_results', 't2'] }), ev(2, { tables: ['t2'] })]);
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 10));
    const target = (await leader.getBySeq(1)) as StoredEvent;
    const details = encodeErasureDetails({ v: 1, fields: ['tables'], records: [{ eventId: target.eventId, seq: 1 }] });
    await leader.append([{ ...ev(3, { tables: [] }), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details }]);
    await standby.applyReplicated(await leader.readEncodedBySeq(2, 10));
    for (const store of [leader, standby]) {
      const found: number[] = [];
      for await (const event of store.search({ action: 'all', table: 'carol' })) found.push(event.seq);
      expect(found).toEqual([]);
    }
    expect(await dictionaryOf(leader)).toEqual([ERASED_MARKER, 't2']);
    expect(await dictionaryOf(standby)).toEqual([ERASED_MARKER, 't2']);
    // The name comes back with a new event that names it, after a restart too.
    leader = await openStore({ location: leaderAt });
    await leader.append([ev(4, { tables: ['hive.med.carol_results'] })]);
    standby = await openStore({ location: standbyAt });
    await standby.applyReplicated(await leader.readEncodedBySeq(3, 10));
    for (const [store, at] of [[leader, leaderAt], [standby, standbyAt]] as const) {
      expect(await dictionaryOf(store)).toEqual([ERASED_MARKER, 'hive.med.carol_results', 't2']);
      const reopened = await openStore({ location: at });
      const found: number[] = [];
      for await (const event of reopened.search({ action: 'all', table: 'carol' })) found.push(event.seq);
      expect(found).toEqual([4]);
    }
  });
});

describe('the index of erasure records', () => {
  function erasureOf(timestamp: number, target: StoredEvent): AuditEvent {
    const details = encodeErasureDetails({ v: 1, fields: ['query'], records: [{ eventId: target.eventId, seq: target.seq }] });
    return { ...ev(timestamp), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details };
  }

  it('finds erasure records by seq range on every copy, loses them with their records, and is rebuilt for a store without it', async () => {
    const at = await location();
    const leader = await openStore({ location: at });
    const standby = await openStore();
    await leader.append([ev(1), ev(2), ev(3)]);
    const [first, second] = [(await leader.getBySeq(1)) as StoredEvent, (await leader.getBySeq(2)) as StoredEvent];
    await leader.append([erasureOf(4, first), ev(5)]);
    await leader.append([erasureOf(6, second)]);
    // Text that only names the action is not an erasure record.
    await leader.append([ev(7, { query: INTEGRITY_ACTIONS.erase, details: INTEGRITY_ACTIONS.erase })]);
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 100));
    for (const store of [leader, standby]) {
      expect(await store.erasureRecordSeqs(0, 100)).toEqual([4, 6]);
      expect(await store.erasureRecordSeqs(4, 6)).toEqual([6]);
      expect(await store.erasureRecordSeqs(0, 5)).toEqual([4]);
      expect(await store.erasureRecordSeqs(6, 100)).toEqual([]);
      expect(await store.erasureRecordSeqs(0, 100, 1)).toEqual([4]);
      expect(await store.erasureRecordSeqs(6, 4)).toEqual([]);
    }
    // A copy that cuts its log from seq 6 (it diverged from a new leader's) loses that erasure's entry.
    await standby.divertSuffixToOutbox(6);
    expect(await standby.erasureRecordSeqs(0, 100)).toEqual([4]);

    // A store written before the index: opened again, it indexes its erasure records (found
    // through the engine index, the secondary indexes being complete already).
    await leader.close();
    const db = new Level<string, string>(at, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    const batch = db.batch();
    for (const key of await db.keys({ gte: 'e!', lt: 'e"' }).all()) batch.del(key);
    batch.del('l!erasureIndex');
    await batch.write({ sync: true });
    expect(await db.keys({ gte: 'e!', lt: 'e"' }).all()).toEqual([]);
    await db.close();
    const reopened = await openStore({ location: at });
    expect(await reopened.erasureRecordSeqs(0, 100)).toEqual([4, 6]);

    // Retention deletes the record and its index entry together.
    await reopened.pruneBefore(5, 100, () => Promise.resolve(true));
    expect(await reopened.getBySeq(4)).toBeUndefined();
    expect(await reopened.erasureRecordSeqs(0, 100)).toEqual([6]);
  });
});
