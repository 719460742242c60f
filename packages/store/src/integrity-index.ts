import { composeStoredEvent, ERASED_MARKER, eraseRecordFields, integrityKindOf, parseErasureDetails, parsePublishedKey, type ErasableField, type ErasedRecordRef } from '@auditlake/integrity';
import { INTEGRITY_ACTIONS, isSelfSource, type StoredEvent } from '@auditlake/model';
import type { Level } from 'level';
import type { ErasedIdsChange } from './erased-ids.js';
import { KEY_ONLY_VALUE, checkpointKey, erasureKey, keyKey } from './event-keys.js';
import { SEQS_READ_TOGETHER, storedAtSeqs, type HeldEntry } from './point-reads.js';
import type { IntegrityEntry } from './record-chain.js';
import { termsFromJson, type IndexWriter } from './index-writer.js';
import { blockOfSeq } from './text-sketch.js';
import { staleSketchKey } from './text-sketch-writer.js';

/** Anything that takes puts and deletes: a chained LevelDB batch. */
interface PutSink {
  put(key: string, value: string): unknown;
  del(key: string): unknown;
}

/** The secondary indexes an erasure must update (an erased value must not stay in an index key). */
export interface IndexUpdate {
  index: IndexWriter;
  /** Table names new to the dictionary in this batch (IndexWriter.put). */
  newTables: Set<string>;
  /**
   * Collects the table names an erasure took out of events: once the batch is written, each
   * that no event names any more leaves the dictionary (a name is a value the erasure removes).
   */
  erasedTables?: Set<string>;
  /** Collects the free-text blocks an erasure rewrote events in (their sketches are marked stale in the batch). */
  erasedBlocks?: Set<number>;
  /** Records each eventId an erasure names, with the fields it erased (its erasedIdKey is put in the batch). */
  erasedIds?: ErasedIdsChange;
  /**
   * The entry at a seq put in this same batch, not yet on disk (entries applied together with
   * an erasure that names one of them: a pull, a tier adoption). Absent: the batch puts none.
   */
  pendingEntryAt?: (seq: number) => { timeKey: string; json: string } | undefined;
}

/** Whether `field` of `record` holds the marker as its value (`tables`: a list of just the marker). */
function holdsMarker(record: StoredEvent, field: ErasableField): boolean {
  return field === 'tables' ? record.tables.length === 1 && record.tables[0] === ERASED_MARKER : record[field] === ERASED_MARKER;
}

/** The erasure action as its JSON member: a text without these bytes is not an erasure record. */
const ERASE_ACTION_TEXT = `"action":${JSON.stringify(INTEGRITY_ACTIONS.erase)}`;

/**
 * The erasure entry of a stored or stored-to-be event text at `seq`, or undefined for any other
 * event: what a store without the record chain (which finds integrity records as it hashes)
 * still applies, so that no copy keeps an erased value. A byte search first; parsed only then.
 */
export function erasureEntryOf(text: string, seq: number): IntegrityEntry | undefined {
  if (!text.includes(ERASE_ACTION_TEXT)) return undefined;
  const record = JSON.parse(text) as StoredEvent;
  return integrityKindOf(record.source, record.action, record.decision) === 'erase' ? { kind: 'erase', seq, details: record.details } : undefined;
}

/** A public key the log registered, as the key index keeps it. */
export interface RegisteredKey {
  /** Seq of the registration record. */
  seq: number;
  /** The published key ({v, keyId, nodeId, publicKey}) as its text. */
  key: string;
}

/**
 * Adds to `batch` what the integrity records among entries being stored mean for this store:
 * a checkpoint is indexed by its seq, a key registration by its key id, and an erasure (indexed by its seq) rewrites
 * the records it names that this store holds (values replaced by the marker, field hashes
 * kept). Runs on the leader as it appends and on a standby as it applies, so every copy of the
 * log is erased alike. Returns true when it rewrote earlier entries (their kept bytes are stale).
 */
export async function addIntegrityPuts(db: Level<string, string>, batch: PutSink, entries: readonly IntegrityEntry[], indexes: IndexUpdate): Promise<boolean> {
  let rewrote = false;
  // Records an erasure of this batch rewrote, by time key: a later erasure in the batch naming
  // the same record builds on that text, not on the one on disk (which would put back the
  // values the first erased).
  const rewritten = new Map<string, string>();
  for (const entry of entries) {
    switch (entry.kind) {
      case 'checkpoint':
        batch.put(checkpointKey(entry.seq), entry.details);
        break;
      case 'registerKey': {
        let keyId: string;
        try {
          keyId = parsePublishedKey(entry.details).keyId;
        } catch {
          continue; // Not a key: recorded as it is, registers nothing.
        }
        batch.put(keyKey(keyId), JSON.stringify({ seq: entry.seq, key: entry.details } satisfies RegisteredKey));
        break;
      }
      case 'erase':
        // Indexed by seq so the tier finds the erasures after a point without reading the log
        // (a table that no longer receives events still has its rows erased).
        batch.put(erasureKey(entry.seq), KEY_ONLY_VALUE);
        if (await eraseTargets(db, batch, entry, indexes, rewritten)) rewrote = true;
        break;
    }
  }
  return rewrote;
}

/**
 * The record this log holds at `seq` (its time key and text), as this batch leaves it: rewritten
 * by an erasure before in the batch, put by the batch, or on disk (`onDisk`, read ahead for the
 * records being erased). Found by its seq, not by its eventId: one id can be held at two seqs (a
 * copy re-sent after the first was tiered and deleted on the leader, while a standby still holds
 * both), and an erasure names each by its seq.
 */
function recordAt(seq: number, indexes: IndexUpdate, rewritten: ReadonlyMap<string, string>, onDisk: ReadonlyMap<number, HeldEntry>): HeldEntry | undefined {
  const pending = indexes.pendingEntryAt?.(seq);
  if (pending !== undefined) return { timeKey: pending.timeKey, json: rewritten.get(pending.timeKey) ?? pending.json };
  const stored = onDisk.get(seq);
  return stored === undefined ? undefined : { timeKey: stored.timeKey, json: rewritten.get(stored.timeKey) ?? stored.json };
}

async function eraseTargets(db: Level<string, string>, batch: PutSink, entry: IntegrityEntry, indexes: IndexUpdate, rewritten: Map<string, string>): Promise<boolean> {
  let details;
  try {
    details = parseErasureDetails(entry.details);
  } catch {
    return false;
  }
  // Only earlier records, and only the one the erasure names (same eventId at the same seq).
  return eraseRecords(db, batch, details.fields, details.records.filter((ref) => ref.seq < entry.seq), indexes, rewritten, { recordSeq: entry.seq });
}

/**
 * Replaces `fields` by the marker in each named record this store holds (same eventId at the
 * same seq), keeping the field hashes, and records every named eventId as erased (held here
 * or not; with the seq of the erasure record naming it, `recordSeq`, when known). What an erasure record does to the records it names, and what a standby does with
 * the leader's erased ids when the records naming them were deleted before it got them
 * (erased-ids-sync.ts). Returns true when it rewrote a record.
 */
export async function eraseRecords(
  db: Level<string, string>,
  batch: PutSink,
  fields: readonly ErasableField[],
  records: readonly ErasedRecordRef[],
  indexes: IndexUpdate,
  rewritten = new Map<string, string>(),
  options: { byIdOnly?: boolean; recordSeq?: number } = {},
): Promise<boolean> {
  const names = [...fields];
  let rewrote = false;
  // Their erased ids, then their seq and time keys, one native read each per chunk.
  for (let at = 0; at < records.length; at += SEQS_READ_TOGETHER) {
    const chunk = records.slice(at, at + SEQS_READ_TOGETHER);
    await indexes.erasedIds?.load(chunk.map((ref) => ref.eventId));
    // Nothing but this batch changes the log until it is written: read ahead, then overlaid by
    // what the batch rewrote or puts (recordAt, which takes an entry the batch puts first).
    const onDisk = await storedAtSeqs(db, chunk.map((ref) => ref.seq));
    for (const ref of chunk) if (await eraseRecord(batch, names, ref, indexes, rewritten, onDisk, options)) rewrote = true;
  }
  return rewrote;
}

/** eraseRecords for one named record, its stored text read ahead when on disk (`onDisk`); true when it rewrote it. */
async function eraseRecord(
  batch: PutSink,
  fields: readonly ErasableField[],
  ref: ErasedRecordRef,
  indexes: IndexUpdate,
  rewritten: Map<string, string>,
  onDisk: ReadonlyMap<number, HeldEntry>,
  options: { byIdOnly?: boolean; recordSeq?: number },
): Promise<boolean> {
  // Held here or not (retention may have deleted it, the tier holding it): the id is never
  // stored again, so a re-send cannot bring the erased values back (AuditStore.appendEncoded).
  await indexes.erasedIds?.add(batch, ref.eventId, fields, options.recordSeq);
  const held = recordAt(ref.seq, indexes, rewritten, onDisk);
  if (held === undefined) return false;
  const { timeKey: key, json: value } = held;
  const before = JSON.parse(value) as StoredEvent;
  if (before.eventId !== ref.eventId) return false;
  // `byIdOnly`: the ids came without the records that named the copies (a page of erased
  // ids). A field holding the marker as its value is left as it is (a copy stored after the
  // erasure, a re-send holding the marker: no record names it), and so is any of auditlake's
  // own records, which no erasure may name (a page is trusted no further than that).
  if (options.byIdOnly === true && isSelfSource(before.source)) return false;
  const erased = eraseRecordFields(before, options.byIdOnly === true ? fields.filter((field) => !holdsMarker(before, field)) : fields);
  if (erased === undefined) return false;
  const json = composeStoredEvent(erased);
  batch.put(key, json);
  rewritten.set(key, json);
  // The index keys hold the values (user, tables): the erased ones go, the marker's come.
  indexes.index.del(batch, termsFromJson(value), before.timestamp, before.seq);
  indexes.index.put(batch, termsFromJson(json), before.timestamp, before.seq, indexes.newTables);
  if (fields.includes('tables')) for (const table of before.tables) indexes.erasedTables?.add(table);
  // The block's sketch holds the erased value's trigrams: rebuilt once this batch is written.
  const block = blockOfSeq(before.seq);
  batch.put(staleSketchKey(block), KEY_ONLY_VALUE);
  indexes.erasedBlocks?.add(block);
  return true;
}
