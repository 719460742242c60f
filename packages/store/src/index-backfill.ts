import type { Level } from 'level';
import { integrityKindOf } from '@auditlake/integrity';
import { INTEGRITY_ACTIONS, type StoredEvent } from '@auditlake/model';
import { PREFIX, decodeUint, erasureKey, localKey, prefixEnd } from './event-keys.js';
import { termsFromJson, type IndexWriter } from './index-writer.js';
import { blockOfSeq } from './text-sketch.js';
import type { TextSketchWriter } from './text-sketch-writer.js';

/** Local-metadata name of the index layout version this store's index keys are complete for. */
const INDEX_VERSION_NAME = 'indexVersion';
/** 2: the free-text sketches too; 3: the index of erasure records. */
const INDEX_VERSION = '3';

/** Events indexed per batch while building the indexes of an existing store. */
const BACKFILL_BATCH_EVENTS = 10_000;

/**
 * Makes the secondary indexes, the free-text sketches and the index of erasure records complete for a store opened for the first time by a version that
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
      if (isErasureRecordJson(json)) batch.put(erasureKey(seq), '');
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

/** Whether a stored event's text is an erasure record (parsed only when it names the action at all). */
function isErasureRecordJson(json: string): boolean {
  if (!json.includes(INTEGRITY_ACTIONS.erase)) return false;
  const event = JSON.parse(json) as StoredEvent;
  return integrityKindOf(event.source, event.action) === 'erase';
}
