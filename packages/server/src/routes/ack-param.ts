import { AuditError, AuditErrorCode } from '@auditlake/model';

/**
 * The `ack` query parameter of a write (ingest, erase): `local` (the default) or `replicated`.
 * Anything else is AUDIT_BAD_REQUEST naming it; `refusal` ends the message with what the
 * refusal means for the write (e.g. `; nothing was erased`).
 */
export function ackReplicatedOf(query: unknown, refusal = ''): boolean {
  const ack = (query as Record<string, unknown>)['ack'];
  if (ack === undefined || ack === 'local') return false;
  if (ack === 'replicated') return true;
  throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter ack must be local or replicated: ${typeof ack === 'string' ? ack : JSON.stringify(ack)}${refusal}`);
}
