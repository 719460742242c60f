import { integrityKindOf, parseErasureDetails, type ErasedRecordRef } from '@auditlake/integrity';
import type { StoredEvent } from '@auditlake/model';
import type { Level } from 'level';
import { SEQS_READ_TOGETHER, storedAtSeqs } from './point-reads.js';

/**
 * The erasure records among `events` (entries retention would delete) that name a copy this
 * log still holds and does not delete with them (`deleting`: the seqs this prune deletes), by
 * their seq: retention keeps them.
 *
 * Why: `auditlake verify` accepts an erased field only where an erasure record later in the log
 * names that copy. Retention deletes by event time, so an erased event timed after its erasure
 * record (a client clock ahead, a replay with later times) outlived the record, and the log then
 * held an erased copy no record named: verify reported it altered until retention reached the
 * copy's own time (a review reproduced it on a single node). Kept, the record goes with a later
 * run once the copies it names are gone. A record whose details cannot be read names nothing.
 */
export async function erasuresNamingHeldCopies(db: Level<string, string>, events: readonly StoredEvent[], deleting: ReadonlySet<number>): Promise<Set<number>> {
  const kept = new Set<number>();
  for (const event of events) {
    if (integrityKindOf(event.source, event.action, event.decision) !== 'erase') continue;
    let records;
    try {
      records = parseErasureDetails(event.details).records;
    } catch {
      continue;
    }
    const named = records.filter((ref) => ref.seq < event.seq && !deleting.has(ref.seq));
    if (await holdsAny(db, named)) kept.add(event.seq);
  }
  return kept;
}

/** Whether the log holds any of `records` (the same eventId at the same seq). */
async function holdsAny(db: Level<string, string>, records: readonly ErasedRecordRef[]): Promise<boolean> {
  for (let at = 0; at < records.length; at += SEQS_READ_TOGETHER) {
    const chunk = records.slice(at, at + SEQS_READ_TOGETHER);
    const held = await storedAtSeqs(db, chunk.map((ref) => ref.seq));
    const holds = (ref: ErasedRecordRef) => {
      const entry = held.get(ref.seq);
      return entry !== undefined && (JSON.parse(entry.json) as StoredEvent).eventId === ref.eventId;
    };
    if (chunk.some(holds)) return true;
  }
  return false;
}
