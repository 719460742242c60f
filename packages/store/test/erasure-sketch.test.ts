// Goal: an erasure leaves no trigram of an erased value in the free-text sketches, which are Bloom
// filters: a sketch that kept them would let anyone with the store's files test a directory of
// candidate values against the block and rule out all but the erased one (and a few false
// positives). After the erasure's write the block's sketch is rebuilt from what the log holds —
// on the leader and on a standby that applies it — and a block marked stale by an erasure whose
// rebuild a crash interrupted is rebuilt when the store opens. q still finds the erased record by
// its marker, and a value still held by another event of the block stays findable.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeErasureDetails, ERASED_MARKER, INTEGRITY_ACTIONS } from '@auditlake/integrity';
import { SELF_SOURCE, type AuditEvent, type StoredEvent } from '@auditlake/model';
import { Level } from 'level';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AuditStore } from '../src/index.js';
import { TextSketch, needleBits, textSketchKey } from '../src/text-sketch.js';
import { STALE_SKETCH_PREFIX, staleSketchKey } from '../src/text-sketch-writer.js';
import { textCandidateBlocks } from '../src/text-candidates.js';

const SECRET_USER = 'zqxvj-directory-entry';
const OTHER_USER = 'kept-wyvern-user';

async function location(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-erasure-sketch-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'store');
}

function ev(eventId: string, userId: string, timestamp: number): AuditEvent {
  return { eventId, userId, source: 'trino', action: 'data:Select', resource: 'hive.sales.orders', decision: 'ALLOW', tables: ['hive.sales.orders'], query: 'SELECT 1', details: '', timestamp };
}

async function eraseUserOf(store: AuditStore, eventId: string): Promise<void> {
  const target = (await store.getByEventId(eventId)) as StoredEvent;
  const details = encodeErasureDetails({ v: 1, fields: ['userId'], records: [{ eventId, seq: target.seq }] });
  await store.append([{ ...ev(`erase-${eventId}`, 'admin', 50), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details }]);
}

/** A store holding events a (alice) and b, closed, and its LevelDB opened directly. */
async function closedStoreFiles(): Promise<{ where: string; db: Level<string, string> }> {
  const where = await location();
  const store = await AuditStore.open({ location: where });
  await store.append([ev('a', 'alice', 10), ev('b', OTHER_USER, 20)]);
  await store.close();
  const db = new Level<string, string>(where, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  await db.open();
  return { where, db };
}

/** Block 0's sketch and the stale marks, read from the files of a closed store. */
async function onDisk(where: string): Promise<{ sketch: TextSketch; stale: string[] }> {
  const db = new Level<string, string>(where, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  await db.open();
  try {
    const value = await db.get<string, Uint8Array>(textSketchKey(0), { valueEncoding: 'view' });
    const stale = await db.keys({ gte: STALE_SKETCH_PREFIX, lt: `${STALE_SKETCH_PREFIX}\uffff` }).all();
    return { sketch: new TextSketch(value), stale };
  } finally {
    await db.close();
  }
}

const mayHold = (sketch: TextSketch, value: string) => sketch.mayContain(needleBits(value.toLowerCase()));

async function ids(source: AsyncIterable<StoredEvent>): Promise<string[]> {
  const found: string[] = [];
  for await (const event of source) found.push(event.eventId);
  return found;
}

describe('an erasure and the free-text sketches', () => {
  it('rebuilds the block\'s sketch without the erased value, on the leader and on a standby', async () => {
    const where = await location();
    const leader = await AuditStore.open({ location: where });
    const standby = await AuditStore.open({ location: await location() });
    onTestFinished(() => standby.close());
    await leader.append([ev('a', SECRET_USER, 10), ev('b', OTHER_USER, 20), ev('c', 'carol', 30)]);
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 100));
    expect(await ids(leader.search({ action: 'all', q: SECRET_USER }))).toEqual(['a']);

    await eraseUserOf(leader, 'a');
    await standby.applyReplicated(await leader.readEncodedBySeq(3, 100));
    for (const store of [leader, standby]) {
      expect((await store.getByEventId('a'))?.userId).toBe(ERASED_MARKER);
      expect(await ids(store.search({ action: 'all', q: SECRET_USER }))).toEqual([]);
      expect(await ids(store.search({ action: 'all', q: OTHER_USER }))).toEqual(['b']);
      // Found by its marker (the rebuilt sketch holds it).
      expect(await ids(store.search({ action: 'all', q: ERASED_MARKER }))).toEqual(['a']);
    }
    await leader.close();
    const { sketch, stale } = await onDisk(where);
    expect(mayHold(sketch, SECRET_USER)).toBe(false);
    expect(mayHold(sketch, OTHER_USER)).toBe(true);
    expect(stale).toEqual([]);
  });

  it('rebuilds, when the store opens, a sketch an erasure marked stale before a crash', async () => {
    // As a crash after the erasure's write and before the rebuild leaves it: the mark, and a
    // sketch with the trigrams of a value no event holds any more.
    const { where, db } = await closedStoreFiles();
    const sketch = new TextSketch(await db.get<string, Uint8Array>(textSketchKey(0), { valueEncoding: 'view' }));
    sketch.add(10, SECRET_USER);
    await db.put(textSketchKey(0), sketch.value as unknown as string, { valueEncoding: 'view' } as never);
    await db.put(staleSketchKey(0), '');
    await db.close();
    expect(mayHold((await onDisk(where)).sketch, SECRET_USER)).toBe(true);

    const reopened = await AuditStore.open({ location: where });
    expect(await ids(reopened.search({ action: 'all', q: OTHER_USER }))).toEqual(['b']);
    await reopened.close();
    const after = await onDisk(where);
    expect(mayHold(after.sketch, SECRET_USER)).toBe(false);
    expect(mayHold(after.sketch, OTHER_USER)).toBe(true);
    expect(after.stale).toEqual([]);
  });

  it('a free-text search reads a block marked stale whatever its sketch says (a standby answers before its rebuild ran)', async () => {
    const { db } = await closedStoreFiles();
    onTestFinished(() => db.close());
    // The marker is in no sketch: without the stale block, nothing to read.
    expect((await textCandidateBlocks(db, ERASED_MARKER, undefined, undefined))?.candidates).toEqual([]);
    expect((await textCandidateBlocks(db, ERASED_MARKER, undefined, undefined, new Set([7])))?.candidates).toEqual([]);
    expect((await textCandidateBlocks(db, ERASED_MARKER, undefined, undefined, new Set([0])))?.candidates.map((c) => c.block)).toEqual([0]);
    // Still within the window only.
    expect((await textCandidateBlocks(db, ERASED_MARKER, 1000, undefined, new Set([0])))?.candidates).toEqual([]);
  });
});
