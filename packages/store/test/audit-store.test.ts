// Goal: the LevelDB store keeps one durable order (seq, ingestTs), its indexes agree, and it closes cleanly.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditError, AuditErrorCode, encodeEvent, type AuditEvent } from '@auditlake/model';
import { canonicalRecord, chainHash, GENESIS_CHAIN_HASH, RecordHasher } from '@auditlake/integrity';
import { Level } from 'level';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AuditStore, RetentionPruner, WRITER_YIELD_EVENTS } from '../src/index.js';
import { localKey } from '../src/event-keys.js';

async function location(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-store-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'store');
}

async function openStore(options: { location?: string; now?: () => number; monotonicNow?: () => number; sequencer?: () => number } = {}): Promise<AuditStore> {
  const store = await AuditStore.open({
    location: options.location ?? (await location()),
    ...(options.now ? { now: options.now } : {}),
    ...(options.monotonicNow ? { monotonicNow: options.monotonicNow } : {}),
    ...(options.sequencer ? { sequencer: options.sequencer } : {}),
  });
  onTestFinished(() => store.close());
  return store;
}

function ev(eventId: string, timestamp: number, overrides: Partial<AuditEvent> = {}): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp, ...overrides };
}

async function all(store: AuditStore) {
  const out = [];
  for await (const e of store.search({ action: 'all' })) out.push(e);
  return out;
}

describe('AuditStore', () => {
  it('assigns consecutive seqs from 1 in append order and finds events by id, seq and time', async () => {
    const store = await openStore();
    const { stored } = await store.append([ev('a', 300), ev('b', 100), ev('c', 200)]);
    expect(stored.map((e) => [e.eventId, e.seq])).toEqual([['a', 1], ['b', 2], ['c', 3]]);
    expect((await store.readBySeq(0, 10)).map((e) => e.eventId)).toEqual(['a', 'b', 'c']);
    expect((await store.readBySeq(1, 1)).map((e) => e.eventId)).toEqual(['b']);
    // The same in the bytes a leader hands its standbys (read in time-key order, answered in seq order).
    expect((await store.readEncodedBySeq(0, 10)).map((bytes) => (JSON.parse(Buffer.from(bytes).toString('utf8')) as { eventId: string }).eventId)).toEqual(['a', 'b', 'c']);
    expect((await all(store)).map((e) => e.eventId)).toEqual(['a', 'c', 'b']);
    expect(await store.getByEventId('c')).toMatchObject({ eventId: 'c', seq: 3, timestamp: 200 });
    // By id keys alone, in the order asked, undefined for an id not stored.
    expect(await store.seqsOfEventIds(['c', 'nope', 'a', 'b'])).toEqual([3, undefined, 1, 2]);
    expect(store.position.lastSeq).toBe(3);
  });

  it('never lets ingestTs go backwards when the clock does, and goes on at real speed meanwhile', async () => {
    let clock = 10_000;
    let monotonic = 0;
    const store = await openStore({ now: () => clock, monotonicNow: () => monotonic });
    await store.append([ev('a', 1)]);
    clock = 5_000; // the wall clock jumps back
    const { stored } = await store.append([ev('b', 1)]);
    expect(stored[0]!.ingestTs).toBe(10_000);
    // While it is behind, ingestTs follows the time that passes, not the frozen last value:
    // whole milliseconds, the fraction carried.
    monotonic += 250.6;
    clock += 250;
    expect((await store.append([ev('c', 1)])).stored[0]!.ingestTs).toBe(10_250);
    expect(store.ingestNow()).toBe(10_250);
    monotonic += 0.5;
    expect((await store.append([ev('d', 1)])).stored[0]!.ingestTs).toBe(10_251);
    // Once the wall clock is past the log again, it is the wall clock.
    clock = 12_000;
    expect(store.ingestNow()).toBe(12_000);
    expect((await store.append([ev('e', 1)])).stored[0]!.ingestTs).toBe(12_000);
  });

  // Goal (invariant 3): ingestNow(), which every ingest request and every tier sweep asks, takes
  // nothing from ingest time while the clock is behind. Asked while a group was being written
  // (stamped, the log's position not moved yet), it counted the clock again from the log's end:
  // the next group got the stamp of the one before, and ingest time went on at half speed (review).
  it.each([
    ['alone (the control)', false],
    ['with ingestNow() asked at every turn of each write', true],
  ])('goes on at real speed while the clock is an hour behind: appends %s', async (_, asked) => {
    let clock = 10_000_000;
    let monotonic = 0;
    const store = await openStore({ now: () => clock, monotonicNow: () => monotonic });
    await store.append([ev('first', 1)]);
    clock -= 3_600_000; // stepped back an hour
    const stamps: number[] = [];
    for (let i = 0; i < 5; i++) {
      monotonic += 1_000;
      clock += 1_000;
      let written = false;
      const appending = store.append([ev(`e${i}`, 1)]).finally(() => (written = true));
      // As other requests do under load: the write awaits LevelDB, and they get their turns.
      while (asked && !written) {
        store.ingestNow();
        await new Promise((resolve) => setImmediate(resolve));
      }
      stamps.push((await appending).stored[0]!.ingestTs);
    }
    expect(stamps).toEqual([10_001_000, 10_002_000, 10_003_000, 10_004_000, 10_005_000]);
  });

  it('recovers its position after a reopen and continues the order', async () => {
    const loc = await location();
    let clock = 50_000;
    const first = await AuditStore.open({ location: loc, now: () => clock });
    await first.append([ev('a', 1), ev('b', 2)]);
    await first.close();
    clock = 1_000; // a restart on a node whose clock is behind
    let monotonic = 7;
    const second = await openStore({ location: loc, now: () => clock, monotonicNow: () => monotonic });
    expect(second.position).toEqual({ lastSeq: 2, lastTerm: 0, lastIngestTs: 50_000 });
    const { stored } = await second.append([ev('c', 3)]);
    expect(stored[0]).toMatchObject({ seq: 3, ingestTs: 50_000 });
    // From there at the speed time passes (since the open), not stuck at the log's last value.
    monotonic += 40;
    expect((await second.append([ev('d', 4)])).stored[0]).toMatchObject({ seq: 4, ingestTs: 50_040 });
  });

  it('keeps one event per eventId across appends, within an append, and across a reopen', async () => {
    const loc = await location();
    const store = await AuditStore.open({ location: loc });
    expect((await store.append([ev('x', 1), ev('x', 1), ev('y', 2)])).duplicates).toBe(1);
    expect((await store.append([ev('y', 2)])).stored).toEqual([]);
    await store.close();
    const reopened = await openStore({ location: loc });
    const result = await reopened.append([ev('x', 1), ev('z', 3)]);
    expect(result.duplicates).toBe(1);
    expect(result.stored.map((e) => [e.eventId, e.seq])).toEqual([['z', 3]]);
    expect((await all(reopened)).map((e) => e.eventId).sort()).toEqual(['x', 'y', 'z']);
  });

  it('group-commits concurrent appends without losing or reordering any', async () => {
    const store = await openStore();
    const appends = Array.from({ length: 50 }, (_, i) => store.append(Array.from({ length: 20 }, (_, j) => ev(`e${i}-${j}`, i * 100 + j))));
    const results = await Promise.all(appends);
    const seqs = results.flatMap((r) => r.stored.map((e) => e.seq));
    expect(seqs).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    expect((await store.readBySeq(0, 2000)).map((e) => e.seq)).toEqual(seqs);
  });

  it('never strands an append issued the moment the previous one resolves (regression)', async () => {
    const store = await openStore();
    for (let i = 0; i < 300; i++) {
      const { stored } = await store.append([ev(`s${i}`, i)]);
      expect(stored[0]!.seq).toBe(i + 1);
    }
    // An empty append resolves too (no write, so no await inside the writer).
    await expect(store.append([])).resolves.toEqual({ stored: [], duplicates: 0, conflicts: [] });
    await expect(store.append([ev('after-empty', 1)])).resolves.toMatchObject({ stored: [{ seq: 301 }] });
  });

  it('searches a time range inclusively, newest first, ties by seq descending', async () => {
    const store = await openStore();
    await store.append([ev('t100a', 100), ev('t200', 200), ev('t100b', 100), ev('t300', 300)]);
    const inRange = [];
    for await (const e of store.search({ action: 'all', fromMs: 100, toMs: 200 })) inRange.push(e.eventId);
    expect(inRange).toEqual(['t200', 't100b', 't100a']);
  });

  it('prunes only events older than the cutoff, in bounded batches, from every index', async () => {
    const store = await openStore();
    await store.append(Array.from({ length: 25 }, (_, i) => ev(`old${i}`, 1_000 + i)));
    await store.append([ev('keep', 5_000)]);
    let calls = 0;
    const result = await store.pruneBefore(5_000, 10, async () => {
      calls++;
      return true;
    });
    expect(result).toEqual({ deleted: 25, batches: 3 });
    expect(calls).toBe(3);
    expect((await all(store)).map((e) => e.eventId)).toEqual(['keep']);
    expect(await store.getByEventId('old3')).toBeUndefined();
    expect(await store.seqsOfEventIds(['old3', 'keep'])).toEqual([undefined, 26]);
    expect((await store.readBySeq(0, 100)).map((e) => e.eventId)).toEqual(['keep']);
  });

  it('never deletes an event above maxSeq (untiered), whatever its age, and counts what it holds back', async () => {
    const store = await openStore();
    await store.append(Array.from({ length: 12 }, (_, i) => ev(`e${i}`, 100 + i)));
    const result = await store.pruneBefore(10_000, 5, async () => true, 7);
    expect(result.deleted).toBe(7);
    expect((await all(store)).map((e) => e.seq).sort((a, b) => a - b)).toEqual([8, 9, 10, 11, 12]);
    expect(await store.countHeldBack(10_000, 7, 100)).toBe(5);
    expect(await store.countHeldBack(10_000, 7, 3)).toBe(3);
    expect(await store.countAfter(7)).toBe(5);
  });

  it('keeps the ranges retention deleted across a reopen, islands and all (one key per range)', async () => {
    const where = await location();
    const store = await openStore({ location: where });
    // Old and new events interleaved: retention deletes islands.
    await store.append(Array.from({ length: 20 }, (_, i) => ev(`i${i}`, i % 2 === 0 ? 100 + i : 50_000 + i)));
    expect((await store.pruneBefore(10_000, 3, async () => true)).deleted).toBe(10);
    const ranges = store.prunedRanges;
    expect(ranges.map((range) => [range.fromSeq, range.toSeq])).toEqual(Array.from({ length: 10 }, (_, i) => [2 * i + 1, 2 * i + 1]));
    await store.close();
    const again = await openStore({ location: where });
    expect(again.prunedRanges).toEqual(ranges);
  });

  it('stops a prune between batches when asked', async () => {
    const store = await openStore();
    await store.append(Array.from({ length: 30 }, (_, i) => ev(`o${i}`, i)));
    const result = await store.pruneBefore(1_000, 10, async () => false);
    expect(result).toEqual({ deleted: 10, batches: 1 });
  });

  it("reports LevelDB's own memory estimate, which grows with the memtable as events are written", async () => {
    const store = await openStore();
    const before = store.leveldbMemoryBytes();
    expect(Number.isSafeInteger(before)).toBe(true);
    await store.append(Array.from({ length: 2_000 }, (_, i) => ev(`mem-${i}`, 1_000 + i, { query: `SELECT ${'x'.repeat(200)} FROM t${i}` })));
    expect(store.leveldbMemoryBytes()).toBeGreaterThan(before + 2_000 * 200);
  });

  it('keeps the blocks it reads in a block cache of the size it was opened with', async () => {
    // ~16 MB of events, flushed to table files by a reopen, then read back in full: the default
    // cache keeps what was read, a 1 MiB cache no more than its size.
    const where = await location();
    const writer = await AuditStore.open({ location: where });
    const events = Array.from({ length: 8_000 }, (_, i) => ev(`cache-${i}`, 1_000 + i, { query: `SELECT ${String(i).repeat(400).slice(0, 2_000)} FROM t${i}` }));
    for (let i = 0; i < events.length; i += 1_000) await writer.append(events.slice(i, i + 1_000));
    await writer.close();
    const growth = async (cacheBytes: number | undefined) => {
      const store = await AuditStore.open({ location: where, ...(cacheBytes === undefined ? {} : { cacheBytes }) });
      try {
        const before = store.leveldbMemoryBytes();
        expect(await store.readBySeq(0, events.length)).toHaveLength(events.length);
        return store.leveldbMemoryBytes() - before;
      } finally {
        await store.close();
      }
    };
    expect(await growth(1024 * 1024)).toBeLessThan(2 * 1024 * 1024);
    expect(await growth(undefined)).toBeGreaterThan(10 * 1024 * 1024);
  });

  it('refuses appends once closing, finishes queued ones, and closes idempotently', async () => {
    const store = await AuditStore.open({ location: await location() });
    const queued = store.append([ev('q', 1)]);
    const closing = store.close();
    await expect(store.append([ev('late', 1)])).rejects.toMatchObject({ code: 'AUDIT_STORE_NOT_OPEN' });
    await expect(queued).resolves.toMatchObject({ stored: [{ eventId: 'q' }] });
    await Promise.all([closing, store.close()]);
    expect(store.status).toBe('closed');
  });

  it('closes LevelDB when what it holds cannot be read at open, so the store opens again once mended', async () => {
    const where = await location();
    const first = await AuditStore.open({ location: where });
    await first.append([ev('kept', 1)]);
    await first.close();
    // A local value damaged on disk: the open reads it after LevelDB is open, and fails.
    const level = new Level<string, string>(where);
    await level.put(localKey('prunedRanges'), 'not json');
    await level.close();
    await expect(AuditStore.open({ location: where })).rejects.toThrow(SyntaxError);
    // Left open, LevelDB's lock (held per process) would refuse this.
    const mending = new Level<string, string>(where);
    await mending.del(localKey('prunedRanges'));
    await mending.close();
    const again = await AuditStore.open({ location: where });
    expect((await again.getByEventId('kept'))?.eventId).toBe('kept');
    await again.close();
  });

  it('stores metadata atomically with the events of an append', async () => {
    const store = await openStore();
    await store.append([ev('s', 1)], { meta: [{ name: 'settings', value: { 'audit.retention.days': '3' } }] });
    expect(await store.getMeta('settings')).toEqual({ 'audit.retention.days': '3' });
  });

  it('answers metadata from memory as last written — putMeta, an append carrying meta, a reopen — a fresh copy each read', async () => {
    const at = await location();
    const store = await AuditStore.open({ location: at });
    expect(store.meta('tierWatermark')).toBeUndefined();
    await store.putMeta({ tierWatermark: { seq: 5, ingestTs: 50 }, other: [1] });
    expect(store.meta('tierWatermark')).toEqual({ seq: 5, ingestTs: 50 });
    await store.append([ev('m', 1)], { meta: [{ name: 'settings', value: { a: '1' } }] });
    expect(store.meta('settings')).toEqual({ a: '1' });
    await store.putMeta({ tierWatermark: { seq: 9, ingestTs: 90 } });
    const read = store.meta<{ seq: number }>('tierWatermark');
    expect(read).toEqual({ seq: 9, ingestTs: 90 });
    // A caller changing what it read changes nothing stored.
    read!.seq = 1;
    expect(store.meta('tierWatermark')).toEqual({ seq: 9, ingestTs: 90 });
    expect(await store.getAllMeta()).toEqual({ tierWatermark: { seq: 9, ingestTs: 90 }, other: [1], settings: { a: '1' } });
    await store.close();
    expect(() => store.meta('settings')).toThrow(/closed/);
    // What memory said is what LevelDB holds: a reopened store reads the same back.
    const reopened = await openStore({ location: at });
    expect(await reopened.getAllMeta()).toEqual({ tierWatermark: { seq: 9, ingestTs: 90 }, other: [1], settings: { a: '1' } });
    expect(reopened.meta('tierWatermark')).toEqual({ seq: 9, ingestTs: 90 });
  });

  it("replaceMeta makes the metadata exactly the leader's: a name it does not hold is deleted, in memory and on disk", async () => {
    const at = await location();
    const store = await AuditStore.open({ location: at });
    // What a deposed leader wrote into its diverged log: settings no standby got.
    await store.append([ev('m', 1)], { meta: [{ name: 'settings', value: { 'audit.redact.keys': 'ssn' } }, { name: 'settingsRecord', value: 'm' }] });
    await store.putMeta({ tierWatermark: { seq: 1, ingestTs: 10 } });
    const version = store.metaVersion;
    await store.replaceMeta({ tierWatermark: { seq: 4, ingestTs: 40 } });
    expect(store.metaVersion).toBeGreaterThan(version);
    expect(store.meta('settings')).toBeUndefined();
    expect(await store.getAllMeta()).toEqual({ tierWatermark: { seq: 4, ingestTs: 40 } });
    await store.close();
    const reopened = await openStore({ location: at });
    expect(await reopened.getAllMeta()).toEqual({ tierWatermark: { seq: 4, ingestTs: 40 } });
  });
});

describe('AuditStore replication and outbox', () => {
  it('applies replicated entries as they are, skips re-delivered ones and refuses disorder', async () => {
    const leader = await openStore({ sequencer: () => 7 });
    const standby = await openStore();
    await leader.append([ev('a', 10), ev('b', 5), ev('c', 20)]);
    const stored = await leader.readBySeq(0, 10);
    expect(stored.map((e) => [e.eventId, e.seq, e.term])).toEqual([['a', 1, 7], ['b', 2, 7], ['c', 3, 7]]);
    const entries = await leader.readEncodedBySeq(0, 10);
    expect(entries.map((bytes) => JSON.parse(Buffer.from(bytes).toString('utf8')) as unknown)).toEqual(stored);
    expect(await standby.applyReplicated(entries.slice(0, 2))).toBe(2);
    expect(await standby.applyReplicated(entries)).toBe(1);
    expect(standby.position).toMatchObject({ lastSeq: 3, lastTerm: 7, lastIngestTs: stored[2]!.ingestTs });
    expect(await standby.readBySeq(0, 10)).toEqual(stored);
    // Stored as received, byte for byte: what the standby would hand on is what the leader has.
    expect(await standby.readEncodedBySeq(0, 10)).toEqual(entries);
    await leader.append([ev('d', 30), ev('e', 40)]);
    const [fourth, fifth] = await leader.readEncodedBySeq(3, 10);
    await expect(standby.applyReplicated([fifth!, fourth!])).rejects.toThrow(/out of order/);
    expect(standby.position.lastSeq).toBe(3);
    // Nothing of the refused batch was written, not even the entry before the disorder.
    expect(await standby.getBySeq(5)).toBeUndefined();
  });

  it('lets other work run while it applies a large replicated batch', async () => {
    const leader = await openStore({ sequencer: () => 3 });
    const standby = await openStore();
    const n = 2 * WRITER_YIELD_EVENTS + 500;
    await leader.append(Array.from({ length: n }, (_, i) => ev(`r-${i}`, i + 1)));
    const entries = await leader.readEncodedBySeq(0, n);
    // Turns of the event loop, counted as the standby walks the batch: the walk is synchronous
    // unless the standby yields within it.
    let turns = 0;
    let spinning = true;
    const spin = () => {
      if (!spinning) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const turnsSeen: number[] = [];
    const observed = Object.assign([...entries], {
      *[Symbol.iterator]() {
        for (const entry of entries) {
          turnsSeen.push(turns);
          yield entry;
        }
      },
    });
    expect(await standby.applyReplicated(observed)).toBe(n);
    spinning = false;
    expect(turnsSeen).toHaveLength(n);
    expect((turnsSeen.at(-1) as number) - (turnsSeen[0] as number)).toBeGreaterThanOrEqual(2);
    // Every entry stored byte for byte, and the chain checked through to the leader's head.
    expect(Buffer.concat(await standby.readEncodedBySeq(0, n)).equals(Buffer.concat(entries))).toBe(true);
    expect(standby.chainHead).toEqual(leader.chainHead);
  });

  it('stores an encoded event as its composed JSON, byte for byte, with seq, ingestTs and term', async () => {
    const store = await openStore({ sequencer: () => 4, now: () => 5_000 });
    const encoded = encodeEvent(ev('enc', 7));
    const { stored } = await store.appendEncoded([encoded]);
    expect(stored).toEqual([{ eventId: 'enc', seq: 1, ingestTs: 5_000, term: 4 }]);
    const [bytes] = await store.readEncodedBySeq(0, 1);
    // Exactly what serialising the stored event gives (the property the store relies on), with
    // the chain fields computed as docs/integrity.md defines them.
    // The record's key K is drawn by the leader (the event came without its content part) and stored last.
    const salt = (JSON.parse(Buffer.from(bytes!).toString('utf8')) as { salt: string }).salt;
    expect(salt).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const values = { ...ev('enc', 7), ingestTs: 5_000, seq: 1, term: 4 };
    const digest = new RecordHasher().digest(canonicalRecord({ ...values, salt }));
    const chained = { ...values, recordHash: digest.recordHash, chainHash: chainHash(GENESIS_CHAIN_HASH, digest.recordHash), fieldCheck: digest.fieldCheck, salt };
    expect(Buffer.from(bytes!).toString('utf8')).toBe(JSON.stringify(chained));
    expect(await store.getByEventId('enc')).toEqual(chained);
    expect(store.chainHead).toEqual({ seq: 1, chainHash: chained.chainHash, started: true });
  });

  it('refuses a replicated entry that is not a stored event, and applies nothing of its batch', async () => {
    const leader = await openStore();
    const standby = await openStore();
    await leader.append([ev('a', 1), ev('b', 2)]);
    const [first, second] = await leader.readEncodedBySeq(0, 10);
    const { seq: _seq, ...withoutSeq } = JSON.parse(Buffer.from(second!).toString('utf8')) as Record<string, unknown>;
    await expect(standby.applyReplicated([first!, Buffer.from(JSON.stringify(withoutSeq))])).rejects.toThrow(/not a stored event/);
    await expect(standby.applyReplicated([first!, Buffer.from('{"eventId":')])).rejects.toThrow(/not JSON/);
    expect(standby.position.lastSeq).toBe(0);
    expect(await standby.readBySeq(0, 10)).toEqual([]);
  });

  it('diverts a log suffix to the outbox atomically, keeping ingestTs from going back', async () => {
    let clock = 1_000;
    // No time passes on the clock that never steps: ingestTs stays where the log ends.
    const store = await openStore({ now: () => clock, monotonicNow: () => 0 });
    await store.append([ev('keep1', 1), ev('keep2', 2)]);
    clock = 2_000;
    await store.append([ev('move1', 3), ev('move2', 4)]);
    expect(await store.divertSuffixToOutbox(3)).toEqual({ moved: 2, terms: { 0: 2 } });
    expect(store.position).toEqual({ lastSeq: 2, lastTerm: 0, lastIngestTs: 2_000 });
    expect((await all(store)).map((e) => e.eventId)).toEqual(['keep2', 'keep1']);
    expect(await store.getByEventId('move1')).toBeUndefined();
    const outbox = await store.readOutbox(10);
    expect(outbox.map((o) => JSON.parse(o.json) as unknown)).toEqual([ev('move1', 3), ev('move2', 4)]);
    expect(store.outboxCount).toBe(2);
    clock = 1_500; // behind the diverted events' ingestTs
    expect((await store.append([ev('next', 5)])).stored[0]).toMatchObject({ seq: 3, ingestTs: 2_000 });
  });

  it('a settings record cut from the log, by a divergence or an adoption, goes back as it was: the leader it reaches tells whether its change is in force', async () => {
    const settingsRecord = (eventId: string, ts: number): AuditEvent => ({ ...ev(eventId, ts), source: 'auditlake', action: 'audit:UpdateSettings', resource: 'audit.settings', details: 'audit.redact.keys: password → password,ssn' });
    const diverged = await openStore();
    await diverged.append([ev('keep', 1), settingsRecord('s1', 2)]);
    await diverged.divertSuffixToOutbox(2);
    expect((await diverged.readOutbox(10)).map((o) => JSON.parse(o.json) as AuditEvent)).toEqual([settingsRecord('s1', 2)]);
    const dead = await openStore({ sequencer: () => 1 });
    await dead.append([ev('d1', 1), ev('d2', 2)]);
    const successor = await openStore({ sequencer: () => 2 });
    await successor.applyReplicated(await dead.readEncodedBySeq(0, 1), dead.termStarts());
    await successor.append([settingsRecord('s2', 3)]);
    expect(await successor.adoptSuffix(2, await dead.readEncodedBySeq(1, 10), dead.termStarts(1))).toMatchObject({ moved: 1, adopted: 1 });
    expect((await successor.readOutbox(10)).map((o) => JSON.parse(o.json) as AuditEvent)).toEqual([settingsRecord('s2', 3)]);
  });

  it("adopts another log's suffix in place of its own at once: its own entries go to the outbox, the chain is checked first, and a refused adoption changes nothing", async () => {
    // The dead leader ordered 10 in term 1; the successor received 6 of them, then ordered 3 of its own in term 2.
    const dead = await openStore({ sequencer: () => 1 });
    await dead.append(Array.from({ length: 10 }, (_, i) => ev(`d${i + 1}`, i + 1)));
    const successor = await openStore({ sequencer: () => 2 });
    await successor.applyReplicated(await dead.readEncodedBySeq(0, 6), dead.termStarts());
    await successor.append([ev('own1', 7), ev('own2', 8), ev('d9', 9)]);
    const cuts: number[] = [];
    successor.onLogCut((lastSeq) => cuts.push(lastSeq));
    const suffix = await dead.readEncodedBySeq(6, 10);
    const before = { position: successor.position, head: successor.chainHead };

    // Refused before anything is cut: a gap, and an entry whose content no longer matches its hashes.
    await expect(successor.adoptSuffix(7, suffix.slice(1), dead.termStarts(6))).rejects.toThrow('adopted entries must run from seq 7 without a gap: seq 8 where 7 was due');
    const altered = suffix.map((bytes, i) => (i === 2 ? Buffer.from(Buffer.from(bytes).toString('utf8').replace('"d9"', '"dX"')) : bytes));
    await expect(successor.adoptSuffix(7, altered, dead.termStarts(6))).rejects.toMatchObject({ code: AuditErrorCode.INTEGRITY_MISMATCH });
    // A leader deposed while the entries were checked cuts nothing either.
    await expect(successor.adoptSuffix(7, suffix, dead.termStarts(6), () => false)).rejects.toMatchObject({ code: AuditErrorCode.NOT_LEADER });
    expect({ position: successor.position, head: successor.chainHead }).toEqual(before);
    expect(successor.outboxCount).toBe(0);
    expect(cuts).toEqual([]);

    expect(await successor.adoptSuffix(7, suffix, dead.termStarts(6))).toEqual({ moved: 3, terms: { 2: 3 }, adopted: 4 });
    expect(cuts).toEqual([6]);
    // The two logs are one now, byte for byte, with the dead leader's term boundaries and chain head.
    expect(Buffer.concat(await successor.readEncodedBySeq(0, 20)).equals(Buffer.concat(await dead.readEncodedBySeq(0, 20)))).toBe(true);
    expect(successor.termStarts()).toEqual(dead.termStarts());
    // Not counted as held by another node: ack=replicated waits for a standby to confirm the adopted entries.
    expect(successor.runAt(7)).toMatchObject({ term: 1, received: false });
    expect(successor.chainHead).toEqual(dead.chainHead);
    expect(successor.position).toMatchObject({ lastSeq: 10, lastTerm: 1 });
    const outbox = await successor.readOutbox(10);
    expect(outbox.map((o) => (JSON.parse(o.json) as AuditEvent).eventId)).toEqual(['own1', 'own2', 'd9']);
    // Ordered again: d9 is held already (the adopted entry), the two others follow the adopted ones, chained to them.
    const again = await successor.append(outbox.map((o) => JSON.parse(o.json) as AuditEvent));
    expect(again).toMatchObject({ stored: [{ eventId: 'own1', seq: 11, term: 2 }, { eventId: 'own2', seq: 12, term: 2 }], duplicates: 1 });
    const [tenth, eleventh] = [await successor.getBySeq(10), await successor.getBySeq(11)];
    expect(eleventh?.chainHash).toBe(chainHash(tenth?.chainHash as string, eleventh?.recordHash as string));
  });

  it("orders an adoption's closing record right after the adopted entries, in the same write, under the term given and chained to them", async () => {
    const dead = await openStore({ sequencer: () => 1 });
    await dead.append(Array.from({ length: 10 }, (_, i) => ev(`d${i + 1}`, i + 1)));
    const successor = await openStore({ sequencer: () => 2, now: () => 5_000 });
    await successor.applyReplicated(await dead.readEncodedBySeq(0, 6), dead.termStarts());
    await successor.append([ev('own1', 7), ev('own2', 8)]);
    const suffix = await dead.readEncodedBySeq(6, 10);
    const closing = { term: 7, nowMs: 4_000, event: (moved: number) => encodeEvent({ ...ev('adoption', 11), details: `moved=${moved}` }) };
    expect(await successor.adoptSuffix(7, suffix, dead.termStarts(6), () => true, closing)).toEqual({ moved: 2, terms: { 2: 2 }, adopted: 4, closingSeq: 11 });
    // The log ends with the record, in the reserved term: it is the most up to date of any log that held the cut entries.
    expect(successor.position).toMatchObject({ lastSeq: 11, lastTerm: 7 });
    const [tenth, record] = [await successor.getBySeq(10), await successor.getBySeq(11)];
    expect(record).toMatchObject({ eventId: 'adoption', term: 7, details: 'moved=2' });
    expect(record?.ingestTs).toBeGreaterThanOrEqual(5_000);
    expect(record?.chainHash).toBe(chainHash(tenth?.chainHash as string, record?.recordHash as string));
    expect(successor.termStarts().at(-1)).toEqual({ firstSeq: 11, term: 7 });
    // A standby verifies it as any entry: it continues the chain.
    const standby = await openStore({ sequencer: () => 2 });
    expect(await standby.applyReplicated(await successor.readEncodedBySeq(0, 20), successor.termStarts())).toBe(11);
  });

  it('keeps the outbox in arrival order across a reopen and deletes what was forwarded', async () => {
    const loc = await location();
    const first = await AuditStore.open({ location: loc });
    await first.enqueueOutbox([ev('o1', 1), ev('o2', 2)].map(encodeEvent));
    await first.enqueueOutbox([ev('o3', 3)].map(encodeEvent));
    await first.close();
    const store = await openStore({ location: loc });
    expect(store.outboxCount).toBe(3);
    const entries = await store.readOutbox(2);
    expect(entries.map((e) => (JSON.parse(e.json) as AuditEvent).eventId)).toEqual(['o1', 'o2']);
    await store.deleteOutbox(entries.map((e) => e.key));
    await store.enqueueOutbox([ev('o4', 4)].map(encodeEvent));
    expect((await store.readOutbox(10)).map((e) => (JSON.parse(e.json) as AuditEvent).eventId)).toEqual(['o3', 'o4']);
    expect(store.outboxCount).toBe(2);
  });

  it('reads the outbox from its oldest live entry after deletions, out of order ones included, and after a reopen', async () => {
    const loc = await location();
    const store = await AuditStore.open({ location: loc });
    const ids = async (s: AuditStore) => (await s.readOutbox(10)).map((e) => (JSON.parse(e.json) as AuditEvent).eventId);
    await store.enqueueOutbox(['a', 'b', 'c', 'd', 'e'].map((id, i) => encodeEvent(ev(id, i))));
    const [a, b, , d] = await store.readOutbox(10);
    await store.deleteOutbox([a!.key, b!.key]);
    expect(await ids(store)).toEqual(['c', 'd', 'e']);
    // A deletion that is not at the front leaves the front where it was.
    await store.deleteOutbox([d!.key]);
    expect(await ids(store)).toEqual(['c', 'e']);
    await store.close();
    const reopened = await openStore({ location: loc });
    expect(await ids(reopened)).toEqual(['c', 'e']);
    expect(reopened.outboxCount).toBe(2);
    await reopened.deleteOutbox((await reopened.readOutbox(10)).map((e) => e.key));
    await reopened.enqueueOutbox([encodeEvent(ev('f', 9))]);
    expect(await ids(reopened)).toEqual(['f']);
  });

  it('counts an outbox larger than what it reads at once across a reopen, with holes left by forwards that finished out of order', async () => {
    const loc = await location();
    const store = await AuditStore.open({ location: loc });
    // 25,000 entries: more than two chunks of the count at open.
    for (let i = 0; i < 5; i++) await store.enqueueOutbox(Array.from({ length: 5_000 }, (_, j) => encodeEvent(ev(`big${i * 5_000 + j}`, j))));
    const front = await store.readOutbox(10_003);
    // The front 10,000 forwarded, and one further on: holes, not a run.
    await store.deleteOutbox([...front.slice(0, 10_000), front[10_002]!].map((entry) => entry.key));
    await store.close();
    const reopened = await openStore({ location: loc });
    expect(reopened.outboxCount).toBe(14_999);
    expect((await reopened.readOutbox(3)).map((e) => (JSON.parse(e.json) as AuditEvent).eventId)).toEqual(['big10000', 'big10001', 'big10003']);
    await reopened.enqueueOutbox([encodeEvent(ev('after', 1))]);
    expect(reopened.outboxCount).toBe(15_000);
    expect((await reopened.outboxEventIds()).at(-1)).toBe('after');
  });

  it('marks an entry as holding an unsent new id only for ids assigned here, on its first read, before any restart', async () => {
    const loc = await location();
    const store = await AuditStore.open({ location: loc });
    const read = async (s: AuditStore) => (await s.readOutbox(10)).map((e) => [(JSON.parse(e.json) as AuditEvent).eventId, e.unsentNewId]);
    // 'client' came with its id; 'n1' and 'n2' were given theirs by this node.
    await store.enqueueOutbox(['n1', 'client', 'n2'].map((id, i) => encodeEvent(ev(id, i))), { freshIds: new Set(['n1', 'n2']) });
    expect(await read(store)).toEqual([['n1', true], ['client', false], ['n2', true]]);
    // Read again (a retry after a failed forward): the first read may have reached the leader.
    expect(await read(store)).toEqual([['n1', false], ['client', false], ['n2', false]]);
    await store.enqueueOutbox([encodeEvent(ev('n3', 3))], { freshIds: new Set(['n3']) });
    await store.append([ev('logged', 4)]);
    expect((await store.divertSuffixToOutbox(1)).moved).toBe(1);
    // A diverted log entry was ordered by a leader once: never new.
    expect(await read(store)).toEqual([['n1', false], ['client', false], ['n2', false], ['n3', true], ['logged', false]]);
    await store.enqueueOutbox([encodeEvent(ev('n4', 5))], { freshIds: new Set(['n4']) });
    await store.close();
    // After a restart nobody knows what was sent before it.
    const reopened = await openStore({ location: loc });
    expect((await read(reopened)).map(([, unsent]) => unsent)).toEqual([false, false, false, false, false, false]);
  });

  it('refuses to order events when the sequencer says this node is not the leader', async () => {
    let leader = true;
    const store = await openStore({
      sequencer: () => {
        if (!leader) throw new AuditError(AuditErrorCode.NOT_LEADER, 'not the leader');
        return 1;
      },
    });
    await store.append([ev('a', 1)]);
    leader = false;
    await expect(store.append([ev('b', 1)])).rejects.toMatchObject({ code: 'AUDIT_NOT_LEADER' });
    expect((await all(store)).map((e) => e.eventId)).toEqual(['a']);
  });

  it('lets other work run while it orders a large group, and refuses the group when the term changed meanwhile', async () => {
    let term = 1;
    let armed = false;
    const store = await openStore({
      sequencer: () => {
        // The first ask of the big group's write schedules a new term for the next turn of the
        // event loop: it lands only if the writer yields before its batch (it has no other await).
        if (armed) {
          armed = false;
          setImmediate(() => (term = 2));
        }
        return term;
      },
    });
    await store.append([ev('a', 1)]);
    const headBefore = store.chainHead;
    const big = Array.from({ length: 2 * WRITER_YIELD_EVENTS + 500 }, (_, i) => ev(`big-${i}`, 10 + i, { userId: `user-${i % 7}`, tables: [`t.n${i % 3}`] }));
    armed = true;
    await expect(store.append(big)).rejects.toMatchObject({ code: 'AUDIT_NOT_LEADER', message: expect.stringMatching(/term changed from 1 to 2.*nothing of them was stored/) });
    // Nothing of the group: not the events, their indexes, the position nor the chain head.
    expect((await all(store)).map((e) => e.eventId)).toEqual(['a']);
    expect(await store.getByEventId('big-0')).toBeUndefined();
    expect(store.position.lastSeq).toBe(1);
    expect(store.chainHead).toEqual(headBefore);
    const byUser: string[] = [];
    for await (const e of store.search({ action: 'all', user: 'user-0' })) byUser.push(e.eventId);
    expect(byUser).toEqual([]);
    // Retried under the new term, the group is stored once, from the next seq, chained on.
    const { stored } = await store.append(big);
    expect(stored.map((r) => [r.seq, r.term])).toEqual(big.map((_, i) => [i + 2, 2]));
    expect(store.chainHead.seq).toBe(big.length + 1);
    const again = await store.append(big);
    expect(again).toMatchObject({ stored: [], duplicates: big.length });
  });
});

describe('RetentionPruner', () => {
  it('prunes on its interval with the retention read at run time, and stops on close', async () => {
    const store = await openStore();
    const now = Date.now();
    const day = 86_400_000;
    await store.append([ev('old', now - 10 * day), ev('new', now)]);
    let days = 30;
    const pruned: number[] = [];
    const pruner = new RetentionPruner(store, { intervalMs: 20, batchSize: 100, policy: (nowMs) => ({ cutoffMs: nowMs - days * day }), onPruned: (r) => pruned.push(r.deleted) });
    onTestFinished(() => pruner.close());
    pruner.start();
    await new Promise((r) => setTimeout(r, 100));
    expect((await all(store)).map((e) => e.eventId).sort()).toEqual(['new', 'old']);
    days = 5;
    await expect.poll(async () => (await all(store)).map((e) => e.eventId)).toEqual(['new']);
    expect(pruned).toEqual([1]);
    await pruner.close();
    await store.append([ev('old2', now - 10 * day)]);
    await new Promise((r) => setTimeout(r, 100));
    expect((await all(store)).map((e) => e.eventId).sort()).toEqual(['new', 'old2']);
  });
});

describe('a search under a signal', () => {
  it('throws the reason once the signal is aborted, at the next read, and reads no further', async () => {
    const store = await openStore();
    for (let b = 0; b < 4; b++) await store.append(Array.from({ length: 1000 }, (_, i) => ev(`a${b}-${i}`, 1_000 + b * 1000 + i)));
    const controller = new AbortController();
    let read = 0;
    const reading = (async () => {
      for await (const batch of store.searchBatches({ action: 'all' }, { signal: controller.signal })) {
        read += batch.length;
        controller.abort(new Error('the client went away'));
      }
    })();
    await expect(reading).rejects.toThrow('the client went away');
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(4000);
  });
});
