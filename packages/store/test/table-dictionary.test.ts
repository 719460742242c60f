// Goal: the table-name dictionary the index writer holds in memory is bounded by the bytes of
// its names as well as their number (4 KiB names must not fill the heap), and past the bound a
// `table` search still answers exactly what a scan of every event answers, also after a reopen.
import { seededRandom, type AuditEvent, type StoredEvent } from '@auditlake/model';
import { Level } from 'level';
import { describe, expect, it } from 'vitest';
import { tableNameKey } from '../src/index-keys.js';
import { planIndexedSearch, tableNamesUnused } from '../src/index-reader.js';
import { IndexWriter, KNOWN_TABLES_BYTES_MAX, type IndexSink } from '../src/index-writer.js';
import { useTempStores } from './temp-stores.js';
import type { AuditStore } from '../src/audit-store.js';

const stores = useTempStores('auditlake-tables-');

/** A table name of 4,000 bytes, unique by `i`: `t00042.xxx…`. */
function longName(i: number): string {
  const head = `t${String(i).padStart(5, '0')}.`;
  return head + 'x'.repeat(4_000 - head.length);
}

/** Names of 4,000 bytes filling the dictionary's byte bound, and 10 more. */
const NAMES_PAST_BOUND = Math.floor(KNOWN_TABLES_BYTES_MAX / 4_000) + 10;

const nowhere: IndexSink = { put: () => undefined, del: () => undefined };

describe('the table-name dictionary in memory', () => {
  it(`holds names up to ${KNOWN_TABLES_BYTES_MAX} bytes of them, added or loaded, and past that not all of them`, async () => {
    const { store, location } = await stores.open();
    await stores.close(store);
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    try {
      const writer = await IndexWriter.load(db);
      const within = Math.floor(KNOWN_TABLES_BYTES_MAX / 4_000);
      const terms = (tables: string[]) => ({ userId: 'u', source: 'trino', action: 'data:Select', decision: 'ALLOW', tables });
      for (let i = 0; i < within; i++) writer.put(nowhere, terms([longName(i)]), 1, i + 1, new Set());
      expect(writer.knownTables?.size).toBe(within);
      writer.put(nowhere, terms([longName(within)]), 1, within + 1, new Set());
      expect(writer.knownTables).toBeUndefined();

      // Loaded from a dictionary past the bound: not all of it is held either.
      const batch = db.batch();
      for (let i = 0; i < NAMES_PAST_BOUND; i++) batch.put(tableNameKey(longName(i)), '');
      await batch.write();
      expect((await IndexWriter.load(db)).knownTables).toBeUndefined();
    } finally {
      await db.close();
    }
  });
});

async function ids(source: AsyncIterable<StoredEvent>): Promise<string[]> {
  const found: string[] = [];
  for await (const event of source) found.push(event.eventId);
  return found;
}

/** What a scan of every event finds for a table substring. */
async function scanned(store: AuditStore, table: string): Promise<string[]> {
  const found: string[] = [];
  for await (const event of store.search({ action: 'all' })) if (event.tables.some((name) => name.includes(table))) found.push(event.eventId);
  return found;
}

describe('a table search past the bound', () => {
  it('answers exactly as a scan of every event, also after a reopen', async () => {
    const { store, location } = await stores.open();
    // Ten long names an event, each name in one event, past the bound; and a short common one.
    const events: AuditEvent[] = [];
    for (let e = 0; e * 10 < NAMES_PAST_BOUND; e++) {
      const tables = Array.from({ length: 10 }, (_, k) => longName(e * 10 + k)).filter((_, k) => e * 10 + k < NAMES_PAST_BOUND);
      if (e % 7 === 0) tables.push('db.common');
      events.push({ eventId: `e${e}`, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: 'ALLOW', tables, query: '', details: '', timestamp: 1_000 + e });
    }
    await store.append(events.slice(0, 200));
    await store.append(events.slice(200));
    const check = async (s: AuditStore) => {
      // One name, ten names (a union of their ranges), more than a union takes, a short one, none.
      for (const table of ['t00042.', `t${String(NAMES_PAST_BOUND - 5).padStart(5, '0')}`, 't0004', 'x', 'db.common', 'common']) {
        const truth = await scanned(s, table);
        expect(truth.length, table).toBeGreaterThan(0);
        expect(await ids(s.search({ action: 'all', table })), table).toEqual(truth);
      }
      expect(await s.searchPlan({ action: 'all', table: 't00042.' })).toEqual(['table']);
      expect(await s.searchPlan({ action: 'all', table: 'nope' })).toEqual(['table']);
      expect(await ids(s.search({ action: 'all', table: 'nope' }))).toEqual([]);
    };
    await check(store);
    await stores.close(store);
    const { store: reopened } = await stores.open(location);
    await check(reopened);
  });
});

const at = (eventId: string, timestamp: number, tables: string[]): AuditEvent => ({ eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: 'ALLOW', tables, query: '', details: '', timestamp });

describe('retention and the dictionary', () => {
  /** The dictionary as LevelDB holds it, the store closed to read it. */
  async function dictionaryAt(location: string): Promise<string[]> {
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    try {
      return (await db.keys({ gte: 'x!T', lt: 'x!U' }).all()).map((key) => key.slice(3));
    } finally {
      await db.close();
    }
  }


  it('drops the names only pruned events named, keeps those newer events name, and indexes a dropped name again when it comes back', async () => {
    const { store, location } = await stores.open();
    // 2,500 old events over three prune batches, each naming a table of its own and db.kept.
    const old = Array.from({ length: 2_500 }, (_, i) => at(`old${i}`, 1_000 + i, [`db.gone${i}`, 'db.kept']));
    await store.append(old.slice(0, 1_250));
    await store.append(old.slice(1_250));
    await store.append([at('new', 100_000, ['db.kept', 'db.new'])]);
    expect(await store.pruneBefore(50_000, 1_000, async () => true)).toMatchObject({ deleted: 2_500 });
    expect(await ids(store.search({ action: 'all', table: 'gone' }))).toEqual([]);
    expect(await ids(store.search({ action: 'all', table: 'db.kept' }))).toEqual(['new']);
    // A name dropped is written again with its next event (the writer forgot it too).
    await store.append([at('back', 100_001, ['db.gone7'])]);
    expect(await ids(store.search({ action: 'all', table: 'gone7' }))).toEqual(['back']);
    await stores.close(store);
    expect((await dictionaryAt(location)).sort()).toEqual(['db.gone7', 'db.kept', 'db.new']);
  });
});

describe('tableNamesUnused', () => {
  it('finds exactly the names no stored event names, whatever their order, lengths and the deletes between them', async () => {
    const random = seededRandom(20251205);
    const { store, location } = await stores.open();
    // Names of several lengths (the key orders by length first), some sharing prefixes.
    const names = Array.from({ length: 300 }, (_, i) => `db.${'t'.repeat(1 + Math.floor(random() * 4))}${i % 150}${i >= 150 ? 'x' : ''}`);
    const events: AuditEvent[] = Array.from({ length: 600 }, (_, i) => at(`e${i}`, 1_000 + i, names.filter(() => random() < 0.01)));
    await store.append(events);
    // Retention deletes the older half: names only they named are gone, the others stay.
    await store.pruneBefore(1_300, 100, async () => true);
    const kept = new Set<string>();
    for await (const event of store.search({ action: 'all' })) for (const table of event.tables) kept.add(table);
    await stores.close(store);
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    try {
      const shuffled = [...new Set(names)].sort(() => random() - 0.5);
      const unused = await tableNamesUnused(db, shuffled);
      expect(new Set(unused)).toEqual(new Set(shuffled.filter((name) => !kept.has(name))));
      expect(kept.size).toBeGreaterThan(0);
      expect(unused.length).toBeGreaterThan(0);
      expect(await tableNamesUnused(db, [])).toEqual([]);
    } finally {
      await db.close();
    }
  });
});

describe('a table search past the bound, at its snapshot', () => {
  it('finds the events its snapshot holds although their names left the dictionary after it', async () => {
    const { store, location } = await stores.open();
    await store.append([at('held', 1_000, ['db.orders'])]);
    await stores.close(store);
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    const snapshot = db.snapshot();
    try {
      // A prune after the snapshot: every key goes, the dictionary's name with them.
      await db.clear();
      // No names held in memory (past the bound): the dictionary is read from LevelDB.
      const plan = await planIndexedSearch(db, { action: 'all', table: 'orders' }, undefined, undefined, undefined, snapshot);
      const found: string[] = [];
      for await (const batch of plan?.batches ?? []) for (const json of batch) found.push((JSON.parse(json) as StoredEvent).eventId);
      expect(plan?.fields).toEqual(['table']);
      expect(found).toEqual(['held']);
    } finally {
      await snapshot.close();
      await db.close();
    }
  });
});
