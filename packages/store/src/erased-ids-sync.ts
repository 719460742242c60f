import { ERASABLE_FIELDS, type ErasableField } from '@auditlake/integrity';
import type { Level } from 'level';
import { PREFIX, copiesKey, erasedIdKey, idKey, localKey, prefixEnd, seqOfSuffix } from './event-keys.js';
import { erasedEntryOf, isErasedByRecords, type ErasedByRecord } from './erased-ids.js';
import { eraseRecords, type IndexUpdate } from './integrity-index.js';

/**
 * Carrying a leader's erased ids to a node whose log skipped the records that named them.
 *
 * A node learns that an eventId was erased from the erasure record (ErasedIds, `v!`). A standby
 * that pulls across a range its leader's retention deleted never gets the erasure records in
 * that range, nor does a node added after they were deleted; if it then leads, a re-send of an
 * erased event (without `ts`, so its time is new) is stored again with the erased values and
 * tiered. So a node whose log skips seqs takes its leader's whole erased-id set, page by page:
 * the write that applies the skip also sets ERASED_IDS_SYNC_KEY (ErasedIdsOwed: the cursor and
 * the highest seq skipped), each pull then asks for the page after the cursor
 * (PullRequest.erasedAfter, erasedThrough), and each page is applied in one write with the
 * cursor moved on, or deleted after the last (a page that does not follow the cursor is not
 * applied, so one applied twice changes nothing).
 *
 * Only a complete set may be given: a node answers pages only when it owes none itself and its
 * log holds the entry at the highest skipped seq, in the same term and with the same chain hash
 * where both know it (so the skipped records were in its log, and it applied each — or skipped
 * it and took a complete set since); each page names that seq, and is applied only while it is
 * still what is owed. A log cut below it lowers it to the cut's end. Its set
 * then holds every id they named (a record is applied before retention can delete it, and the
 * page is read after the answer's entries); one erased later is named by a record after the
 * skip, which replication brings. A later skip starts the pages again from the first. A node
 * that can get no complete set keeps owing (GET /admin/cluster says so).
 */

/** Local-metadata key of what is owed (ErasedIdsOwed as JSON), present while pages are owed. */
export const ERASED_IDS_SYNC_KEY = localKey('erasedIdsSyncAfter');

/** What a log owes itself of its leader's erased ids. */
export interface ErasedIdsOwed {
  /** The erased id the next page follows ('' for the first). */
  after: string;
  /**
   * The highest seq it skipped while owing them: only a node whose log holds the same entry
   * there (same term and chain hash) and that owes nothing itself holds every id the skipped
   * records named. Held copies above it were stored after those records: a page erases none of
   * them for fields whose records it does not know.
   */
  throughSeq: number;
  /**
   * The term of the sender's entry at throughSeq, where this log does not reach it yet (the
   * sender's retention deleted every entry after this log's end: nothing skipped them here).
   */
  throughTerm?: number;
}

/**
 * Local-metadata key of the highest throughSeq this log took a complete set for, with the term
 * of the entry there (ErasedIdsComplete): a later skip at or below it owes nothing while the log
 * holds that seq in that term (the set holds every id that history's records named).
 */
export const ERASED_IDS_COMPLETE_KEY = localKey('erasedIdsCompleteThrough');

/** Where a log took a complete set of erased ids through: the seq, and the term of the entry there. */
export interface ErasedIdsComplete {
  seq: number;
  term: number;
}

/** What ERASED_IDS_COMPLETE_KEY holds; undefined when absent or not understood (nothing counts as taken). */
export function erasedIdsCompleteOf(value: string | undefined): ErasedIdsComplete | undefined {
  if (value === undefined) return undefined;
  try {
    const complete = JSON.parse(value) as Partial<ErasedIdsComplete> | null;
    if (typeof complete === 'object' && complete !== null && Number.isSafeInteger(complete.seq) && Number.isSafeInteger(complete.term)) return { seq: complete.seq as number, term: complete.term as number };
  } catch {
    // Below.
  }
  return undefined;
}

/**
 * Whether a skip through `skippedThrough` owes nothing: a complete set was taken through a seq
 * at or above it, in the history the log holds there (`termAt`: the log's term at a seq once
 * the skip's entries are in).
 */
export function completeThroughSkip(complete: ErasedIdsComplete | undefined, skippedThrough: number, termAt: (seq: number) => number): boolean {
  return complete !== undefined && skippedThrough <= complete.seq && termAt(complete.seq) === complete.term;
}

/** What ERASED_IDS_SYNC_KEY holds (undefined: nothing owed); a value not understood is owed from the first page through `lastSeq`. */
export function erasedIdsOwedOf(value: string | undefined, lastSeq: number): ErasedIdsOwed | undefined {
  if (value === undefined) return undefined;
  let owed: Partial<ErasedIdsOwed> | null = null;
  try {
    owed = JSON.parse(value) as Partial<ErasedIdsOwed> | null;
  } catch {
    // Below.
  }
  if (typeof owed !== 'object' || owed === null || typeof owed.after !== 'string' || !Number.isSafeInteger(owed.throughSeq)) return { after: '', throughSeq: lastSeq };
  return { after: owed.after, throughSeq: owed.throughSeq as number, ...(Number.isSafeInteger(owed.throughTerm) ? { throughTerm: owed.throughTerm as number } : {}) };
}

/** Most ids one page carries (ids are at most a few hundred bytes: a page stays well under a pull's entries). */
export const ERASED_IDS_PAGE_MAX = 5000;

/** One page of a node's erased ids, in key order. */
export interface ErasedIdsPage {
  /** The id the page follows ('' for the first page). */
  after: string;
  /** Each erased id with the fields erased under it, and each erasure record naming it with its fields where known. */
  ids: Array<[eventId: string, fields: string[], records?: ErasedByRecord[]]>;
  /** True when no erased id follows the page's last. */
  done: boolean;
  /** The asker's highest skipped seq the page was given for (PullRequest.erasedThrough): applied only while that is what is owed. */
  throughSeq?: number;
}

/**
 * The term of the entry at what is owed through: the sender's (owedForTail) while the log does
 * not reach that seq, else the log's own there (`termAt`, its term runs, kept inside skipped ranges).
 */
export function owedThroughTerm(owed: ErasedIdsOwed, lastSeq: number, termAt: (seq: number) => number): number {
  return owed.throughTerm !== undefined && owed.throughSeq > lastSeq ? owed.throughTerm : termAt(owed.throughSeq);
}

/**
 * What is owed once entries skipped seqs up to `skippedThrough`: every id from the first page,
 * through the higher of that and what was owed before (with the term kept for a seq the log does
 * not reach yet, owedForTail's: the skip's entries bring the runs up to it otherwise).
 */
export function owedThrough(before: ErasedIdsOwed | undefined, skippedThrough: number): ErasedIdsOwed {
  if (before === undefined || before.throughSeq <= skippedThrough) return { after: '', throughSeq: skippedThrough };
  return { after: '', throughSeq: before.throughSeq, ...(before.throughTerm === undefined ? {} : { throughTerm: before.throughTerm }) };
}

/** The erased ids after `after` ('' for the first), at most `limit`. */
export async function readErasedIdsPage(db: Level<string, string>, after: string, limit: number): Promise<ErasedIdsPage> {
  const range = after === '' ? { gte: PREFIX.erasedId } : { gt: erasedIdKey(after) };
  const rows = await db.iterator({ ...range, lt: prefixEnd(PREFIX.erasedId), limit: limit + 1 }).all();
  const ids = rows.slice(0, limit).map(([key, value]): [string, string[], ErasedByRecord[]?] => {
    const { fields, records } = erasedEntryOf(value);
    return records === undefined ? [key.slice(PREFIX.erasedId.length), [...fields]] : [key.slice(PREFIX.erasedId.length), [...fields], records];
  });
  return { after, ids, done: rows.length <= limit };
}

/** A page as it came over the network, or undefined when it is not one. */
export function erasedIdsPageOf(value: unknown): ErasedIdsPage | undefined {
  const page = value as Partial<ErasedIdsPage> | null;
  if (typeof page !== 'object' || page === null || typeof page.after !== 'string' || typeof page.done !== 'boolean' || !Array.isArray(page.ids)) return undefined;
  const wellFormed = page.ids.every(
    (row: unknown) =>
      Array.isArray(row) &&
      (row.length === 2 || (row.length === 3 && isErasedByRecords(row[2]))) &&
      typeof row[0] === 'string' &&
      row[0] !== '' &&
      Array.isArray(row[1]) &&
      (row[1] as unknown[]).every((field) => typeof field === 'string'),
  );
  if (!wellFormed || (page.throughSeq !== undefined && !Number.isSafeInteger(page.throughSeq))) return undefined;
  return { after: page.after, ids: page.ids, done: page.done, ...(page.throughSeq === undefined ? {} : { throughSeq: page.throughSeq }) };
}

/**
 * Adds to `batch` one page of a leader's erased ids: each id recorded as erased here (with the
 * fields and the naming records, joined to any before), each copy of it this log holds erased
 * in what the records after that copy erased (those records never reached this log; a record
 * names every copy before it that its leader held or tiered, and a copy held here sits at the
 * seq it had there), and the cursor moved past the page, or deleted after the last. Returns
 * true when a held record was rewritten.
 */
export async function putErasedIdsPage(
  db: Level<string, string>,
  batch: { put(key: string, value: string): unknown; del(key: string): unknown },
  page: ErasedIdsPage,
  owed: ErasedIdsOwed,
  indexes: IndexUpdate,
): Promise<boolean> {
  const ids = page.ids.map(([eventId]) => eventId);
  const held = await db.getMany([...ids.map(idKey), ...ids.map(copiesKey)]);
  await indexes.erasedIds?.load(ids);
  const rewritten = new Map<string, string>();
  let rewrote = false;
  for (const [i, [eventId, sent, byRecord]] of page.ids.entries()) {
    // No names at all: every erasable field (never fewer than were erased).
    const named = sent.length === 0 ? [...ERASABLE_FIELDS] : sent;
    // Recorded with every name as sent: a re-send holding anything but the marker in one this
    // version does not know is refused too (ErasedIdsView.bringsBack). Only known ones can be
    // erased in a held copy.
    const fields = knownFields(named);
    const pointer = held[i];
    const others = held[ids.length + i];
    const suffixes = [...(pointer === undefined ? [] : [pointer]), ...(others === undefined ? [] : (JSON.parse(others) as string[]))];
    await indexes.erasedIds?.add(batch, eventId, named);
    for (const [seq, recordFields] of byRecord ?? []) await indexes.erasedIds?.add(batch, eventId, recordFields, seq);
    // Fields no record is known for (an id an earlier version recorded without them, erased
    // again since): as if their record were after every copy before the skipped seqs.
    const known = new Set((byRecord ?? []).flatMap(([, names]) => names));
    const unknownRecordFields = fields.filter((field) => !known.has(field));
    for (const ref of suffixes.map((suffix) => ({ eventId, seq: seqOfSuffix(suffix) }))) {
      // On each copy, what a record after it erased (a record names only copies before it):
      // a copy stored after the erasure (by a leader that owed the ids) keeps its values, as on
      // every node, since no record names it. Fields without a known record: on a copy before
      // the skipped seqs.
      const erasing = [...knownFields((byRecord ?? []).filter(([seq]) => seq > ref.seq).flatMap(([, names]) => names)), ...(ref.seq <= owed.throughSeq ? unknownRecordFields : [])];
      // By id only: a copy holding the marker already is left as it is, and auditlake's own are never erased.
      if (erasing.length > 0 && (await eraseRecords(db, batch, [...new Set(erasing)], [ref], indexes, rewritten, { byIdOnly: true }))) rewrote = true;
    }
  }
  const last = page.ids.at(-1)?.[0];
  if (page.done) batch.del(ERASED_IDS_SYNC_KEY);
  else if (last !== undefined) batch.put(ERASED_IDS_SYNC_KEY, JSON.stringify({ ...owed, after: last } satisfies ErasedIdsOwed));
  return rewrote;
}

/** The names among `names` this version can erase. */
function knownFields(names: readonly string[]): ErasableField[] {
  return names.filter((field): field is ErasableField => (ERASABLE_FIELDS as readonly string[]).includes(field));
}
