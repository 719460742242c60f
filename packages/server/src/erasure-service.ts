import { randomUUID } from 'node:crypto';
import { ERASABLE_FIELDS, erasureDetailsChunks, isErasableField, type ErasableField, type ErasedRecordRef } from '@auditlake/integrity';
import { AuditError, AuditErrorCode, encodeEvent, INTEGRITY_ACTIONS, SELF_SOURCE, type AuditEvent } from '@auditlake/model';
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
}

function refuse(message: string): never {
  throw new AuditError(AuditErrorCode.BAD_REQUEST, `${message}; nothing was erased`);
}

/** Validates an erase request body; throws AUDIT_BAD_REQUEST naming what is wrong. */
export function parseErasureRequest(body: unknown): ErasureRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) refuse('the body must be a JSON object {"eventIds": [...], "fields": [...]}');
  const { eventIds, fields } = body as Record<string, unknown>;
  if (!Array.isArray(eventIds) || eventIds.length === 0) refuse('eventIds must be a non-empty array of event ids');
  if (eventIds.length > ERASE_IDS_MAX) refuse(`eventIds must name at most ${ERASE_IDS_MAX} events, got ${eventIds.length}`);
  eventIds.forEach((id, i) => {
    if (typeof id !== 'string' || id === '') refuse(`eventIds[${i}] must be a non-empty string`);
  });
  if (!Array.isArray(fields) || fields.length === 0) refuse(`fields must be a non-empty array of field names (${ERASABLE_FIELDS.join(', ')})`);
  fields.forEach((field, i) => {
    if (typeof field !== 'string' || !isErasableField(field)) refuse(`fields[${i}] must be one of ${ERASABLE_FIELDS.join(', ')}: ${JSON.stringify(field)}`);
  });
  return { eventIds: [...new Set(eventIds as string[])], fields: [...new Set(fields as ErasableField[])] };
}

/**
 * Erasure that keeps the proof (docs/integrity.md): the leader records an `audit:EraseFields`
 * event naming the records and fields (split over several when long), who asked, and appends
 * it to the log; every copy of the log — this store as it appends, each standby as it applies —
 * then replaces those values by the marker and keeps their field hashes, so the chain verifies.
 */
export async function eraseFields(store: AuditStore, request: ErasureRequest, requestedBy: string, nowMs: number, sequencer: Sequencer): Promise<ErasureResult> {
  const records: ErasedRecordRef[] = [];
  for (const eventId of request.eventIds) {
    const event = await store.getByEventId(eventId);
    if (event === undefined) refuse(`event ${eventId} is not in this node's log (erasure of tiered-only records is not supported)`);
    records.push({ eventId, seq: event.seq });
  }
  const events: AuditEvent[] = erasureDetailsChunks(request.fields, records).map((details) => ({
    eventId: `erase-${randomUUID()}`,
    userId: requestedBy,
    source: SELF_SOURCE,
    action: INTEGRITY_ACTIONS.erase,
    resource: `events:${records.length}`,
    decision: '',
    tables: [],
    query: '',
    details,
    timestamp: nowMs,
  }));
  // Ordered only under the leader's sequencer: a node that lost its lease meanwhile refuses.
  const result = await store.appendEncoded(events.map(encodeEvent), { sequencer });
  return { erased: records.length, fields: request.fields, erasureSeqs: result.stored.map((s) => s.seq) };
}
