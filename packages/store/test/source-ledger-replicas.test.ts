// Goal: every copy of a log that applies the same events in the same order ends with the same
// completeness ledger, idle-source retirement included, however the events came: a leader
// appending random groups (some of them appends sent together, which the writer orders as one
// group under one ingestTs) and reopened between groups, and standbys pulling the log in pulls of
// random sizes (cutting through groups and days), reopened at random points, one following the
// leader as it writes. The ledger of every copy equals the brute-force model fed with the
// leader's log (source-ledger-model.ts), and so do the stored keys. A failing seed replays.
import type { AuditEvent } from '@auditlake/model';
import { Level } from 'level';
import { describe, expect, it } from 'vitest';
import { useTempStores } from './temp-stores.js';
import { readReplicatedEntry } from '../src/replicated-entry.js';
import { LEDGER_DAY_KEY, OTHER_SOURCES_KEY, RETIRED_SOURCES_KEY } from '../src/source-ledger.js';
import type { AuditStore } from '../src/audit-store.js';
import { randomHistory, seededRandom } from './source-ledger-history.js';
import { LedgerModel, type ModelEvent } from './source-ledger-model.js';

const stores = useTempStores('auditlake-ledger-replicas-');

function auditEvent(eventId: string, event: ModelEvent): AuditEvent {
  return {
    eventId,
    userId: 'u',
    source: 'trino',
    action: 'data:Select',
    resource: '',
    decision: 'ALLOW',
    tables: [],
    query: '',
    details: '',
    timestamp: 1_000,
    sourceId: event.sourceId,
    ...(event.sourceSeq === undefined ? {} : { sourceSeq: event.sourceSeq }),
  };
}

/** Every ledger key of a closed store: the sources' (`h!`) and the ledger's own metadata, sorted. */
async function storedLedger(location: string): Promise<Array<[string, string]>> {
  const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  await db.open();
  try {
    const keys = await db.iterator({ gte: 'h!', lt: 'h"' }).all();
    for (const key of [LEDGER_DAY_KEY, RETIRED_SOURCES_KEY, OTHER_SOURCES_KEY]) {
      const value = await db.get(key);
      if (value !== undefined) keys.push([key, value]);
    }
    return keys.sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  } finally {
    await db.close();
  }
}

function modelKeys(model: LedgerModel): Array<[string, string]> {
  const keys = model.sourceKeys();
  if (model.day !== undefined) keys.set(LEDGER_DAY_KEY, JSON.stringify(model.day));
  if (model.retired.sources > 0) keys.set(RETIRED_SOURCES_KEY, JSON.stringify(model.retired));
  if (model.other > 0) keys.set(OTHER_SOURCES_KEY, String(model.other));
  return [...keys].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
}

/** Compared as JSON (vitest's deep equality takes seconds over 10,000 entries); the first difference shown. */
function expectEqualList<T>(actual: readonly T[], expected: readonly T[], what: string): void {
  if (JSON.stringify(actual) === JSON.stringify(expected)) return;
  const at = actual.findIndex((item, i) => JSON.stringify(item) !== JSON.stringify(expected[i]));
  const i = at < 0 ? actual.length : at;
  expect(actual[i], `${what} (first difference, at ${i} of ${actual.length} and ${expected.length})`).toEqual(expected[i]);
  expect(actual.length, what).toBe(expected.length);
}

function expectModel(store: AuditStore, model: LedgerModel, what: string): void {
  model.checkShared();
  expect(store.sourceLedgerSummary(), `${what}: summary`).toEqual(model.summary());
  expect(store.sourceLedgerRanges(), `${what}: ranges`).toBe(model.rangeCount());
  expectEqualList(store.sourceLedger(), model.entries(), `${what}: entries`);
}

/** The model fed with a store's log, entry by entry, with each entry's own ingestTs. */
async function modelOfLog(store: AuditStore): Promise<LedgerModel> {
  const model = new LedgerModel();
  for (let seq = 0; ; ) {
    const entries = await store.readEncodedBySeq(seq, 5_000);
    if (entries.length === 0) return model;
    for (const bytes of entries) {
      const entry = readReplicatedEntry(bytes);
      const json = JSON.parse(Buffer.from(bytes).toString('utf8')) as { sourceId?: string; sourceSeq?: number };
      if (json.sourceId !== undefined) model.apply({ sourceId: json.sourceId, sourceSeq: json.sourceSeq, ingestTs: entry.ingestTs });
      seq = entry.seq;
    }
  }
}

/** A standby, and where its log ends (the leader's seqs have no gaps here: nothing is pruned). */
interface Standby {
  store: AuditStore;
  location: string;
  at: number;
}

/** Pulls up to `entries` entries into a standby, in pulls of random sizes (1 to a few thousand). */
async function pull(leader: AuditStore, standby: Standby, random: () => number, entries: number): Promise<void> {
  for (let left = entries; left > 0; ) {
    const size = Math.min(left, random() < 0.3 ? 1 + Math.floor(random() * 5) : 1 + Math.floor(random() * 4_000));
    const read = await standby.store.applyReplicated(await leader.readEncodedBySeq(standby.at, size));
    if (read === 0) return;
    standby.at += read;
    left -= read;
  }
}

describe('replicas of a log with idle sources retired', () => {
  const seeds = (process.env.LEDGER_REPLICA_SEEDS ?? '1').split(',').map(Number);
  for (const seed of seeds) {
    it(`seed ${seed}: a leader appending in groups and reopened, and standbys pulling in any sizes and reopened, hold the model's ledger`, async () => {
      const random = seededRandom(seed);
      const int = (n: number) => Math.floor(random() * n);
      const groups = randomHistory(random, { crowd: 9_000 + int(200), skippers: 0, skipperSeqs: 0, days: 75, sampled: false })
        // An empty sourceId is refused at ingest.
        .map((group) => ({ ...group, events: group.events.filter((event) => event.sourceId !== '') }))
        .filter((group) => group.events.length > 0);
      const clock = { now: 0 };
      const opened = await stores.open(undefined, () => clock.now);
      const leaderLocation = opened.location;
      let leader = opened.store;
      const open = async (): Promise<Standby> => ({ ...(await stores.open()), at: 0 });
      const reopen = async (standby: Standby): Promise<void> => {
        await stores.close(standby.store);
        standby.store = (await stores.open(standby.location)).store;
      };
      const follower = await open();
      let eventNumber = 0;
      let leaderReopens = 0;
      for (const group of groups) {
        clock.now = group.ingestTs as number;
        const events = group.events.map((event) => auditEvent(`e${eventNumber++}`, event));
        // Sometimes sent as appends together: the writer may order them in one group, one ingestTs.
        if (random() < 0.3 && events.length > 2) {
          const cut = 1 + int(events.length - 1);
          await Promise.all([leader.append(events.slice(0, cut)), leader.append(events.slice(cut))]);
        } else {
          await leader.append(events);
        }
        if (random() < 0.03) {
          await stores.close(leader);
          ({ store: leader } = await stores.open(leaderLocation, () => clock.now));
          leaderReopens++;
        }
        // The follower pulls some of what is new, or nothing; sometimes it restarts.
        if (random() < 0.5) await pull(leader, follower, random, int(3_000));
        if (random() < 0.02) await reopen(follower);
      }
      await pull(leader, follower, random, Infinity);

      const model = await modelOfLog(leader);
      const what = `seed ${seed} (${eventNumber} events, ${groups.length} groups, leader reopened ${leaderReopens} times)`;
      console.log(`${what}: ${JSON.stringify(model.summary())}, day ${model.day?.number}`);
      expect(model.retired.sources, `${what}: the history retires sources`).toBeGreaterThan(5_000);
      expect(model.other, `${what}: the history passes LEDGER_SOURCES_MAX`).toBeGreaterThan(0);
      expectModel(leader, model, `${what}, leader`);
      expectModel(follower.store, model, `${what}, following standby`);

      // A standby that pulls the whole log afterwards in pulls of random sizes, reopened between some.
      const late = await open();
      for (;;) {
        const before = late.at;
        await pull(leader, late, random, 1 + int(8_000));
        if (late.at === before) break;
        if (random() < 0.3) await reopen(late);
      }
      expectModel(late.store, model, `${what}, late standby`);

      // Stored as the model says (retired sources' keys all gone), and read back the same.
      const copies = [
        { name: 'leader', store: leader, location: leaderLocation },
        { name: 'following standby', store: follower.store, location: follower.location },
        { name: 'late standby', store: late.store, location: late.location },
      ];
      for (const copy of copies) {
        await stores.close(copy.store);
        expectEqualList(await storedLedger(copy.location), modelKeys(model), `${what}, ${copy.name}: stored keys`);
        const { store } = await stores.open(copy.location);
        expectModel(store, model, `${what}, ${copy.name} reopened`);
      }
    }, 120_000);
  }
});
