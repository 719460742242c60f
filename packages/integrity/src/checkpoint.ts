import { sign, verify, type KeyObject } from 'node:crypto';
import { sha256Hex } from './record-hasher.js';

/** What a leader signs: the chain's state at `seq` (docs/integrity.md, "Checkpoints"). */
export interface Checkpoint {
  /** Format version of the signed text. */
  v: 1;
  /** The chain this checkpoint belongs to (a cluster's one history). */
  chainId: string;
  /** The last record the checkpoint covers. */
  seq: number;
  /** chain_hash of the record at `seq`. */
  chainHash: string;
  /** When it was signed, by the signer's clock, epoch ms. */
  timeMs: number;
  /** The leader term it was signed in. */
  term: number;
  /** The signing key's id (its fingerprint, see nodeKeyId). */
  keyId: string;
  /** The node that signed. */
  nodeId: string;
  /** {@link checkpointHash} of the previous checkpoint of the chain; '' for the first. */
  previousCheckpointHash: string;
}

/** A checkpoint with its Ed25519 signature (base64), as stored and published. */
export interface SignedCheckpoint extends Checkpoint {
  signature: string;
}

const HEX64 = /^[0-9a-f]{64}$/;
const KEY_ID = /^[0-9a-f]{16}$/;

/** The exact text signed: JSON with the fields in declaration order. */
export function checkpointText(checkpoint: Checkpoint): string {
  return JSON.stringify({
    v: checkpoint.v,
    chainId: checkpoint.chainId,
    seq: checkpoint.seq,
    chainHash: checkpoint.chainHash,
    timeMs: checkpoint.timeMs,
    term: checkpoint.term,
    keyId: checkpoint.keyId,
    nodeId: checkpoint.nodeId,
    previousCheckpointHash: checkpoint.previousCheckpointHash,
  });
}

/** Signs `checkpoint` with an Ed25519 private key. */
export function signCheckpoint(checkpoint: Checkpoint, privateKey: KeyObject): SignedCheckpoint {
  const signature = sign(null, Buffer.from(checkpointText(checkpoint), 'utf8'), privateKey).toString('base64');
  return { ...checkpoint, signature };
}

/** True when `signed.signature` is a valid Ed25519 signature of its text under `publicKey`. */
export function checkpointSignatureValid(signed: SignedCheckpoint, publicKey: KeyObject): boolean {
  try {
    return verify(null, Buffer.from(checkpointText(signed), 'utf8'), publicKey, Buffer.from(signed.signature, 'base64'));
  } catch {
    return false;
  }
}

/** What the next checkpoint links to: SHA-256 of the signed text, a newline and the signature. */
export function checkpointHash(signed: SignedCheckpoint): string {
  return sha256Hex(`${checkpointText(signed)}\n${signed.signature}`);
}

/** The stored and published form (an event's details, a digest object). */
export function encodeSignedCheckpoint(signed: SignedCheckpoint): string {
  return JSON.stringify({ ...JSON.parse(checkpointText(signed)), signature: signed.signature });
}

/**
 * Parses a stored or published checkpoint; throws TypeError naming what is wrong. Only the
 * shape is checked here; the verifier checks the signature and the links.
 */
export function parseSignedCheckpoint(text: string): SignedCheckpoint {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new TypeError('checkpoint is not JSON');
  }
  if (typeof value !== 'object' || value === null) throw new TypeError('checkpoint is not a JSON object');
  const c = value as Record<string, unknown>;
  const problems: string[] = [];
  if (c['v'] !== 1) problems.push('v must be 1');
  if (typeof c['chainId'] !== 'string' || c['chainId'] === '') problems.push('chainId must be a string');
  for (const key of ['seq', 'timeMs', 'term']) if (!Number.isSafeInteger(c[key]) || (c[key] as number) < 0) problems.push(`${key} must be a non-negative integer`);
  if (typeof c['chainHash'] !== 'string' || !HEX64.test(c['chainHash'])) problems.push('chainHash must be 64 hex digits');
  if (typeof c['keyId'] !== 'string' || !KEY_ID.test(c['keyId'])) problems.push('keyId must be 16 hex digits');
  if (typeof c['nodeId'] !== 'string') problems.push('nodeId must be a string');
  if (typeof c['previousCheckpointHash'] !== 'string' || (c['previousCheckpointHash'] !== '' && !HEX64.test(c['previousCheckpointHash']))) {
    problems.push("previousCheckpointHash must be 64 hex digits or ''");
  }
  if (typeof c['signature'] !== 'string' || c['signature'] === '') problems.push('signature must be base64');
  if (problems.length > 0) throw new TypeError(`checkpoint is not valid: ${problems.join('; ')}`);
  return {
    v: 1,
    chainId: c['chainId'] as string,
    seq: c['seq'] as number,
    chainHash: c['chainHash'] as string,
    timeMs: c['timeMs'] as number,
    term: c['term'] as number,
    keyId: c['keyId'] as string,
    nodeId: c['nodeId'] as string,
    previousCheckpointHash: c['previousCheckpointHash'] as string,
    signature: c['signature'] as string,
  };
}
