// Goal: a checkpoint verifies under its signer's key only, and any change to its text, its
// signature or its key is caught; a key's id is bound to the key.
import { describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  checkpointHash,
  checkpointSignatureValid,
  encodePublishedKey,
  encodeSignedCheckpoint,
  loadOrCreateNodeKey,
  NODE_KEY_FILE,
  parsePublishedKey,
  parseSignedCheckpoint,
  publishKey,
  signCheckpoint,
  type Checkpoint,
} from '../src/index.js';
import { newKey } from './log-builder.js';

const base: Checkpoint = { v: 1, chainId: 'c', seq: 10, chainHash: 'a'.repeat(64), timeMs: 5, term: 2, keyId: '', nodeId: 'n1', previousCheckpointHash: '' };

describe('checkpoints', () => {
  it('verify under the signing key and not under another, and survive their stored form', () => {
    const key = newKey();
    const signed = signCheckpoint({ ...base, keyId: key.keyId }, key.privateKey);
    expect(checkpointSignatureValid(signed, key.publicKey)).toBe(true);
    expect(checkpointSignatureValid(signed, newKey().publicKey)).toBe(false);
    const read = parseSignedCheckpoint(encodeSignedCheckpoint(signed));
    expect(read).toEqual(signed);
    expect(checkpointSignatureValid(read, key.publicKey)).toBe(true);
    expect(checkpointHash(read)).toBe(checkpointHash(signed));
  });

  it('fail verification when any signed field or the signature changes', () => {
    const key = newKey();
    const signed = signCheckpoint({ ...base, keyId: key.keyId }, key.privateKey);
    for (const changed of [
      { ...signed, seq: 11 },
      { ...signed, chainHash: 'b'.repeat(64) },
      { ...signed, term: 3 },
      { ...signed, timeMs: 6 },
      { ...signed, previousCheckpointHash: 'c'.repeat(64) },
      { ...signed, chainId: 'd' },
      { ...signed, nodeId: 'n2' },
      { ...signed, signature: Buffer.from('x'.repeat(64)).toString('base64') },
      { ...signed, signature: 'not base64 !' },
    ]) {
      expect(checkpointSignatureValid(changed, key.publicKey)).toBe(false);
    }
  });

  it('refuse a malformed stored checkpoint, naming the field', () => {
    expect(() => parseSignedCheckpoint('{')).toThrow(/not JSON/);
    expect(() => parseSignedCheckpoint(JSON.stringify({ ...base, keyId: 'k', signature: 's' }))).toThrow(/keyId must be 16 hex digits/);
    expect(() => parseSignedCheckpoint(JSON.stringify({ ...base, keyId: '0123456789abcdef', seq: -1, signature: 's' }))).toThrow(/seq must be a non-negative integer/);
  });
});

describe('node keys', () => {
  it('are made once per data dir (mode 0600) and loaded again', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'integrity-key-'));
    try {
      const first = await loadOrCreateNodeKey(dir);
      const again = await loadOrCreateNodeKey(dir);
      expect(again.keyId).toBe(first.keyId);
      expect((await stat(join(dir, NODE_KEY_FILE))).mode & 0o777).toBe(0o600);
      expect(await readFile(join(dir, NODE_KEY_FILE), 'utf8')).toContain('PRIVATE KEY');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('have an id that is their fingerprint, so a replaced key is told apart', () => {
    const key = newKey();
    const published = parsePublishedKey(encodePublishedKey(publishKey(key, 'n1')));
    expect(published.fingerprint).toBe(key.keyId);
    const replaced = parsePublishedKey(encodePublishedKey({ ...publishKey(key, 'n1'), publicKey: newKey().publicKeyPem }));
    expect(replaced.keyId).toBe(key.keyId);
    expect(replaced.fingerprint).not.toBe(key.keyId);
  });
});
