import { AuditError, AuditErrorCode } from '@auditlake/model';

/**
 * Refuses a query parameter not in `known` with AUDIT_BAD_REQUEST naming it, as the search does:
 * a misspelt or unknown one read as absent would look like an answer (or, for a write, like an
 * option honoured). `refusal` ends the message with what the refusal means for a write.
 */
export function refuseUnknownParams(query: unknown, known: readonly string[], refusal = ''): void {
  for (const name of Object.keys(query as Record<string, unknown>)) {
    if (!known.includes(name)) throw new AuditError(AuditErrorCode.BAD_REQUEST, `unknown parameter: ${name} (known: ${known.join(', ')})${refusal}`);
  }
}
