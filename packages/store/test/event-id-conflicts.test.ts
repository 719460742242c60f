// Goal: an event whose eventId is already stored is a retry (a duplicate) only when its content
// is the stored event's; with other content it is a conflict, refused and reported with both
// content hashes, and the event stored first stays. Each record is hashed under a key of its own
// (a retry gets another at ingest), so a repeat is compared under the kept event's salts; an
// erased field can no longer be compared (its salt is gone) and counts as equal.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canonicalContent, encodeErasureDetails, ERASED_MARKER, INTEGRITY_ACTIONS, newSaltKey, RecordHasher } from '@auditlake/integrity';
import { encodeEvent, SELF_SOURCE, type AuditEvent, type EncodedEvent } from '@auditlake/model';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AuditStore } from '../src/index.js';

async function openStore(chain: boolean): Promise<AuditStore> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-conflict-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const store = await AuditStore.open({ location: join(dir, 'store'), chain });
  onTestFinished(() => store.close());
  return store;
}

function ev(eventId: string, overrides: Partial<AuditEvent> = {}): AuditEvent {
  return { eventId, userId: 'alice', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t1'], query: 'SELECT 1', details: '', timestamp: 1_700_000_000_000, ...overrides };
}

const hasher = new RecordHasher();
/** An event's content hash under a record's salt (none: unsalted, a store without the chain). */
const contentHash = (event: AuditEvent, salt: string | undefined) => hasher.content({ ...canonicalContent(event), salt }).hash;

/** As ingest encodes it when the store keeps the chain: with its content part computed, under a new key. */
function ingested(event: AuditEvent): EncodedEvent {
  const salt = newSaltKey();
  return { ...encodeEvent(event), chainContent: { ...hasher.contentOfValues(event, salt), salt } };
}

async function saltOf(store: AuditStore, eventId: string): Promise<string | undefined> {
  return (await store.getByEventId(eventId))?.salt;
}

describe.each([
  ['with the record chain', true],
  ['without the record chain', false],
])('eventId conflicts %s', (_name, chain) => {
  it('counts a retry of a stored event as a duplicate, and another event under its id as a conflict', async () => {
    const store = await openStore(chain);
    const original = ev('x');
    const forged = ev('x', { userId: 'mallory', query: 'SELECT nothing' });
    expect(await store.append([forged])).toMatchObject({ duplicates: 0, conflicts: [] });
    const retry = await store.append([forged]);
    expect(retry).toEqual({ stored: [], duplicates: 1, conflicts: [] });
    const real = await store.append([original, ev('y')]);
    expect(real.stored.map((s) => s.eventId)).toEqual(['y']);
    expect(real.duplicates).toBe(0);
    const salt = await saltOf(store, 'x');
    expect(salt === undefined).toBe(!chain);
    expect(real.conflicts).toEqual([{ eventId: 'x', storedHash: contentHash(forged, salt), refusedHash: contentHash(original, salt) }]);
    // First writer wins: the log holds the event stored first, once.
    expect(await store.getByEventId('x')).toMatchObject({ userId: 'mallory', seq: 1 });
  });

  it('keeps the first of two events with one id in one append and refuses the other as a conflict', async () => {
    const store = await openStore(chain);
    const first = ev('d');
    const second = ev('d', { decision: 'DENY' });
    const result = await store.appendEncoded([first, second, first].map(encodeEvent));
    expect(result.stored.map((s) => [s.eventId, s.seq])).toEqual([['d', 1]]);
    expect(result.duplicates).toBe(1);
    const salt = await saltOf(store, 'd');
    expect(result.conflicts).toEqual([{ eventId: 'd', storedHash: contentHash(first, salt), refusedHash: contentHash(second, salt) }]);
    expect(await store.getByEventId('d')).toMatchObject({ decision: 'ALLOW' });
  });

  it('tells apart events of concurrent appends written in one group', async () => {
    const store = await openStore(chain);
    const results = await Promise.all([store.append([ev('g', { details: 'one' })]), store.append([ev('g', { details: 'two' })]), store.append([ev('g', { details: 'one' })])]);
    expect(results.map((r) => [r.stored.length, r.duplicates, r.conflicts.length])).toEqual([
      [1, 0, 0],
      [0, 0, 1],
      [0, 1, 0],
    ]);
  });

  it('compares an event time and sourceSeq too: each is part of the content', async () => {
    const store = await openStore(chain);
    await store.append([ev('t', { sourceId: 's', sourceSeq: 1 })]);
    const result = await store.append([ev('t', { timestamp: 1_700_000_000_001, sourceId: 's', sourceSeq: 1 }), ev('t', { sourceId: 's', sourceSeq: 2 })]);
    expect(result.conflicts.map((c) => c.eventId)).toEqual(['t', 't']);
  });
});

describe('eventId conflicts against an erased event', () => {
  it('takes a retry of an erased event as a duplicate (its field hashes are kept) and other content as a conflict', async () => {
    const store = await openStore(true);
    const original = ev('secret', { userId: 'bob', query: 'SELECT ssn FROM people' });
    await store.appendEncoded([ingested(original)]);
    const salt = await saltOf(store, 'secret');
    const details = encodeErasureDetails({ v: 1, fields: ['userId', 'query'], records: [{ eventId: 'secret', seq: 1 }] });
    await store.append([{ ...ev('erase-1'), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details }]);
    expect(await store.getByEventId('secret')).toMatchObject({ userId: ERASED_MARKER, query: ERASED_MARKER });
    // A retry, as ingest encodes it (content part computed at parse) and as a forward carries it (JSON only).
    expect(await store.appendEncoded([ingested(original)])).toEqual({ stored: [], duplicates: 1, conflicts: [] });
    expect(await store.appendEncoded([encodeEvent(original)])).toEqual({ stored: [], duplicates: 1, conflicts: [] });
    // Other content in a field not erased: a conflict, both hashes as the record's salts give them.
    const other = ev('secret', { userId: 'bob', query: 'SELECT ssn FROM people', resource: 'r2' });
    expect(await store.appendEncoded([ingested(other)])).toEqual({ stored: [], duplicates: 0, conflicts: [{ eventId: 'secret', storedHash: contentHash(original, salt), refusedHash: contentHash(other, salt) }] });
    // Other content only in an erased field cannot be told from the original: that would need the
    // erased value's salt, and a salt kept for it would confirm a guess of the value.
    expect(await store.appendEncoded([ingested(ev('secret', { userId: 'mallory', query: 'SELECT 2' }))])).toEqual({ stored: [], duplicates: 1, conflicts: [] });
  });
});

describe('knownRepeats (a node that does not order: what its replica and the request show)', () => {
  it('compares with the event its log holds, else with the first of the request under the id', async () => {
    const store = await openStore(true);
    const stored = ev('x');
    await store.append([stored]);
    const forgedX = ev('x', { action: 'data:Drop' });
    const first = ev('n', { details: 'first' });
    const second = ev('n', { details: 'second' });
    const firstIngested = ingested(first);
    const result = await store.knownRepeats([ingested(stored), ingested(forgedX), firstIngested, ingested(second), encodeEvent(first), ingested(ev('m'))]);
    const saltX = await saltOf(store, 'x');
    const saltN = firstIngested.chainContent?.salt;
    expect(result).toEqual({
      duplicates: 2,
      conflicts: [
        { eventId: 'x', storedHash: contentHash(stored, saltX), refusedHash: contentHash(forgedX, saltX) },
        { eventId: 'n', storedHash: contentHash(first, saltN), refusedHash: contentHash(second, saltN) },
      ],
    });
    expect(await store.knownRepeats([ingested(ev('new'))])).toEqual({ duplicates: 0, conflicts: [] });
  });
});

describe('an event whose time the receiving node set (sent without ts)', () => {
  it('is a retry of the stored event when all but its time match, and a conflict otherwise', async () => {
    const store = await openStore(true);
    const untimed = (overrides: Partial<AuditEvent>): EncodedEvent => ({ ...ingested(ev('u', overrides)), timeAssigned: true });
    await store.appendEncoded([untimed({ timestamp: 1000 })]);
    expect(await store.appendEncoded([untimed({ timestamp: 2000 })])).toEqual({ stored: [], duplicates: 1, conflicts: [] });
    // Within one request too, and through a standby's count.
    expect(await store.knownRepeats([untimed({ timestamp: 3000 }), untimed({ timestamp: 4000 })])).toEqual({ duplicates: 2, conflicts: [] });
    const other = untimed({ timestamp: 2000, userId: 'mallory' });
    expect((await store.appendEncoded([other])).conflicts).toHaveLength(1);
    // A sender that chose the time: another time is another event.
    expect((await store.appendEncoded([ingested(ev('u', { timestamp: 2000 }))])).conflicts).toHaveLength(1);
  });
});

describe('the outbox', () => {
  it('hands out which entries hold an event whose time this node set, until they leave it', async () => {
    const store = await openStore(true);
    await store.enqueueOutbox([{ ...encodeEvent(ev('o1')), timeAssigned: true }, encodeEvent(ev('o2')), { ...encodeEvent(ev('o3')), timeAssigned: true }]);
    const entries = await store.readOutbox(10);
    expect(entries.map((e) => e.timeAssigned)).toEqual([true, false, true]);
    // Read again (a forward that failed is sent again): still flagged.
    expect((await store.readOutbox(10)).map((e) => e.timeAssigned)).toEqual([true, false, true]);
    await store.deleteOutbox(entries.slice(0, 2).map((e) => e.key));
    expect((await store.readOutbox(10)).map((e) => e.timeAssigned)).toEqual([true]);
  });
});
