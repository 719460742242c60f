import type { EncodedEvent } from '@auditlake/model';
import type { Level } from 'level';
import { idKey } from './event-keys.js';

/**
 * Looks for copies the tier holds of events by eventId, each at its event time: answers the
 * stored JSON of each copy found (a StoredEvent's fields, with its salt and kept hashes of
 * erased fields, as the tier holds them), by eventId. Throws when the tier cannot be read.
 */
export type TieredCopyLookup = (eventTimes: ReadonlyMap<string, number>) => Promise<ReadonlyMap<string, string>>;

/**
 * The events of an append that may be a client's re-send of one this log's retention deleted
 * (whose copy the tier then holds), by eventId with its event time; undefined when none may be.
 *
 * The log's own de-duplication finds an eventId only while the log holds it; once retention
 * deleted a tiered event, a re-send (a replayed spool, a retry of a request whose answer was
 * lost days ago) would be stored and tiered a second time. Only events that can be such a
 * re-send are looked for, so ordinary ingest pays nothing: an id the client chose (not one
 * this node just made), with an event time at or before the newest one retention ever deleted
 * here (`prunedTimeMax`: a later time was never deleted), and not in the log now. An event sent
 * without `ts` gets the server's time when stored, later than anything deleted, so its re-send
 * is not recognised (and an erasure still reaches every copy; see findTieredRecords). Answered
 * without waiting, so an append that needs no lookup is queued at once, as before.
 *
 * A retry racing the deletion of its own first copy (read as held here, deleted before the
 * write) is chosen again: AuditStore.appendEncoded writes an append only if no prune ran since
 * its events were chosen here.
 */
export function resendCandidates(events: readonly EncodedEvent[], freshIds: ReadonlySet<string> | undefined, prunedTimeMax: number | undefined): Map<string, number> | undefined {
  if (prunedTimeMax === undefined) return undefined;
  let eventTimes: Map<string, number> | undefined;
  for (const event of events) {
    if (event.timestamp > prunedTimeMax || freshIds?.has(event.eventId) === true || eventTimes?.has(event.eventId) === true) continue;
    (eventTimes ??= new Map()).set(event.eventId, event.timestamp);
  }
  return eventTimes;
}

/**
 * The copies the tier holds of `candidates` (resendCandidates: eventId → event time) that the
 * log does not hold now: their stored JSON, by eventId. Throws what the lookup throws.
 */
export async function tieredCopiesOf(db: Pick<Level<string, string>, 'getMany'>, candidates: Map<string, number>, lookup: TieredCopyLookup): Promise<ReadonlyMap<string, string>> {
  const ids = [...candidates.keys()];
  const held = await db.getMany(ids.map(idKey));
  held.forEach((place, i) => {
    if (place !== undefined) candidates.delete(ids[i] as string);
  });
  if (candidates.size === 0) return NONE;
  return lookup(candidates);
}

const NONE: ReadonlyMap<string, string> = new Map();
