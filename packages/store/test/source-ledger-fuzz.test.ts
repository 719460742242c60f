// Goal: the completeness ledger's idle-source retirement and bounds hold over random histories
// of thousands of sources and many days of events. The same events, applied to ledgers on real
// LevelDB stores in different batches (a leader's append groups, batches of any size cutting
// through groups and days, everything at once), with reopens and crashed batches (prepared, never
// written) at random points, give every copy the same ledger: the same as a brute-force model of
// the rules (source-ledger-model.ts), totals equal to the sums over the entries, the stored keys
// exactly the model's (a retired source's all deleted), and a reopen reading the same back
// without writing anything. A failing seed is printed and replays.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { afterEach, describe, expect, it } from 'vitest';
import { LEDGER_DAY_KEY, OTHER_SOURCES_KEY, RETIRED_SOURCES_KEY, SourceLedger } from '../src/source-ledger.js';
import { ledgerJson, randomHistory, seededRandom, type HistoryGroup } from './source-ledger-history.js';
import { LedgerModel, type ModelEvent } from './source-ledger-model.js';

const dirs: string[] = [];
const dbs: Array<Level<string, string>> = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) await db.close();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function openDb(location?: string): Promise<{ db: Level<string, string>; location: string }> {
  const where = location ?? (await mkdtemp(join(tmpdir(), 'auditlake-ledger-fuzz-')));
  if (location === undefined) dirs.push(where);
  const db = new Level<string, string>(where, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  await db.open();
  dbs.push(db);
  return { db, location: where };
}

async function closeDb(db: Level<string, string>): Promise<void> {
  dbs.splice(dbs.indexOf(db), 1);
  await db.close();
}

/** Every ledger key a store holds: the sources' (`h!`) and the ledger's own metadata. */
async function ledgerKeys(db: Level<string, string>): Promise<Map<string, string>> {
  const keys = new Map(await db.iterator({ gte: 'h!', lt: 'h"' }).all());
  for (const key of [LEDGER_DAY_KEY, RETIRED_SOURCES_KEY, OTHER_SOURCES_KEY]) {
    const value = await db.get(key);
    if (value !== undefined) keys.set(key, value);
  }
  return keys;
}

/** The keys a store holding the model's ledger has. */
function modelKeys(model: LedgerModel): Map<string, string> {
  const keys = model.sourceKeys();
  if (model.day !== undefined) keys.set(LEDGER_DAY_KEY, JSON.stringify(model.day));
  if (model.retired.sources > 0) keys.set(RETIRED_SOURCES_KEY, JSON.stringify(model.retired));
  if (model.other > 0) keys.set(OTHER_SOURCES_KEY, String(model.other));
  return keys;
}

/**
 * `actual` equals `expected`, compared as JSON (vitest's deep equality takes seconds over 10,000
 * entries); on a difference, the first differing element is compared for a readable failure.
 */
function expectEqualList<T>(actual: readonly T[], expected: readonly T[], what: string): void {
  if (JSON.stringify(actual) === JSON.stringify(expected)) return;
  const at = actual.findIndex((item, i) => JSON.stringify(item) !== JSON.stringify(expected[i]));
  expect(actual[at < 0 ? actual.length : at], `${what} (first difference, at ${at < 0 ? actual.length : at} of ${actual.length} and ${expected.length})`).toEqual(expected[at < 0 ? actual.length : at]);
  expect(actual.length, what).toBe(expected.length);
}

function expectSame(ledger: SourceLedger, model: LedgerModel, what: string): void {
  model.checkShared();
  const summary = ledger.summary();
  expect(summary, `${what}: summary`).toEqual(model.summary());
  expect(ledger.rangeCount, `${what}: ranges`).toBe(model.rangeCount());
  const entries = ledger.entries();
  expect(entries.length, `${what}: sources`).toBe(model.sources.size);
  expectEqualList(entries, model.entries(), `${what}: entries`);
  // The totals are the sums over the entries, whatever retirements and returns came before.
  expect(summary.missing, `${what}: missing summed`).toBe(entries.reduce((n, entry) => n + entry.missing, 0));
  expect(summary.sourcesWithGaps, `${what}: sources with gaps summed`).toBe(entries.filter((entry) => entry.missing > 0).length);
}

async function expectStored(db: Level<string, string>, model: LedgerModel, what: string): Promise<void> {
  const sorted = (keys: Map<string, string>) => [...keys].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  expectEqualList(sorted(await ledgerKeys(db)), sorted(modelKeys(model)), `${what}: stored keys`);
}

/** One event as the ledger takes it: its JSON and, when ordered, its ingestTs. */
interface Item {
  json: string;
  event: ModelEvent;
}

/** Writes `items` as one batch; `crash` prepares it and never writes it (the ledger must not change). */
async function applyBatch(db: Level<string, string>, ledger: SourceLedger, items: readonly Item[], crash = false): Promise<void> {
  const change = ledger.begin();
  for (const { json, event } of items) change.addJson(json, event.ingestTs);
  const batch = db.batch();
  change.putChanged(batch);
  if (crash) {
    await batch.close();
    return;
  }
  await batch.write({ sync: false });
  change.commit();
}

/** How one copy cuts the events into batches. */
type Cutting = 'groups' | 'random' | 'whole';

async function applyHistory(groups: readonly HistoryGroup[], cutting: Cutting, random: () => number, checkpoint?: (ledger: SourceLedger, db: Level<string, string>, done: number) => Promise<void>): Promise<{ ledger: SourceLedger; db: Level<string, string>; reopens: number; crashes: number }> {
  const int = (n: number) => Math.floor(random() * n);
  let { db, location } = await openDb();
  let ledger = await SourceLedger.load(db);
  const items: Item[] = groups.flatMap((group, g) => group.events.map((event, i) => ({ json: ledgerJson(event, `e${g}-${i}`), event })));
  let reopens = 0;
  let crashes = 0;
  if (cutting === 'groups') {
    let at = 0;
    for (const group of groups) {
      await applyBatch(db, ledger, items.slice(at, at + group.events.length));
      at += group.events.length;
    }
    return { ledger, db, reopens, crashes };
  }
  if (cutting === 'whole') {
    for (let at = 0; at < items.length; at += 60_000) await applyBatch(db, ledger, items.slice(at, at + 60_000));
    return { ledger, db, reopens, crashes };
  }
  // Cuts at random, and around the events that may open a day (a group on a later day than the
  // one before): right before, right after, a few events off, or a batch of that event alone.
  const cuts = new Set<number>();
  for (let at = 0; at < items.length; at += 1 + int(4_000)) cuts.add(at);
  let at = 0;
  let dayBefore: number | undefined;
  for (const group of groups) {
    const day = group.ingestTs === undefined ? undefined : Math.floor(group.ingestTs / 86_400_000);
    if (day !== undefined && (dayBefore === undefined || day > dayBefore) && random() < 0.7) {
      const opener = at + int(7) - 3;
      cuts.add(opener);
      if (random() < 0.5) cuts.add(opener + 1);
    }
    if (day !== undefined) dayBefore = Math.max(dayBefore ?? day, day);
    at += group.events.length;
  }
  const bounds = [...cuts].filter((cut) => cut > 0 && cut < items.length).sort((x, y) => x - y);
  bounds.push(items.length);
  let from = 0;
  for (let b = 0; b < bounds.length; ) {
    const to = bounds[b] as number;
    const batch = items.slice(from, to);
    if (random() < 0.05) {
      crashes++;
      await applyBatch(db, ledger, batch, true);
      // After a crash the node restarts, or the writer goes on from the ledger it kept.
      if (random() < 0.5) {
        await closeDb(db);
        ({ db, location } = await openDb(location));
        ledger = await SourceLedger.load(db);
        reopens++;
      }
      continue;
    }
    await applyBatch(db, ledger, batch);
    from = to;
    b++;
    if (random() < 0.05) {
      await closeDb(db);
      ({ db, location } = await openDb(location));
      const before = await ledgerKeys(db);
      ledger = await SourceLedger.load(db);
      // Keys this version wrote are read back as they are: the load changes nothing.
      expectEqualList([...(await ledgerKeys(db))], [...before], 'keys after a load');
      reopens++;
    }
    if (checkpoint !== undefined && random() < 0.03) await checkpoint(ledger, db, from);
  }
  return { ledger, db, reopens, crashes };
}

describe('the completeness ledger over random histories', () => {
  const seeds = (process.env.LEDGER_FUZZ_SEEDS ?? '1').split(',').map(Number);
  for (const seed of seeds) {
    it(`seed ${seed}: every cutting into batches, reopen and crashed batch gives the model's ledger`, async () => {
      const random = seededRandom(seed);
      const groups = randomHistory(random, { crowd: 9_000 + Math.floor(random() * 300), skippers: 110 + Math.floor(random() * 20), skipperSeqs: 1_000, days: 90, sampled: true });
      const events = groups.flatMap((group) => group.events);

      // The model, with the events up to each checkpoint of the randomly cut copy.
      const model = new LedgerModel();
      let modelAt = 0;
      const advance = (to: number) => {
        for (; modelAt < to; modelAt++) model.apply(events[modelAt] as ModelEvent);
      };
      const checkpoint = async (ledger: SourceLedger, db: Level<string, string>, done: number) => {
        advance(done);
        expectSame(ledger, model, `seed ${seed}, after ${done} events`);
        await expectStored(db, model, `seed ${seed}, after ${done} events`);
      };
      const cut = await applyHistory(groups, 'random', seededRandom(seed * 7_919), checkpoint);
      advance(events.length);
      const what = `seed ${seed} (${events.length} events, ${cut.reopens} reopens, ${cut.crashes} crashes)`;
      console.log(`${what}: ${JSON.stringify(model.summary())}, day ${model.day?.number}, ranges ${model.rangeCount()}, shared ${model.shared()}`);
      // The history reached what it is for: retirements, returns, sources past the bound, a full shared budget.
      expect(model.retired.sources, what).toBeGreaterThan(5_000);
      expect(model.other, what).toBeGreaterThan(0);
      expectSame(cut.ledger, model, `${what}, cut at random`);
      await expectStored(cut.db, model, `${what}, cut at random`);

      for (const cutting of ['groups', 'whole'] as const) {
        const copy = await applyHistory(groups, cutting, random);
        expectSame(copy.ledger, model, `${what}, cut by ${cutting}`);
        await expectStored(copy.db, model, `${what}, cut by ${cutting}`);
        const reread = await SourceLedger.load(copy.db);
        expectSame(reread, model, `${what}, cut by ${cutting}, reopened`);
      }
    }, 120_000);
  }
});
