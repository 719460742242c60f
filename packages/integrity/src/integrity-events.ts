import { INTEGRITY_ACTIONS, isSelfRecord, SELF_SOURCE, type AuditEvent } from '@auditlake/model';
import { encodeSignedCheckpoint, type SignedCheckpoint } from './checkpoint.js';
import { encodePublishedKey, type PublishedKey } from './node-key.js';
import { isErasableField, type ErasableField } from './record-fields.js';

/**
 * The events auditlake writes into its own log to make the chain provable (model's
 * INTEGRITY_ACTIONS). They are ordinary records of source `auditlake` (so they are
 * replicated, tiered and chained like any other); clients may not send events with them.
 */
export { INTEGRITY_ACTIONS };

export type IntegrityEventKind = keyof typeof INTEGRITY_ACTIONS;

const KIND_BY_ACTION = new Map<string, IntegrityEventKind>(Object.entries(INTEGRITY_ACTIONS).map(([action, value]) => [value, action as IntegrityEventKind]));

/**
 * Which integrity event a record is, from its source, action and decision values; undefined for
 * any other, among them auditlake's record of a request for one that it refused (DENY, see
 * isSelfRecord).
 */
export function integrityKindOf(source: string, action: string, decision: string): IntegrityEventKind | undefined {
  const kind = KIND_BY_ACTION.get(action);
  return kind !== undefined && isSelfRecord({ source, action, decision }, action) ? kind : undefined;
}

/** The event recording a signed checkpoint. */
export function checkpointEvent(eventId: string, signed: SignedCheckpoint): AuditEvent {
  return {
    eventId,
    userId: signed.nodeId,
    source: SELF_SOURCE,
    action: INTEGRITY_ACTIONS.checkpoint,
    resource: `chain:${signed.chainId}`,
    decision: '',
    tables: [],
    query: '',
    details: encodeSignedCheckpoint(signed),
    timestamp: signed.timeMs,
  };
}

/** The event registering a node's public key. */
export function keyRegistrationEvent(eventId: string, key: PublishedKey, nowMs: number): AuditEvent {
  return {
    eventId,
    userId: key.nodeId,
    source: SELF_SOURCE,
    action: INTEGRITY_ACTIONS.registerKey,
    resource: `key:${key.keyId}`,
    decision: '',
    tables: [],
    query: '',
    details: encodePublishedKey(key),
    timestamp: nowMs,
  };
}

/** One record an erasure names: which event, at which seq. */
export interface ErasedRecordRef {
  eventId: string;
  seq: number;
}

/** What an erasure event's details hold. */
export interface ErasureDetails {
  v: 1;
  fields: ErasableField[];
  records: ErasedRecordRef[];
}

/** The details text of an erasure event. */
export function encodeErasureDetails(details: ErasureDetails): string {
  return JSON.stringify({ v: 1, fields: details.fields, records: details.records.map((r) => ({ eventId: r.eventId, seq: r.seq })) });
}

/** Parses an erasure event's details; throws TypeError when they are not an erasure. */
export function parseErasureDetails(text: string): ErasureDetails {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new TypeError('erasure details are not JSON');
  }
  const d = value as Partial<ErasureDetails> | null;
  if (typeof d !== 'object' || d === null || d.v !== 1 || !Array.isArray(d.fields) || !Array.isArray(d.records)) {
    throw new TypeError('erasure details must be {v:1, fields, records}');
  }
  if (!d.fields.every((f) => typeof f === 'string' && isErasableField(f))) throw new TypeError('erasure details name a field that cannot be erased');
  for (const r of d.records as unknown[]) {
    const ref = r as Partial<ErasedRecordRef> | null;
    if (typeof ref !== 'object' || ref === null || typeof ref.eventId !== 'string' || !Number.isSafeInteger(ref.seq)) throw new TypeError('erasure details hold a record without eventId and seq');
  }
  return { v: 1, fields: d.fields, records: d.records };
}

/** Most bytes of erasure details in one event (the details field's limit is 16 KiB). */
export const ERASURE_DETAILS_BYTES_MAX = 15 * 1024;

/** Splits an erasure of many records into details texts that each fit one event. */
export function erasureDetailsChunks(fields: readonly ErasableField[], records: readonly ErasedRecordRef[]): string[] {
  const chunks: string[] = [];
  let current: ErasedRecordRef[] = [];
  const text = (refs: ErasedRecordRef[]) => encodeErasureDetails({ v: 1, fields: [...fields], records: refs });
  for (const record of records) {
    const next = [...current, record];
    if (current.length > 0 && Buffer.byteLength(text(next), 'utf8') > ERASURE_DETAILS_BYTES_MAX) {
      chunks.push(text(current));
      current = [record];
    } else current = next;
  }
  if (current.length > 0) chunks.push(text(current));
  return chunks;
}
