import { AuditError, AuditErrorCode } from '@auditlake/model';
import { checkpointSignatureValid, parsePublishedKey, parseSignedCheckpoint, type SignedCheckpoint } from '@auditlake/integrity';
import type { RegisteredKey } from './integrity-index.js';

/**
 * The newest checkpoint a node's retention deleted the record of (its checkpoint index entry is
 * kept, `l!prunedCheckpointSeq`), handed with replicated entries that skip that record's seq:
 * the receiver, which can never get the record itself, keeps it as its own newest deleted
 * checkpoint, so the checkpoint it signs once it leads continues the chain (docs/integrity.md,
 * "Retention").
 */
export interface CarriedCheckpoint {
  /** The seq of the checkpoint record (deleted by the sender's retention). */
  seq: number;
  /** The signed checkpoint as the sender's checkpoint index holds it (the record's details). */
  checkpoint: string;
  /** The registration of the key that signed it, as the sender's key index holds it. */
  key?: RegisteredKey;
}

/** What the receiving log knows, to check a carried checkpoint against. */
export interface CarriedCheckpointContext {
  /** Where the log ended before the entries it came with. */
  lastSeq: number;
  /** The newest checkpoint the log's index holds. */
  newest: SignedCheckpoint | undefined;
  /** The log's chain hash at `seq` (its own entries, a pruned range's end, or an entry applied with it), when known. */
  chainHashAt(seq: number): Promise<string | undefined>;
  /** A key registered in the log (or in the entries applied with it), by key id. */
  keyOf(keyId: string): Promise<RegisteredKey | undefined>;
}

/** The seq a carried checkpoint covers, or undefined when its text is not a checkpoint. */
export function carriedCoveredSeq(carried: CarriedCheckpoint): number | undefined {
  try {
    return parseSignedCheckpoint(carried.checkpoint).seq;
  } catch {
    return undefined;
  }
}

/**
 * Checks a carried checkpoint before the log keeps it, as far as the log can: a checkpoint
 * (its text parses), covering a seq before its record, of the log's chain of checkpoints (the
 * same chainId as the log's newest, covering a later seq, signed in no earlier term), over the chain hash the log has at
 * that seq when it has one there, signed by a key the log registered or the sender shows
 * (whose id is its fingerprint, registered before the checkpoint and after the log's end),
 * with a valid signature. Answers the key to register when it came with the checkpoint.
 * Throws AUDIT_INTEGRITY_MISMATCH for any other.
 */
export async function verifyCarriedCheckpoint(carried: CarriedCheckpoint, context: CarriedCheckpointContext): Promise<{ signed: SignedCheckpoint; registerKey: RegisteredKey | undefined }> {
  let signed: SignedCheckpoint;
  try {
    signed = parseSignedCheckpoint(carried.checkpoint);
  } catch (err) {
    throw refused(carried, (err as Error).message);
  }
  if (signed.seq < 1 || signed.seq >= carried.seq) throw refused(carried, `it covers seq ${signed.seq}, which is not before its own record`);
  const newest = context.newest;
  if (newest !== undefined) {
    if (signed.chainId !== newest.chainId) throw refused(carried, `it belongs to chain ${signed.chainId}, this log's checkpoints to chain ${newest.chainId}`);
    if (signed.seq <= newest.seq || signed.previousCheckpointHash === '') throw refused(carried, `it does not come after this log's newest checkpoint (seq ${newest.seq})`);
    // Its record lies after this log's end, whose entries are the sender's: no older term signed it.
    if (signed.term < newest.term) throw refused(carried, `it was signed in term ${signed.term}, before this log's newest checkpoint (term ${newest.term})`);
  }
  const chainHash = await context.chainHashAt(signed.seq);
  if (chainHash !== undefined && chainHash !== signed.chainHash) throw refused(carried, `its chainHash is not this log's chain hash at seq ${signed.seq}`);
  let key = await context.keyOf(signed.keyId);
  let registerKey: RegisteredKey | undefined;
  if (key === undefined) {
    const shown = carried.key;
    if (shown === undefined) throw refused(carried, `it is signed by key ${signed.keyId}, which this log does not hold and the sender did not show`);
    let read;
    try {
      read = parsePublishedKey(shown.key);
    } catch (err) {
      throw refused(carried, `the key shown with it is not a published key: ${(err as Error).message}`);
    }
    if (read.keyId !== signed.keyId || read.fingerprint !== signed.keyId) throw refused(carried, `the key shown with it is not key ${signed.keyId} (its fingerprint differs)`);
    if (!Number.isSafeInteger(shown.seq) || shown.seq <= context.lastSeq || shown.seq >= carried.seq) {
      throw refused(carried, `key ${signed.keyId} is shown as registered at seq ${shown.seq}, which is not after this log's end (seq ${context.lastSeq}) and before the checkpoint`);
    }
    key = shown;
    registerKey = shown;
  }
  let publicKey;
  try {
    publicKey = parsePublishedKey(key.key).publicKey;
  } catch {
    publicKey = undefined;
  }
  if (publicKey === undefined || !checkpointSignatureValid(signed, publicKey)) throw refused(carried, `its signature is not valid under key ${signed.keyId}`);
  return { signed, registerKey };
}

function refused(carried: CarriedCheckpoint, why: string): AuditError {
  return new AuditError(
    AuditErrorCode.INTEGRITY_MISMATCH,
    `refused the checkpoint sent with the replicated entries (its record, at seq ${carried.seq}, was deleted by the sender's retention): ${why}; nothing was stored`,
  );
}
