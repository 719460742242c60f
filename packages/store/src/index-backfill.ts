import type { Level } from 'level';
import { parseErasureDetails } from '@auditlake/integrity';
import { SELF_SOURCE, type StoredEvent } from '@auditlake/model';
import type { ErasedIds } from './erased-ids.js';
import { KEY_ONLY_VALUE, PREFIX, decodeUint, erasureKey, localKey, prefixEnd, seqOfSuffix } from './event-keys.js';
import { addIntegrityPuts, erasureEntryOf } from './integrity-index.js';
import { storedAtSeq } from './point-reads.js';
import type { IntegrityEntry } from './record-chain.js';
import { termsFromJson, type IndexWriter } from './index-writer.js';
import { indexValuePrefix, SUFFIX_LENGTH } from './index-keys.js';
import { blockOfSeq } from './text-sketch.js';
import type { TextSketchWriter } from './text-sketch-writer.js';

/** Local-metadata name of the index layout version this store's index keys are complete for. */
const INDEX_VERSION_NAME = 'indexVersion';
/** 2: the free-text sketches too. */
const INDEX_VERSION = '2';
/** Local-metadata name set once the index of erasure records is complete (erasureKey). */
const ERASURE_INDEX_NAME = 'erasureIndex';
/** Local-metadata name set once every erasure record the log holds has its erased ids recorded (erasedIdKey). */
const ERASED_IDS_NAME = 'erasedIds';
/** Local-metadata name set once every erasure record the log holds has been applied to the records it names. */
const ERASURES_APPLIED_NAME = 'erasuresApplied';

/** Events indexed per batch while building the indexes of an existing store. */
const BACKFILL_BATCH_EVENTS = 10_000;

/**
 * Makes the secondary indexes and the free-text sketches complete for a store opened for the first time by a version that
 * keeps them: a store written before indexes existed has events without index keys, which an
 * indexed search would silently miss. Indexes every stored event once, in batches, then records
 * the version, so it runs once per store. Returns how many events it indexed.
 */
export async function backfillIndexes(db: Level<string, string>, index: IndexWriter, text: TextSketchWriter): Promise<number> {
  if ((await db.get(localKey(INDEX_VERSION_NAME))) === INDEX_VERSION) return 0;
  let indexed = 0;
  let from: string = PREFIX.time;
  for (;;) {
    const entries = await db.iterator({ gte: from, lt: prefixEnd(PREFIX.time), limit: BACKFILL_BATCH_EVENTS }).all();
    if (entries.length === 0) break;
    const batch = db.batch();
    const newTables = new Set<string>();
    await text.prepareBlocks(new Set(entries.map(([key]) => blockOfSeq(decodeUint(key.slice(PREFIX.time.length + 16))))));
    for (const [key, json] of entries) {
      const suffix = key.slice(PREFIX.time.length);
      const timestampMs = decodeUint(suffix.slice(0, 16));
      const seq = decodeUint(suffix.slice(16));
      index.put(batch, termsFromJson(json), timestampMs, seq, newTables);
      text.add(seq, timestampMs, json);
    }
    text.putChanged(batch);
    try {
      await batch.write({ sync: false });
    } catch (err) {
      index.forget(newTables);
      throw err;
    }
    indexed += entries.length;
    from = (entries[entries.length - 1] as [string, string])[0] + '\u0000';
  }
  // Synced, and only after every index key: a crash before it means the backfill runs again (puts are idempotent).
  await db.put(localKey(INDEX_VERSION_NAME), INDEX_VERSION, { sync: true });
  return indexed;
}

/** Events read per batch while indexing the erasure records of an existing store. */
const ERASURE_BACKFILL_BATCH = 1_000;

/**
 * Makes the index of erasure records complete for a store written before it. Erasure records are
 * auditlake's own events, so the engine index (complete by the time this runs) lists them among
 * its other records (settings changes, checkpoints, key registrations): only those are read, not
 * the whole log, so opening a large store after an upgrade stays quick. Runs once per store.
 * Returns how many erasure records it indexed.
 */
export async function backfillErasureIndex(db: Level<string, string>): Promise<number> {
  if ((await db.get(localKey(ERASURE_INDEX_NAME))) === '1') return 0;
  let indexed = 0;
  for await (const entries of storedErasureBatches(db)) {
    const batch = db.batch();
    for (const entry of entries) batch.put(erasureKey(entry.seq), KEY_ONLY_VALUE);
    await batch.write({ sync: false });
    indexed += entries.length;
  }
  // Synced, and only after every key: a crash before it means the backfill runs again.
  await db.put(localKey(ERASURE_INDEX_NAME), '1', { sync: true });
  return indexed;
}

/**
 * The erasure records the log holds, a batch of auditlake's own records at a time: found
 * through the engine index, which lists those records among the others (settings changes,
 * checkpoints, key registrations), so the whole log is not read.
 */
async function* storedErasureBatches(db: Level<string, string>): AsyncGenerator<IntegrityEntry[]> {
  const own = indexValuePrefix('engine', SELF_SOURCE.toLowerCase());
  for (let from = own; ; ) {
    const keys = await db.keys({ gte: from, lt: own + '\uffff', limit: ERASURE_BACKFILL_BATCH }).all();
    if (keys.length === 0) return;
    const suffixes = keys.map((key) => key.slice(-SUFFIX_LENGTH));
    const values = await db.getMany(suffixes.map((suffix) => PREFIX.time + suffix));
    yield values.flatMap((json, i) => {
      const entry = json === undefined ? undefined : erasureEntryOf(json, seqOfSuffix(suffixes[i] as string));
      return entry === undefined ? [] : [entry];
    });
    from = (keys[keys.length - 1] as string) + '\u0000';
  }
}

/**
 * Records the eventIds named by the erasure records the log holds, for a store whose erasures
 * were applied before erased ids were kept (erasedIdKey): otherwise a re-send of such an event,
 * once retention deleted its erased copy here, would be stored again with its values. Erasure
 * records retention already deleted cannot be read back; their ids stay unknown here. Runs once
 * per store, after backfillErasureIndex. Returns how many ids it recorded.
 */
export async function backfillErasedIds(db: Level<string, string>, erased: ErasedIds): Promise<number> {
  if ((await db.get(localKey(ERASED_IDS_NAME))) === '1') return 0;
  let recorded = 0;
  const erasureSeqs = (await db.keys({ gte: PREFIX.erasure, lt: prefixEnd(PREFIX.erasure) }).all()).map((key) => decodeUint(key.slice(PREFIX.erasure.length)));
  for (const seq of erasureSeqs) {
    const json = (await storedAtSeq(db, seq))?.json;
    if (json === undefined) continue;
    let details;
    try {
      details = parseErasureDetails((JSON.parse(json) as StoredEvent).details);
    } catch {
      continue; // Not erasure details: it erased nothing.
    }
    const batch = db.batch();
    const change = erased.begin();
    await change.load(details.records.map((ref) => ref.eventId));
    for (const ref of details.records) {
      if (ref.seq >= seq) continue;
      await change.add(batch, ref.eventId, details.fields, seq);
      recorded++;
    }
    await batch.write({ sync: false });
    change.commit();
  }
  // Synced, and only after every id: a crash before it means the backfill runs again.
  await db.put(localKey(ERASED_IDS_NAME), '1', { sync: true });
  return recorded;
}

/**
 * Applies, once per store, every erasure record the log holds to the records it names. A node
 * running without the record chain stored its leader's erasure records without applying them
 * until a standby with the chain off learnt to apply them, and kept the erased values; nothing
 * else applies those records later. Applying one again changes nothing (a field already erased
 * stays as it is), so a store that applied them all only reads its own records (the engine index
 * lists them, as backfillErasureIndex reads them) and rewrites nothing. The blocks it rewrote
 * are marked stale in `erasedBlocks`, for the rebuild the store runs at open. Returns how many
 * erasure records it read.
 */
export async function applyStoredErasures(
  db: Level<string, string>,
  index: IndexWriter,
  stores: { erasedIds: ErasedIds; erasedTables: Set<string>; erasedBlocks: Set<number> },
): Promise<number> {
  if ((await db.get(localKey(ERASURES_APPLIED_NAME))) === '1') return 0;
  let read = 0;
  for await (const entries of storedErasureBatches(db)) {
    if (entries.length === 0) continue;
    const batch = db.batch();
    const erasedIds = stores.erasedIds.begin();
    await addIntegrityPuts(db, batch, entries, { index, newTables: new Set(), erasedTables: stores.erasedTables, erasedBlocks: stores.erasedBlocks, erasedIds });
    await batch.write({ sync: false });
    erasedIds.commit();
    read += entries.length;
  }
  // Synced, and only after every record: a crash before it means the pass runs again.
  await db.put(localKey(ERASURES_APPLIED_NAME), '1', { sync: true });
  return read;
}
