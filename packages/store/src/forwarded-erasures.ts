import { erasureDetailsChunks, integrityKindOf, parseErasureDetails, type ErasedRecordRef } from '@auditlake/integrity';
import { encodeEvent, type AuditEvent, type EncodedEvent, type StoredEvent } from '@auditlake/model';
import type { AppendOptions, AppendResult } from './event-writer.js';
import { settingsRecordAsInForce } from './forwarded-settings.js';

/** What appendForwarded needs of the store: append, find an event by eventId or seq, and how far the tier holds the log. */
export interface ForwardTarget {
  appendEncoded(events: readonly EncodedEvent[], options?: AppendOptions): Promise<AppendResult>;
  getByEventId(eventId: string): Promise<StoredEvent | undefined>;
  getBySeq(seq: number): Promise<StoredEvent | undefined>;
  /** Where this log ends (AuditStore.position). */
  readonly position: { readonly lastSeq: number };
  /** A replicated-metadata value (the settings history a returning settings record is judged by). */
  meta<T>(name: string): T | undefined;
}

/** Cheap test first: only a text naming the erase action is parsed. */
function erasureOf(event: EncodedEvent): AuditEvent | undefined {
  if (!event.json.includes('"audit:EraseFields"')) return undefined;
  const parsed = JSON.parse(event.json) as AuditEvent;
  return integrityKindOf(parsed.source, parsed.action, parsed.decision) === 'erase' ? parsed : undefined;
}

/**
 * Appends events forwarded by another node (or this node's own outbox) on the leader. An
 * erasure record among them was cut from a log that diverged (docs/replication.md): the seqs
 * it names are that log's, which the leader has given to other events since. So it is not
 * stored as it came: it is re-applied by eventId. The events before it are appended first (the
 * event it erased usually travels in the same batch, ahead of it), then the records it names
 * are looked up here — each event's current copy by its eventId, and each named seq that
 * still holds the same eventId, or that this log no longer holds below its end (retention
 * deleted it here, or the leader it caught up from had; the tier holds it, and its erasure pass
 * matches eventId and seq, so a seq named in vain changes nothing) — and an erasure record
 * naming those (same eventId, who asked, time and fields) is appended in its place, so the tier's
 * copies are erased and the ids recorded as erased; one that names nothing is dropped.
 * Deterministic for a retried batch: the same lookup finds the same records, so the rebuilt
 * record repeats the first and counts as a duplicate.
 */
export async function appendForwarded(store: ForwardTarget, forwarded: readonly EncodedEvent[], options: AppendOptions): Promise<AppendResult> {
  // A settings record among them is stored as the record of a change in force only where it is.
  const events = forwarded.map((event) => settingsRecordAsInForce(store, event));
  const erasures = events.map(erasureOf);
  if (erasures.every((erasure) => erasure === undefined)) return store.appendEncoded(events, options);
  const total: AppendResult = { stored: [], duplicates: 0, conflicts: [] };
  const add = (result: AppendResult) => {
    total.stored.push(...result.stored);
    total.duplicates += result.duplicates;
    total.conflicts.push(...result.conflicts);
    if (result.heldByTier !== undefined) (total.heldByTier ??= []).push(...result.heldByTier);
  };
  let from = 0;
  for (let i = 0; i <= events.length; i++) {
    const erasure = erasures[i];
    if (i < events.length && erasure === undefined) continue;
    if (i > from) add(await store.appendEncoded(events.slice(from, i), options));
    from = i + 1;
    if (erasure === undefined) continue;
    const rebuilt = await reapplied(store, erasure);
    if (rebuilt.length > 0) add(await store.appendEncoded(rebuilt.map(encodeEvent), options));
  }
  return total;
}

/** The erasure record re-aimed at the records this log holds under the eventIds it names (none: nothing to store). */
async function reapplied(store: ForwardTarget, erasure: AuditEvent): Promise<AuditEvent[]> {
  let details;
  try {
    details = parseErasureDetails(erasure.details);
  } catch {
    return []; // Names nothing this node can apply.
  }
  const refs: ErasedRecordRef[] = [];
  const named = (ref: ErasedRecordRef) => {
    if (!refs.some((r) => r.eventId === ref.eventId && r.seq === ref.seq)) refs.push(ref);
  };
  for (const eventId of new Set(details.records.map((ref) => ref.eventId))) {
    const current = await store.getByEventId(eventId);
    if (current !== undefined && integrityKindOf(current.source, current.action, current.decision) === undefined) named({ eventId, seq: current.seq });
  }
  // A copy under another seq (an event re-sent after retention) that the leader's log holds at
  // that same seq; or one only the tier holds now (the tier's erasure pass matches its eventId too).
  for (const ref of details.records) {
    const held = await store.getBySeq(ref.seq);
    if (held?.eventId === ref.eventId || (held === undefined && ref.seq <= store.position.lastSeq)) named(ref);
  }
  refs.sort((a, b) => a.seq - b.seq);
  if (refs.length === 0) return [];
  return erasureDetailsChunks(details.fields, refs).map((text, i) => ({
    ...erasure,
    eventId: i === 0 ? erasure.eventId : `${erasure.eventId}-${i}`,
    resource: `events:${refs.length}`,
    details: text,
  }));
}
