import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { chmod, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { createFileDurably } from './durable-file.js';
import { sha256Hex } from './record-hasher.js';

/** The file in a node's data dir holding its Ed25519 private key (PKCS#8 PEM, mode 0600). */
export const NODE_KEY_FILE = 'integrity-key.pem';

/** A node's checkpoint signing key. */
export interface NodeKey {
  keyId: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** The public key as SPKI PEM, as published. */
  publicKeyPem: string;
}

/**
 * A key's id: the first 16 hex digits of SHA-256 of its SPKI DER encoding. Binding the id to
 * the key means a key shown for an id can be checked without trusting where it was shown.
 */
export function publicKeyId(publicKey: KeyObject): string {
  return sha256Hex(publicKey.export({ type: 'spki', format: 'der' })).slice(0, 16);
}

/** Loads the node's key from its data dir, creating it on first start. */
export async function loadOrCreateNodeKey(dataDir: string): Promise<NodeKey> {
  const path = join(dataDir, NODE_KEY_FILE);
  let pem: string | undefined;
  try {
    pem = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  // Empty: made by a version that did not sync it, and lost to a crash before anything signed
  // with it could have been published (the key is registered in the log first). A new one.
  if (pem === undefined || pem === '') {
    const { privateKey } = generateKeyPairSync('ed25519');
    pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    // Another process starting on this data dir at once may have made one first: that one holds.
    pem = await createFileDurably(path, pem, 0o600);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch (err) {
    throw new AuditError(AuditErrorCode.CONFIG_INVALID, `${path} does not hold a private key (move it away to have a new key made): ${String(err)}`, { cause: err });
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new AuditError(AuditErrorCode.CONFIG_INVALID, `${path} holds a ${privateKey.asymmetricKeyType} key; checkpoints are signed with Ed25519`);
  await chmod(path, 0o600).catch(() => undefined);
  return nodeKeyOf(privateKey);
}

/** The NodeKey of a private key. */
export function nodeKeyOf(privateKey: KeyObject): NodeKey {
  const publicKey = createPublicKey(privateKey);
  return { keyId: publicKeyId(publicKey), privateKey, publicKey, publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

/** A public key as the chain records it (a key registration) and `_integrity/keys/` publishes it. */
export interface PublishedKey {
  v: 1;
  keyId: string;
  nodeId: string;
  publicKey: string;
}

/** The published form of a node key. */
export function publishKey(key: NodeKey, nodeId: string): PublishedKey {
  return { v: 1, keyId: key.keyId, nodeId, publicKey: key.publicKeyPem };
}

/** The stored text of a published key (a registration event's details, a key object). */
export function encodePublishedKey(key: PublishedKey): string {
  return JSON.stringify({ v: key.v, keyId: key.keyId, nodeId: key.nodeId, publicKey: key.publicKey });
}

/** A published key read back: its id, node, key object, and whether the key matches the id. */
export interface ReadKey {
  keyId: string;
  nodeId: string;
  publicKey: KeyObject | undefined;
  /** The fingerprint of the key actually shown; differs from keyId for a replaced key. */
  fingerprint: string | undefined;
}

/** Parses a published key; throws TypeError when it is not one. */
export function parsePublishedKey(text: string): ReadKey {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new TypeError('published key is not JSON');
  }
  const k = value as Partial<PublishedKey> | null;
  if (typeof k !== 'object' || k === null || k.v !== 1 || typeof k.keyId !== 'string' || typeof k.nodeId !== 'string' || typeof k.publicKey !== 'string') {
    throw new TypeError('published key must be {v:1, keyId, nodeId, publicKey}');
  }
  return { keyId: k.keyId, nodeId: k.nodeId, ...readPublicKeyPem(k.publicKey) };
}

/** A PEM public key and its fingerprint, or undefineds when it is not an Ed25519 public key. */
export function readPublicKeyPem(pem: string): { publicKey: KeyObject | undefined; fingerprint: string | undefined } {
  try {
    const publicKey = createPublicKey(pem);
    if (publicKey.asymmetricKeyType !== 'ed25519') return { publicKey: undefined, fingerprint: undefined };
    return { publicKey, fingerprint: publicKeyId(publicKey) };
  } catch {
    return { publicKey: undefined, fingerprint: undefined };
  }
}
