import type { EncodedEvent } from '@auditlake/model';
import type { Level } from 'level';
import { idKey } from './event-keys.js';

/**
 * Looks for copies the tier holds of events by eventId, each at its event time: answers the
 * stored JSON of each copy found (a StoredEvent's fields, with its salt and kept hashes of
 * erased fields, as the tier holds them), by eventId; an id without a time is looked for in
 * every file. Throws when the tier cannot be read.
 */
export type TieredCopyLookup = (eventTimes: ReadonlyMap<string, number | undefined>) => Promise<ReadonlyMap<string, string>>;

/**
 * The events of an append that may be a client's re-send of one this log's retention deleted
 * (whose copy the tier then holds), by eventId with its event time; undefined when none may be.
 *
 * The log's own de-duplication finds an eventId only while the log holds it; once retention
 * deleted a tiered event, a re-send (a replayed spool, a retry of a request whose answer was
 * lost days ago) would be stored and tiered a second time. Only events that can be such a
 * re-send are looked for, so ordinary ingest pays nothing: an id the client chose (not one
 * this node just made), with an event time at or before the newest one retention ever deleted
 * here (`prunedTimeMax`: a later time was never deleted; undefined: no lookup), and not in the
 * log now. An event sent without `ts` gets the server's time when stored, later than anything
 * deleted, so its re-send is not recognised by time — except an id an erasure named
 * (`erasedIds`), whatever its time: it is looked for in every tier file (its time undefined),
 * and never stored again (AuditStore.appendEncoded), so a re-send cannot bring erased values
 * back. Answered without waiting, so an append that needs no lookup is queued at once, as before.
 *
 * A retry racing the deletion of its own first copy (read as held here, deleted before the
 * write) is chosen again: AuditStore.appendEncoded writes an append only if no prune ran since
 * its events were chosen here.
 */
export function resendCandidates(
  events: readonly EncodedEvent[],
  freshIds: ReadonlySet<string> | undefined,
  prunedTimeMax: number | undefined,
  erasedIds: ReadonlyMap<string, unknown>,
): Map<string, number | undefined> | undefined {
  if (prunedTimeMax === undefined && erasedIds.size === 0) return undefined;
  let eventTimes: Map<string, number | undefined> | undefined;
  for (const event of events) {
    if (freshIds?.has(event.eventId) === true || eventTimes?.has(event.eventId) === true) continue;
    if (erasedIds.has(event.eventId)) (eventTimes ??= new Map()).set(event.eventId, undefined);
    else if (prunedTimeMax !== undefined && event.timestamp <= prunedTimeMax) (eventTimes ??= new Map()).set(event.eventId, event.timestamp);
  }
  return eventTimes;
}

/** What looking for an append's possible re-sends found (tieredCopiesOf). */
export interface ResendsFound {
  /** The tier's copies of those the log does not hold: their stored JSON, by eventId. */
  copies: ReadonlyMap<string, string>;
  /** Ids an erasure named that neither the log nor the tier holds now: never stored again. */
  erasedElsewhere: ReadonlySet<string>;
}

/**
 * The copies the tier holds of `candidates` (resendCandidates: eventId → event time) that the
 * log does not hold now, and the erased ids found nowhere. Candidates the log holds are removed
 * from `candidates`. Throws what the lookup throws; without a lookup (no tier), no copies.
 */
export async function tieredCopiesOf(
  db: Pick<Level<string, string>, 'getMany'>,
  candidates: Map<string, number | undefined>,
  lookup: TieredCopyLookup | undefined,
  erasedIds: ReadonlyMap<string, unknown>,
): Promise<ResendsFound> {
  const ids = [...candidates.keys()];
  const held = await db.getMany(ids.map(idKey));
  held.forEach((place, i) => {
    if (place !== undefined) candidates.delete(ids[i] as string);
  });
  if (candidates.size === 0) return NONE_FOUND;
  const copies = lookup === undefined ? NO_COPIES : await lookup(candidates);
  let erasedElsewhere: Set<string> | undefined;
  for (const id of candidates.keys()) if (erasedIds.has(id) && !copies.has(id)) (erasedElsewhere ??= new Set()).add(id);
  return { copies, erasedElsewhere: erasedElsewhere ?? NO_IDS };
}

const NO_COPIES: ReadonlyMap<string, string> = new Map();
const NO_IDS: ReadonlySet<string> = new Set();
export const NONE_FOUND: ResendsFound = { copies: NO_COPIES, erasedElsewhere: NO_IDS };
