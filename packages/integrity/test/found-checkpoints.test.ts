// Goal: the compact form a verifier holds checkpoints in gives back exactly what was found —
// also for what a forger may write (hex in upper case, a signature that is not canonical base64
// of 64 bytes) — so no verdict depends on the form; copies are recognised by hash; the record a
// checkpoint was compared with is kept where they differ.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkpointHash, signCheckpoint, type SignedCheckpoint } from '../src/checkpoint.js';
import { FoundCheckpoints } from '../src/found-checkpoints.js';

const { privateKey } = generateKeyPairSync('ed25519');

function signed(seq: number, previous = ''): SignedCheckpoint {
  return signCheckpoint({ v: 1, chainId: 'chain-a', seq, chainHash: (seq % 16).toString(16).repeat(64), timeMs: 1_765_000_000_000 + seq, term: 3, keyId: '0123456789abcdef', nodeId: 'node-1', previousCheckpointHash: previous }, privateKey);
}

describe('FoundCheckpoints', () => {
  it('gives back every checkpoint as found, with its hash, place and words, past its first growth', () => {
    const found = new FoundCheckpoints();
    const given: SignedCheckpoint[] = [];
    let previous = '';
    for (let seq = 10; seq < 10 + 300; seq++) {
      const checkpoint = signed(seq, previous);
      previous = checkpointHash(checkpoint);
      given.push(checkpoint);
      const inStream = seq % 2 === 0;
      expect(found.add(checkpoint, inStream ? { recordSeq: seq + 1, inStream } : { where: `s3://b/p/_integrity/checkpoints/${seq}.json`, inStream })).toBe(seq - 10);
    }
    expect(found.size).toBe(300);
    given.forEach((checkpoint, i) => {
      expect(found.checkpoint(i)).toEqual(checkpoint);
      expect(found.hash(i)).toBe(checkpointHash(checkpoint));
      expect(found.seq(i)).toBe(checkpoint.seq);
      expect(found.inStream(i)).toBe(checkpoint.seq % 2 === 0);
      expect(found.recordSeq(i)).toBe(checkpoint.seq % 2 === 0 ? checkpoint.seq + 1 : undefined);
      expect(found.where(i)).toBe(checkpoint.seq % 2 === 0 ? `the checkpoint record at seq ${checkpoint.seq + 1}` : `s3://b/p/_integrity/checkpoints/${checkpoint.seq}.json`);
    });
  });

  it('keeps as given what its columns cannot give back exactly', () => {
    const base = signed(5);
    const odd: SignedCheckpoint[] = [
      { ...base, chainHash: base.chainHash.toUpperCase() },
      { ...base, previousCheckpointHash: 'AB'.repeat(32) },
      { ...base, previousCheckpointHash: 'not hex' },
      { ...base, signature: base.signature.replace(/=+$/, '') },
      { ...base, signature: ` ${base.signature}` },
      { ...base, signature: 'AAAA' },
      { ...base, signature: Buffer.alloc(65, 7).toString('base64') },
      { ...base, seq: Number.NaN },
    ];
    const found = new FoundCheckpoints();
    for (const checkpoint of odd) {
      const i = found.add(checkpoint, { where: 'x', inStream: false });
      expect(found.checkpoint(i)).toEqual(checkpoint);
      expect(found.hash(i)).toBe(checkpointHash(checkpoint));
    }
  });

  it('knows copies by hash, and notes the comparison with the covered record', () => {
    const found = new FoundCheckpoints();
    const a = signed(7);
    const record = found.add(a, { recordSeq: 8, inStream: true });
    const object = found.add(structuredClone(a), { where: 'an object', inStream: false });
    const other = found.add({ ...a, term: 4 }, { where: 'a forged one', inStream: false });
    expect(found.sameAs(record, object)).toBe(true);
    expect(found.sameAs(record, other)).toBe(false);
    expect(Math.sign(found.compareHashes(record, other))).toBe(-Math.sign(found.compareHashes(other, record)));
    expect([found.matched(record), found.mismatch(record)]).toEqual([false, undefined]);
    found.match(record, a.chainHash);
    expect([found.matched(record), found.mismatch(record)]).toEqual([true, undefined]);
    found.match(other, 'f'.repeat(64));
    expect([found.matched(other), found.mismatch(other)]).toEqual([true, { chainHash: 'f'.repeat(64) }]);
    found.match(object, undefined);
    expect(found.mismatch(object)).toEqual({ chainHash: undefined });
  });
});
