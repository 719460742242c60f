import type { EncodedEvent } from '@auditlake/model';
import type { Level } from 'level';
import type { ErasedIdsView } from './erased-ids.js';
import { idKey } from './event-keys.js';

/**
 * Looks for copies the tier holds of events by eventId, each at its event time: answers the
 * stored JSON of each copy found (a StoredEvent's fields, with its salt and kept hashes of
 * erased fields, as the tier holds them), by eventId. Throws when the tier cannot be read.
 */
/** Looks for the tier's copies of events at their times, on behalf of `sender` (AppendOptions.lookupSender). */
export type TieredCopyLookup = (eventTimes: ReadonlyMap<string, number>, sender?: string) => Promise<ReadonlyMap<string, string>>;

/** The events of an append to look for before it is written (resendCandidates). */
export interface ResendCandidates {
  /** By eventId, the event time the tier is searched at; undefined: not looked for in the tier. */
  times: Map<string, number | undefined>;
  /** Those that would bring erased values back (ErasedIdsView.bringsBack): never written as new. */
  erased: Set<string>;
}

/**
 * The events of an append that may be a client's re-send of one this log's retention deleted
 * (whose copy the tier then holds), or that would bring erased values back; undefined when none.
 *
 * The log's own de-duplication finds an eventId only while the log holds it; once retention
 * deleted a tiered event, a re-send (a replayed spool, a retry of a request whose answer was
 * lost days ago) would be stored and tiered a second time, and one with other content under the
 * id — refused as a conflict while the log held the first — stored as a second record under one
 * id. Only events that can be such a re-send are looked for, so ordinary ingest pays nothing: an
 * id the client chose (not one this node just made), not in the log now, and either
 * - an id retention deleted here (`prunedTimes`, PrunedIds: kept with the deleted event's time),
 *   looked for at that time, the original's, whatever time the re-send carries (a later one, an
 *   earlier one, or the server's own when sent without `ts`): the tier holds the copy there; or
 * - with an event time at or before the newest one retention ever deleted here
 *   (`prunedTimeMax`: a later time was never deleted; undefined: no lookup), looked for at its
 *   own time: an id deleted before ids were kept (or by a leader whose deleted range a standby
 *   skipped: replicated entries carry no ids of what they skip).
 * An id an erasure named is never stored again with values other than the marker in its erased
 * fields (`erased`, whatever its time): judged against the log's copy while it holds one, the
 * tier's when found at one of the times above, and otherwise not stored
 * (AuditStore.appendEncoded). The tier is not searched for it beyond those times: a scan of
 * every file would change nothing but whether it counts as a duplicate or a conflict. Answered
 * without waiting, so an append that needs no lookup is queued at once, as before.
 *
 * A retry racing the deletion of its own first copy (read as held here, deleted before the
 * write) is chosen again: AuditStore.appendEncoded writes an append only if no prune ran since
 * its events were chosen here that may have deleted one of them.
 */
export function resendCandidates(events: readonly EncodedEvent[], freshIds: ReadonlySet<string> | undefined, prunedTimeMax: number | undefined, erasedIds: ErasedIdsView, prunedTimes: ReadonlyMap<string, number>): ResendCandidates | undefined {
  if (prunedTimeMax === undefined && erasedIds.size === 0 && prunedTimes.size === 0) return undefined;
  let found: ResendCandidates | undefined;
  for (const event of events) {
    if (freshIds?.has(event.eventId) === true) continue;
    const original = prunedTimes.get(event.eventId);
    const time = original ?? (prunedTimeMax !== undefined && event.timestamp <= prunedTimeMax ? event.timestamp : undefined);
    // Every event of a request is asked, also one repeating an id: the writer asks each
    // (AuditStore.appendEncoded), and an event it would refuse that was not chosen here would
    // have the append chosen again for ever.
    const erased = erasedIds.size > 0 && erasedIds.bringsBack(event);
    if (time === undefined && !erased) continue;
    found ??= { times: new Map(), erased: new Set() };
    if (found.times.get(event.eventId) === undefined) found.times.set(event.eventId, time);
    if (erased) found.erased.add(event.eventId);
  }
  return found;
}

/** What looking for an append's possible re-sends found (tieredCopiesOf). */
export interface ResendsFound {
  /** The tier's copies of those the log does not hold: their stored JSON, by eventId. */
  copies: ReadonlyMap<string, string>;
  /** Ids whose events would bring erased values back, held neither here nor found in the tier: never stored. */
  erasedElsewhere: ReadonlySet<string>;
}

/**
 * The copies the tier holds of the candidates (resendCandidates) the log does not hold now,
 * looked for at their times, and the erased ones found nowhere. Candidates the log holds are
 * removed from `candidates`. Throws what the lookup throws; without a lookup (no tier), no copies.
 */
export async function tieredCopiesOf(db: Pick<Level<string, string>, 'getMany'>, candidates: ResendCandidates, lookup: TieredCopyLookup | undefined, sender?: string): Promise<ResendsFound> {
  const { times, erased } = candidates;
  const ids = [...times.keys()];
  const held = await db.getMany(ids.map(idKey));
  held.forEach((place, i) => {
    if (place === undefined) return;
    times.delete(ids[i] as string);
    erased.delete(ids[i] as string);
  });
  if (times.size === 0) return NONE_FOUND;
  const timed = new Map([...times].filter((entry): entry is [string, number] => entry[1] !== undefined));
  const copies = lookup === undefined || timed.size === 0 ? NO_COPIES : await lookup(timed, sender);
  let erasedElsewhere: Set<string> | undefined;
  for (const id of erased) if (!copies.has(id)) (erasedElsewhere ??= new Set()).add(id);
  return { copies, erasedElsewhere: erasedElsewhere ?? NO_IDS };
}

const NO_COPIES: ReadonlyMap<string, string> = new Map();
const NO_IDS: ReadonlySet<string> = new Set();
export const NONE_FOUND: ResendsFound = { copies: NO_COPIES, erasedElsewhere: NO_IDS };
