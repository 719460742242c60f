// Goal: a search answered from the secondary indexes returns exactly what a scan of the time range returns, on a leader, after retention and truncation, and on a standby that applied the same log; and the index keys are exactly those of the stored events.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileFilter, inTimeRange, upperTimeMs, type AuditEvent, type SearchFilter, type StoredEvent } from '@auditlake/model';
import fc from 'fast-check';
import { Level } from 'level';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AuditStore, INDEX_FIELD, indexPrefixes, storedJsonOf } from '../src/index.js';
import { encodeErasureDetails, ERASED_MARKER, INTEGRITY_ACTIONS } from '@auditlake/integrity';
import { SELF_SOURCE } from '@auditlake/model';
import { eventKeys } from '../src/index.js';

async function location(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-index-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'store');
}

// Small pools, so filters hit; values that are prefixes of each other and odd characters, so a
// key layout that let one value's range reach into another's would show.
const USERS = ['ann', 'anna', 'bob', 'a"b', 'ü', ''];
const SOURCES = ['trino', 'Trino', 'spark', 'SPARK', 'flink'];
const TABLES = ['db.a', 'db.ab', 'db.a.b', 'x.y', 'ä.ö', 'db'];
const ACTIONS = ['data:Select', 'data:Insert', 'ddl:Create'];
const DECISIONS = ['', 'ALLOW', 'DENY'] as const;

const eventArb = fc.record({
  userId: fc.constantFrom(...USERS),
  source: fc.constantFrom(...SOURCES),
  action: fc.constantFrom(...ACTIONS),
  decision: fc.constantFrom(...DECISIONS),
  tables: fc.array(fc.constantFrom(...TABLES), { maxLength: 3 }),
  query: fc.constantFrom('select 1', 'SELECT * FROM db.a', ''),
  timestamp: fc.integer({ min: 0, max: 60 }),
});
type EventSpec = typeof eventArb extends fc.Arbitrary<infer T> ? T : never;

const filterArb = fc.record(
  {
    user: fc.constantFrom(...USERS.filter((u) => u !== ''), 'nobody'),
    engine: fc.constantFrom('trino', 'spark', 'flink', 'hive'),
    table: fc.constantFrom('db.a', 'db', '.', 'a.b', 'ö', 'zzz'),
    action: fc.constantFrom('read' as const, 'write' as const, 'all' as const),
    decision: fc.constantFrom(...DECISIONS),
    q: fc.constantFrom('select', 'db.a'),
    fromMs: fc.integer({ min: 0, max: 60 }),
    toMs: fc.integer({ min: 0, max: 60 }),
    cursor: fc.record({ timestamp: fc.integer({ min: 0, max: 60 }), ingestTs: fc.integer({ min: 0, max: 2000 }), eventId: fc.constantFrom('e1', 'e5', 'e40') }),
  },
  { requiredKeys: ['action'] },
);

function toEvent(spec: EventSpec, eventId: string): AuditEvent {
  return { eventId, resource: '', details: '', ...spec };
}

/** Every field a stored event may have. */
const STORED_FIELDS = ['eventId', 'userId', 'source', 'action', 'resource', 'decision', 'tables', 'query', 'details', 'redacted', 'sourceId', 'sourceSeq', 'timestamp', 'ingestTs', 'seq', 'term', 'recordHash', 'chainHash', 'fieldCheck', 'erased'] as const;

async function collect(source: AsyncIterable<StoredEvent>): Promise<string[]> {
  const ids: string[] = [];
  for await (const event of source) ids.push(event.eventId);
  return ids;
}

/** The truth: every stored event (a time scan with no predicate), filtered here. */
async function fullScan(store: AuditStore, filter: Omit<SearchFilter, 'limit'>): Promise<string[]> {
  const matches = compileFilter({ ...filter, limit: 1 });
  const toMs = upperTimeMs(filter);
  const ids: string[] = [];
  for await (const event of store.search({ action: 'all' })) {
    if (inTimeRange({ ...filter, ...(toMs !== undefined ? { toMs } : {}), limit: 1 }, event.timestamp) && matches(event)) ids.push(event.eventId);
  }
  return ids;
}

/**
 * Every search answers exactly as the full scan does, also when told to expect a page of one
 * or a few events (its first read then fetches that many and later reads grow from there); and
 * each event keeps the stored text it was parsed from; read in batches, the same.
 */
async function expectExact(store: AuditStore, filters: ReadonlyArray<Omit<SearchFilter, 'limit'>>): Promise<void> {
  for (const filter of filters) {
    const truth = await fullScan(store, filter);
    expect(await collect(store.search(filter)), JSON.stringify(filter)).toEqual(truth);
    for (const expectedEvents of [1, 3, 300]) {
      const events: StoredEvent[] = [];
      for await (const event of store.search(filter, { expectedEvents })) events.push(event);
      expect(events.map((e) => e.eventId), `${JSON.stringify(filter)} expecting ${expectedEvents}`).toEqual(truth);
      for (const event of events) expect(storedJsonOf(event)).toBe(JSON.stringify(event));
      // The batches the search reads in (what the API's page takes): the same events, none empty.
      const batched: string[] = [];
      for await (const batch of store.searchBatches(filter, { expectedEvents })) {
        expect(batch.length).toBeGreaterThan(0);
        for (const event of batch) expect(storedJsonOf(event)).toBe(JSON.stringify(event));
        batched.push(...batch.map((e) => e.eventId));
      }
      expect(batched, `${JSON.stringify(filter)} in batches, expecting ${expectedEvents}`).toEqual(truth);
      // As text events (a search page's): the same events, each reading as its parsed text.
      const texts: string[] = [];
      for await (const batch of store.searchBatches(filter, { expectedEvents, textEvents: true })) {
        for (const event of batch) {
          const parsed = JSON.parse(storedJsonOf(event) as string) as StoredEvent;
          for (const field of STORED_FIELDS) expect(event[field], field).toEqual(parsed[field]);
        }
        texts.push(...batch.map((e) => e.eventId));
      }
      expect(texts, `${JSON.stringify(filter)} as text events, expecting ${expectedEvents}`).toEqual(truth);
    }
  }
}

/** The index keys on disk are exactly those the stored events call for (none left over, none missing). */
async function expectIndexKeysExact(at: string): Promise<void> {
  const db = new Level<string, string>(at, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  await db.open();
  try {
    const expected = new Set<string>();
    for await (const [key, json] of db.iterator({ gte: eventKeys.PREFIX.time, lt: eventKeys.prefixEnd(eventKeys.PREFIX.time) })) {
      const suffix = key.slice(eventKeys.PREFIX.time.length);
      for (const prefix of indexPrefixes(JSON.parse(json) as StoredEvent)) expected.add(prefix + suffix);
    }
    const actual = new Set<string>();
    // Only the per-event keys: not the table dictionary (x!T) nor the free-text sketches (x!q).
    const fieldTags = new Set(Object.values(INDEX_FIELD) as string[]);
    for await (const key of db.keys({ gte: 'x!', lt: 'x"' })) if (fieldTags.has(key.charAt(2))) actual.add(key);
    expect([...actual].sort()).toEqual([...expected].sort());
  } finally {
    await db.close();
  }
}

/**
 * A store of 16,000 events of 30 users (seqs 1.. in order), four blocks of the text sketches: user
 * u7's events in the first two hold the query `needle-of-u7`.
 */
async function storeOfUsersAndNeedle(): Promise<{ store: AuditStore; events: AuditEvent[] }> {
  const store = await AuditStore.open({ location: await location() });
  onTestFinished(() => store.close());
  const events: AuditEvent[] = [];
  for (let i = 0; i < 16_000; i++) {
    const user = `u${i % 30}`;
    events.push({ eventId: `e${i}`, userId: user, source: 'trino', action: 'data:Select', resource: '', decision: 'ALLOW', tables: [], query: user === 'u7' && i < 8000 ? 'needle-of-u7' : '', details: '', timestamp: 1_000_000 + i * 1000 });
  }
  for (let i = 0; i < events.length; i += 4000) await store.append(events.slice(i, i + 4000));
  return { store, events };
}

describe('secondary indexes', () => {
  it('property: indexed search = full scan, on the leader, after retention and truncation, and on a standby', async () => {
    const seed = Number(process.env['INDEX_SEED'] ?? Date.now() % 1_000_000);
    console.log(`secondary-index seed ${seed} (INDEX_SEED=${seed} replays it)`);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(eventArb, { minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 5 }),
        fc.array(filterArb, { minLength: 4, maxLength: 8 }),
        fc.integer({ min: 0, max: 61 }),
        fc.boolean(),
        fc.integer({ min: 0, max: 20 }),
        async (batches, filters, cutoffMs, limitToHalf, divertBack) => {
          const leaderAt = await location();
          const standbyAt = await location();
          let clock = 1000;
          const leader = await AuditStore.open({ location: leaderAt, now: () => clock++ });
          const standby = await AuditStore.open({ location: standbyAt });
          try {
            let n = 0;
            for (const batch of batches) await leader.append(batch.map((spec) => toEvent(spec, `e${n++}`)));
            await expectExact(leader, filters);

            // A standby applies the leader's bytes, in two pulls, and builds the same indexes.
            const half = Math.floor(leader.position.lastSeq / 2);
            await standby.applyReplicated(await leader.readEncodedBySeq(0, half));
            await standby.applyReplicated(await leader.readEncodedBySeq(half, Number.MAX_SAFE_INTEGER));
            await expectExact(standby, filters);
            for (const filter of filters) expect(await collect(standby.search(filter))).toEqual(await collect(leader.search(filter)));

            // Retention: the events and their index keys go together.
            await leader.pruneBefore(cutoffMs, 7, async () => true, limitToHalf ? half : undefined);
            await expectExact(leader, filters);

            // A divergent suffix is taken off the standby's log with its index keys.
            await standby.divertSuffixToOutbox(Math.max(1, standby.position.lastSeq - divertBack));
            await expectExact(standby, filters);
          } finally {
            await leader.close();
            await standby.close();
          }
          await expectIndexKeysExact(leaderAt);
          await expectIndexKeysExact(standbyAt);
        },
      ),
      { seed, numRuns: 30 },
    );
  });

  it('judges density from the newest event, not from a window end far past it', async () => {
    const store = await AuditStore.open({ location: await location() });
    onTestFinished(() => store.close());
    // 2,000 events a second apart, 10 users: a user's 128 newest keys span 1,280 s, the time
    // range's span 128 s. A window ending a day later (the last 7 days, the newest day empty)
    // adds the same empty day to both spans; measured from there they looked alike and the
    // search read every event of the window to find one user's.
    const events: AuditEvent[] = [];
    for (let i = 0; i < 2000; i++) {
      events.push({ eventId: `e${i}`, userId: `u${i % 10}`, source: 'trino', action: 'data:Select', resource: '', decision: 'ALLOW', tables: [], query: '', details: '', timestamp: 1_000_000 + i * 1000 });
    }
    await store.append(events);
    const newest = 1_000_000 + 1999 * 1000;
    expect(await store.searchPlan({ action: 'all', user: 'u7', toMs: newest })).toEqual(['user']);
    expect(await store.searchPlan({ action: 'all', user: 'u7', toMs: newest + 86_400_000 })).toEqual(['user']);
    expect(await store.searchPlan({ action: 'all', user: 'u7', fromMs: 0, toMs: newest + 86_400_000 })).toEqual(['user']);
    // The same stretch, now holding a day of the store's own checkpoints (100, ten minutes
    // apart): the window's newest 128 events are mostly those, sparse; below them every tenth
    // event is u7's.
    const night: AuditEvent[] = [];
    for (let i = 1; i <= 100; i++) {
      night.push({ eventId: `c${i}`, userId: 'auditlake', source: 'auditlake', action: 'integrity:Checkpoint', resource: '', decision: '', tables: [], query: '', details: '', timestamp: newest + i * 600_000 });
    }
    await store.append(night);
    expect(await store.searchPlan({ action: 'all', user: 'u7', fromMs: 0, toMs: newest + 86_400_000 })).toEqual(['user']);
    expect(await store.searchPlan({ action: 'all', user: 'u7', engine: 'trino', fromMs: 0, toMs: newest + 86_400_000 })).toEqual(['user']);
    // The time range is chosen where it should be: most events match.
    expect(await store.searchPlan({ action: 'all', engine: 'trino', fromMs: 0, toMs: newest + 86_400_000 })).toEqual([]);
    await expectExact(store, [
      { action: 'all', user: 'u7', fromMs: 0, toMs: newest + 86_400_000 },
      { action: 'all', user: 'u7', engine: 'trino', fromMs: 0, toMs: newest + 86_400_000 },
      { action: 'all', engine: 'trino', fromMs: 0, toMs: newest + 86_400_000 },
    ]);
  });

  it('counts the newer events a time scan reads first: a user busy alone, then quiet under others\' traffic, is read by the index', async () => {
    const store = await AuditStore.open({ location: await location() });
    onTestFinished(() => store.close());
    // A nightly job's user: 200 events a second apart with nobody else, then 5,000 events of
    // seven other users. Below u7's newest event u7 is every event; above it, none is.
    const events: AuditEvent[] = [];
    const of = (eventId: string, userId: string, timestamp: number): AuditEvent => ({ eventId, userId, source: 'trino', action: 'data:Select', resource: '', decision: 'ALLOW', tables: [], query: '', details: '', timestamp });
    for (let i = 0; i < 200; i++) events.push(of(`j${i}`, 'u7', 1_000_000 + i * 1000));
    const quiet = 1_000_000 + 200 * 1000;
    for (let i = 0; i < 5000; i++) events.push(of(`o${i}`, `u${i % 7}`, quiet + i * 1000));
    await store.append(events);
    const week = { action: 'all' as const, user: 'u7', fromMs: 0, toMs: quiet + 5000 * 1000 };
    expect(await store.searchPlan(week)).toEqual(['user']);
    // Only u7's own stretch in the window: nothing above it, and the time range is as good.
    expect(await store.searchPlan({ ...week, toMs: quiet - 1 })).toEqual([]);
    await expectExact(store, [week, { ...week, toMs: quiet - 1 }]);
  });

  it('answers from the sparsest index and intersects a second selective one', async () => {
    const store = await AuditStore.open({ location: await location() });
    onTestFinished(() => store.close());
    // 3,000 events: 30 users, a tenth of them denied; user u7 has 100 events, 10 denied.
    const events: AuditEvent[] = [];
    for (let i = 0; i < 3000; i++) {
      events.push({
        eventId: `e${i}`,
        userId: `u${i % 30}`,
        source: i % 2 === 0 ? 'trino' : 'spark',
        action: 'data:Select',
        resource: '',
        decision: i % 10 === 7 ? 'DENY' : 'ALLOW',
        tables: [`db.t${i % 7}`],
        query: '',
        details: '',
        timestamp: 1_000_000 + i * 1000,
      });
    }
    await store.append(events);
    expect(await store.searchPlan({ action: 'all', user: 'u7' })).toEqual(['user']);
    // Half the denials' keys are read to save half of their event reads: cheaper.
    expect(await store.searchPlan({ action: 'all', decision: 'DENY', engine: 'trino' })).toEqual(['decision', 'engine']);
    expect((await store.searchPlan({ action: 'all', user: 'u7', decision: 'DENY' }))[0]).toBe('user');
    // No predicate an index serves, or one that holds for most events: the time range is read.
    expect(await store.searchPlan({ action: 'all' })).toEqual([]);
    expect(await store.searchPlan({ action: 'read' })).toEqual([]);
    // A table substring matching no indexed name answers without reading anything.
    expect(await store.searchPlan({ action: 'all', table: 'nope' })).toEqual(['table']);
    expect(await collect(store.search({ action: 'all', table: 'nope' }))).toEqual([]);
    expect(await store.searchPlan({ action: 'all', table: 'db.t3' })).toEqual(['table']);
    await expectExact(store, [
      { action: 'all', user: 'u7' },
      { action: 'all', user: 'u7', decision: 'DENY' },
      { action: 'all', decision: 'DENY', engine: 'trino' },
      { action: 'all', decision: 'DENY', engine: 'spark', fromMs: 1_200_000 },
      { action: 'all', decision: 'DENY', engine: 'trino', fromMs: 1_500_000, toMs: 2_000_000 },
      { action: 'all', table: 'db.t', user: 'u3' },
      { action: 'all', table: 'db.t3', decision: 'ALLOW' },
    ]);
  });

  it.each([
    ['user', { action: 'all', user: 'u7' }],
    ['text', { action: 'all', q: 'needle-of-u7' }],
  ] as const)('a search read by the %s plan while retention deletes the events its keys named still returns every one: its reads are made at one point of the store', async (plan, filter) => {
    const { store, events } = await storeOfUsersAndNeedle();
    const expected = events.filter((event) => ('user' in filter ? event.userId === filter.user : event.query === filter.q)).map((event) => event.eventId);
    expect(await store.searchPlan(filter)).toEqual([plan]);
    const batches = store.searchBatches(filter, { expectedEvents: 10 });
    const first = await batches.next();
    const found = first.done === true ? [] : [...first.value];
    expect(found.length).toBeGreaterThan(0);
    expect(found.length).toBeLessThan(expected.length);
    // Retention deletes every event while the search is paused (a stream's client reading slowly).
    expect((await store.pruneBefore(Number.MAX_SAFE_INTEGER, 1000, async () => true)).deleted).toBe(16_000);
    for await (const batch of batches) found.push(...batch);
    expect(found.map((event) => event.eventId).sort()).toEqual(expected.sort());
    expect(await collect(store.search(filter))).toEqual([]);
  });

  it.each([
    ['user', { action: 'all', user: 'u7' }],
    ['text', { action: 'all', q: 'needle-of-u7' }],
    ['time', { action: 'all', fromMs: 0 }],
  ] as const)('a search read by the %s plan across an erasure shows the erased values as the marker from then on, though its snapshot holds them', async (plan, filter) => {
    const { store, events } = await storeOfUsersAndNeedle();
    expect(await store.searchPlan(filter)).toEqual(plan === 'time' ? [] : [plan]);
    const batches = store.searchBatches(filter, { expectedEvents: 10 });
    const first = await batches.next();
    const before = first.done === true ? [] : [...first.value];
    // The needle's events are erased (their query) while the search is paused.
    const needled = events.flatMap((event, i) => (event.query === 'needle-of-u7' ? [{ eventId: event.eventId, seq: i + 1 }] : []));
    expect(needled).toHaveLength(267);
    const erasure: AuditEvent = { eventId: 'erase-1', userId: 'admin', source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, resource: '', decision: '', tables: [], query: '', timestamp: 2_000_000_000, details: encodeErasureDetails({ v: 1, fields: ['query'], records: needled }) };
    expect((await store.append([erasure])).stored).toHaveLength(1);
    const after: StoredEvent[] = [];
    for await (const batch of batches) after.push(...batch);
    expect(after.filter((event) => event.query === 'needle-of-u7')).toEqual([]);
    // The needle's events not sent yet: no longer matching q, else shown erased (and every other event as it is).
    const notSentYet = needled.filter((e) => !before.some((b) => b.eventId === e.eventId)).length;
    expect(notSentYet).toBeGreaterThan(0);
    if (plan === 'text') expect(after).toEqual([]);
    else expect(after.filter((event) => event.query === ERASED_MARKER).length).toBe(notSentYet);
    if (plan === 'time') expect(before.length + after.length).toBe(events.length);
  });

  it('indexes the events of a store written before the indexes existed, once, when it is opened', async () => {
    const at = await location();
    // An older store: events under their three keys only.
    const store = await AuditStore.open({ location: at });
    await store.append([toEvent({ userId: 'ann', source: 'trino', action: 'data:Select', decision: 'DENY', tables: ['db.a'], query: '', timestamp: 5 }, 'old')]);
    await store.close();
    const db = new Level<string, string>(at, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    const stale = await db.keys({ gte: 'x!', lt: 'x"' }).all();
    const batch = db.batch();
    for (const key of stale) batch.del(key);
    batch.del(eventKeys.localKey('indexVersion'));
    await batch.write({ sync: true });
    await db.close();

    const reopened = await AuditStore.open({ location: at });
    onTestFinished(() => reopened.close());
    expect(await collect(reopened.search({ action: 'all', user: 'ann' }))).toEqual(['old']);
    expect(await collect(reopened.search({ action: 'all', table: 'db' }))).toEqual(['old']);
    await reopened.close();
    await expectIndexKeysExact(at);
  });
});
