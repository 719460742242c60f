import { randomUUID } from 'node:crypto';
import { ERASABLE_FIELDS, erasureDetailsChunks, isErasableField, type ErasableField, type ErasedRecordRef } from '@auditlake/integrity';
import { AuditError, AuditErrorCode, encodeEvent, EVENT_ID_LENGTH_MAX, INTEGRITY_ACTIONS, isSelfSource, jsonForMessage, SELF_SOURCE, type AuditEvent } from '@auditlake/model';
import type { AuditStore, Sequencer } from '@auditlake/store';

/** Most eventIds one erasure request names. */
export const ERASE_IDS_MAX = 10_000;

export interface ErasureRequest {
  eventIds: string[];
  fields: ErasableField[];
}

export interface ErasureResult {
  /** Records whose fields the erasure names. */
  erased: number;
  fields: ErasableField[];
  /** Seqs of the `audit:EraseFields` records that carry it. */
  erasureSeqs: number[];
  /** Set when the tier could not be searched for further copies of events held here (those were erased). */
  warning?: string;
  /** The eventIds of the `audit:EraseFields` records (what `ack=replicated` waits for); not part of the answer. */
  erasureEventIds: string[];
}

function refuse(message: string): never {
  throw new AuditError(AuditErrorCode.BAD_REQUEST, `${message}; nothing was erased`);
}

/** Validates an erase request body; throws AUDIT_BAD_REQUEST naming what is wrong. */
export function parseErasureRequest(body: unknown): ErasureRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) refuse('the body must be a JSON object {"eventIds": [...], "fields": [...]}');
  // A key this version does not read is refused, not ignored: erasure cannot be undone, and a
  // client asking for what it does not do (a `dryRun`, say) would erase for real (review).
  const unknown = Object.keys(body).filter((key) => key !== 'eventIds' && key !== 'fields');
  if (unknown.length > 0) refuse(`unknown ${unknown.length === 1 ? 'key' : 'keys'} ${unknown.map(jsonForMessage).join(', ')} (an erase request holds eventIds and fields only)`);
  const { eventIds, fields } = body as Record<string, unknown>;
  if (!Array.isArray(eventIds) || eventIds.length === 0) refuse('eventIds must be a non-empty array of event ids');
  if (eventIds.length > ERASE_IDS_MAX) refuse(`eventIds must name at most ${ERASE_IDS_MAX} events, got ${eventIds.length}`);
  eventIds.forEach((id, i) => {
    if (typeof id !== 'string' || id === '') refuse(`eventIds[${i}] must be a non-empty string`);
    // Ids ingest refuses name no event: said so, rather than looked for and named back in full
    // among the ids not found (a 100,000-character one echoed whole).
    if (!id.isWellFormed()) refuse(`eventIds[${i}] is not well-formed Unicode (a lone surrogate): no event has such an id`);
    if (id.length > EVENT_ID_LENGTH_MAX) refuse(`eventIds[${i}] is ${id.length} characters long, and an eventId is at most ${EVENT_ID_LENGTH_MAX}: no event has such an id`);
  });
  if (!Array.isArray(fields) || fields.length === 0) refuse(`fields must be a non-empty array of field names (${ERASABLE_FIELDS.join(', ')})`);
  fields.forEach((field, i) => {
    if (typeof field !== 'string' || !isErasableField(field)) refuse(`fields[${i}] must be one of ${ERASABLE_FIELDS.join(', ')}: ${jsonForMessage(field)}`);
  });
  return { eventIds: [...new Set(eventIds as string[])], fields: [...new Set(fields as ErasableField[])] };
}

/** How many unknown eventIds a refusal names at most (the rest are counted). */
const UNKNOWN_NAMED_MAX = 20;

/**
 * Finds events in the tier by eventId alone: eventId → every copy some tiered file holds (seq,
 * source, action), whatever its event time (an event re-sent without `ts` got a new one).
 */
export type TieredRecordFinder = (eventIds: ReadonlySet<string>) => Promise<Map<string, Array<{ seq: number; source: string; action: string }>>>;

/** `a, b, c and 4 more`: at most UNKNOWN_NAMED_MAX named. */
function someNamed(names: readonly string[]): string {
  const more = names.length > UNKNOWN_NAMED_MAX ? ` and ${names.length - UNKNOWN_NAMED_MAX} more` : '';
  return `${names.slice(0, UNKNOWN_NAMED_MAX).join(', ')}${more}`;
}

/**
 * Erasure that keeps the proof (docs/integrity.md): the leader records an `audit:EraseFields`
 * event naming the records and fields (split over several when long), who asked, and appends
 * it to the log; every copy of the log — this store as it appends, each standby as it applies —
 * then replaces those values by the marker and keeps their field hashes, so the chain verifies.
 * Records that retention already removed from the local store are named from the tier
 * (`findTiered`); the sweep then rewrites the tier's rows. An eventId found in neither is
 * refused, naming it, and nothing is erased. So is any of auditlake's own records (source
 * `auditlake`), with AUDIT_SELF_RECORD_NOT_ERASABLE: its integrity records (an erasure record, a
 * checkpoint, a key registration), since the proof rests on them whole and an erasure record
 * erased would no longer be applied (the tier would show what it erased); and its control-plane
 * records (settings changes, refused access, tier adoptions, maintenance runs), which say who
 * changed or tried what on the node — an admin who could blank them could hide their own changes.
 */
export async function eraseFields(store: AuditStore, request: ErasureRequest, requestedBy: string, nowMs: number, sequencer: Sequencer, findTiered?: TieredRecordFinder): Promise<ErasureResult> {
  // The copies are rewritten where the chain applies erasure records: without it the record
  // would be stored and no copy erased (and the answer would say they were).
  if (!store.chainEnabled) refuse('erasure keeps the erased fields\' hashes in the record chain, which is off on this node (auditlake.audit.integrity.chain.enabled=false)');
  // Every copy of each event, by seq: the local one, and each the tier holds — an event re-sent
  // without ts after retention deleted its local copy was stored and tiered again under a new seq.
  const seqs = new Map<string, Set<number>>();
  const own: string[] = [];
  const found = (eventId: string, record: { seq: number; source: string; action: string }) => {
    const copies = seqs.get(eventId) ?? new Set<number>();
    seqs.set(eventId, copies.add(record.seq));
    if (isSelfSource(record.source) && !own.some((named) => named.startsWith(`${eventId} (`))) own.push(`${eventId} (${record.action})`);
  };
  let heldAll = true;
  for (const eventId of request.eventIds) {
    const event = await store.getByEventId(eventId);
    if (event === undefined) {
      heldAll = false;
      continue;
    }
    found(eventId, event);
  }
  let warning: string | undefined;
  if (findTiered) {
    // One pass over the tier for every id, held here or not: copies are found by eventId alone.
    const tiered = await findTiered(new Set(request.eventIds)).catch((err: unknown) => {
      // Events held nowhere else must be found in the tier: a tier that cannot be read fails the request.
      if (!heldAll) throw err;
      // Events held here are erased here whatever the tier answers.
      warning = `the tier could not be read (${err instanceof Error ? err.message : String(err)}), so copies of these events it may hold under other seqs (an event re-sent after retention deleted its local copy) were not looked for`;
      return new Map<string, Array<{ seq: number; source: string; action: string }>>();
    });
    for (const [eventId, refs] of tiered) for (const ref of refs) found(eventId, ref);
  }
  const unknown = request.eventIds.filter((eventId) => !seqs.has(eventId));
  if (unknown.length > 0) {
    refuse(`${unknown.length === 1 ? 'event' : `${unknown.length} events`} not in this node's log nor in the tier: ${someNamed(unknown)}`);
  }
  if (own.length > 0) {
    throw new AuditError(
      AuditErrorCode.SELF_RECORD_NOT_ERASABLE,
      `${own.length === 1 ? 'event' : `${own.length} events`} ${someNamed(own)} ${own.length === 1 ? 'is one' : 'are'} of auditlake's own records (source auditlake: settings changes, refused access, tier adoptions, maintenance runs, erasures, checkpoints, key registrations), which cannot be erased; nothing was erased`,
    );
  }
  const records: ErasedRecordRef[] = request.eventIds.flatMap((eventId) => [...(seqs.get(eventId) ?? [])].sort((a, b) => a - b).map((seq) => ({ eventId, seq })));
  const events: AuditEvent[] = erasureDetailsChunks(request.fields, records).map((details) => ({ ...erasureEvent(requestedBy, nowMs, records.length), details }));
  // Ordered only under the leader's sequencer: a node that lost its lease meanwhile refuses.
  const result = await store.appendEncoded(events.map(encodeEvent), { sequencer });
  const erasureSeqs = result.stored.map((s) => s.seq);
  const erasureEventIds = events.map((event) => event.eventId);
  // A copy stored while the copies were gathered (the tier read takes seconds; a re-send without
  // ts after retention deleted the first copy) is named by none of the records above. From the
  // erasure's write on no copy holding the values can be stored (its ids are recorded as
  // erased), so one more look finds every such copy, and a second erasure names them.
  const firstErasureSeq = Math.min(...erasureSeqs);
  const late: ErasedRecordRef[] = [];
  for (const eventId of request.eventIds) {
    const event = await store.getByEventId(eventId);
    if (event !== undefined && event.seq < firstErasureSeq && seqs.get(eventId)?.has(event.seq) !== true) late.push({ eventId, seq: event.seq });
  }
  if (late.length > 0) {
    const more: AuditEvent[] = erasureDetailsChunks(request.fields, late).map((details) => ({ ...erasureEvent(requestedBy, nowMs, late.length), details }));
    const moreResult = await store.appendEncoded(more.map(encodeEvent), { sequencer });
    erasureSeqs.push(...moreResult.stored.map((s) => s.seq));
    erasureEventIds.push(...more.map((event) => event.eventId));
  }
  return { erased: records.length + late.length, fields: request.fields, erasureSeqs, ...(warning === undefined ? {} : { warning }), erasureEventIds };
}

/** An erasure record's event, its details to be filled in. */
function erasureEvent(requestedBy: string, nowMs: number, records: number): AuditEvent {
  return {
    eventId: `erase-${randomUUID()}`,
    userId: requestedBy,
    source: SELF_SOURCE,
    action: INTEGRITY_ACTIONS.erase,
    resource: `events:${records}`,
    decision: '',
    tables: [],
    query: '',
    details: '',
    timestamp: nowMs,
  };
}
