// Goal: a standby that catches up across a range its leader's retention deleted keeps the
// leader's newest deleted checkpoint (the record it can never receive), checked before it is
// kept, so the checkpoint it signs once it leads continues the chain of checkpoints; a forged
// one is refused with AUDIT_INTEGRITY_MISMATCH and nothing is stored.
import { generateKeyPairSync } from 'node:crypto';
import {
  ChainVerifier,
  checkpointEvent,
  checkpointHash,
  encodeSignedCheckpoint,
  keyRegistrationEvent,
  nodeKeyOf,
  parseSignedCheckpoint,
  publishKey,
  signCheckpoint,
  type NodeKey,
  type SignedCheckpoint,
} from '@auditlake/integrity';
import type { AuditEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import type { AuditStore, AuditStoreOptions } from '../src/audit-store.js';
import type { CarriedCheckpoint } from '../src/carried-checkpoint.js';
import type { PrunedRange } from '../src/pruned-ranges.js';
import { useTempStores } from './temp-stores.js';

const stores = useTempStores('carried-checkpoint-');

function ev(eventId: string, timestamp: number): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp };
}

function newKey(): NodeKey {
  return nodeKeyOf(generateKeyPairSync('ed25519').privateKey);
}

async function registerKey(store: AuditStore, key: NodeKey, nodeId: string, timestamp: number): Promise<void> {
  await store.append([keyRegistrationEvent(`key-${key.keyId}`, publishKey(key, nodeId), timestamp)]);
}

/** Signs a checkpoint of the store's head as IntegrityService does (linked to its newest), with event time `timeMs`, and appends its record. */
async function checkpoint(store: AuditStore, key: NodeKey, nodeId: string, term: number, timeMs: number, edit: (c: SignedCheckpoint) => SignedCheckpoint = (c) => c): Promise<SignedCheckpoint> {
  const [previous] = await store.checkpoints(1);
  const previousSigned = previous === undefined ? undefined : parseSignedCheckpoint(previous.checkpoint);
  const head = store.chainHead;
  const signed = edit(
    signCheckpoint(
      {
        v: 1,
        chainId: previousSigned?.chainId ?? 'chain-1',
        seq: head.seq,
        chainHash: head.chainHash,
        timeMs,
        term,
        keyId: key.keyId,
        nodeId,
        previousCheckpointHash: previousSigned === undefined ? '' : checkpointHash(previousSigned),
      },
      key.privateKey,
    ),
  );
  await store.append([checkpointEvent(`checkpoint-${head.seq}`, signed)]);
  return signed;
}

/** A leader whose first checkpoint its standby received, and whose second (signed by a key registered after that) its retention deleted while the standby was away. */
async function leaderAndStandby(standbyOptions: Partial<AuditStoreOptions> = {}) {
  const { store: leader } = await stores.open();
  const { store: standby } = await stores.open(undefined, undefined, standbyOptions);
  const first = newKey();
  const second = newKey();
  await leader.append([ev('a1', 1)]);
  await registerKey(leader, first, 'a', 2);
  await leader.append([ev('a2', 3)]);
  const c1 = await checkpoint(leader, first, 'a', 1, 4);
  await standby.applyReplicated(await leader.readEncodedBySeq(0, 100), leader.termStarts());
  // The standby is away: a key registration and a checkpoint it never receives, then a record it will.
  await leader.append([ev('b1', 5)]);
  await registerKey(leader, second, 'b', 6);
  await leader.append([ev('b2', 7)]);
  const c2 = await checkpoint(leader, second, 'b', 1, 8);
  await leader.append([ev('c1', 1000)]);
  const history = await leader.readBySeq(0, 100);
  await leader.pruneBefore(100, 100, async () => true);
  expect((await leader.readBySeq(0, 100)).map((e) => e.eventId)).toEqual(['c1']);
  return { leader, standby, first, second, c1, c2, history };
}

/** What a pull after the standby's end answers: the entries, and the deleted ranges and checkpoint they skip. */
async function pullFrom(leader: AuditStore, standby: AuditStore): Promise<{ entries: Uint8Array[]; carried: CarriedCheckpoint | undefined; ranges: readonly PrunedRange[] | undefined }> {
  const after = standby.position.lastSeq;
  const entries = await leader.readEncodedBySeq(after, 100);
  const skipped = await leader.skippedByRetention(after, entries);
  return { entries, carried: skipped.checkpoint, ranges: skipped.ranges };
}

describe('a checkpoint carried with replicated entries that skip its deleted record', () => {
  it('is kept by the standby, with the key that signed it, and its next checkpoint as leader continues the chain', async () => {
    const { leader, standby, second, c1, c2, history } = await leaderAndStandby();
    expect(parseSignedCheckpoint((await standby.checkpoints(1))[0]!.checkpoint)).toEqual(c1);
    const { entries, carried, ranges } = await pullFrom(leader, standby);
    expect(carried).toEqual({ seq: 8, checkpoint: encodeSignedCheckpoint(c2), key: { seq: 6, key: expect.any(String) as string } });
    // The leader deleted 1..8; the standby holds 1..4, so it is told of 5..8 and the chain hash at 8.
    expect(ranges).toEqual([{ fromSeq: 5, toSeq: 8, chainHash: history[7]!.chainHash }]);
    expect(await standby.applyReplicated(entries, leader.termStarts(standby.position.lastSeq), { checkpoint: carried!, ranges: ranges! })).toBe(1);
    expect(standby.prunedRanges).toEqual([{ fromSeq: 5, toSeq: 8, chainHash: history[7]!.chainHash }]);
    expect((await standby.checkpoints()).map((c) => c.seq)).toEqual([4, 8]);
    expect((await standby.registeredKeys()).get(second.keyId)?.seq).toBe(6);

    // Failover: the standby leads in term 2 and signs under its own key.
    const own = newKey();
    await registerKey(standby, own, 'c', 2000);
    const c3 = await checkpoint(standby, own, 'c', 2, 2001);
    expect(c3.chainId).toBe(c2.chainId);
    expect(c3.previousCheckpointHash).toBe(checkpointHash(c2));
    // The whole history (as the tier holds it) verifies as one chain of records and checkpoints.
    const verifier = new ChainVerifier({ startSeq: 1 });
    for (const record of [...history, ...(await standby.readBySeq(9, 100))]) verifier.add(record);
    const report = verifier.finish();
    expect(report.message).toBe('verified 11 records, seq 1..11, 3 checkpoints');

    // The standby's own log verifies as it is (what `auditlake verify --url` reads): its records, the
    // ranges deleted by retention, the checkpoints and keys it lists.
    const standbyLog = new ChainVerifier({
      startSeq: 1,
      pruned: standby.prunedRanges,
      shownKeys: [...(await standby.registeredKeys()).values()].map((k) => ({ text: k.key, where: 'standby' })),
      checkpoints: (await standby.checkpoints()).map((c) => ({ recordSeq: c.seq, checkpoint: parseSignedCheckpoint(c.checkpoint), where: 'standby' })),
      head: { seq: standby.chainHead.seq, chainHash: standby.chainHead.chainHash, where: 'standby' },
    });
    for (const record of await standby.readBySeq(0, 100)) standbyLog.add(record);
    expect(standbyLog.finish().message).toMatch(/^verified 7 records, seq 1\.\.11, 3 checkpoints/);
  });

  it('stays the standby’s newest deleted checkpoint across its own retention and a restart', async () => {
    const { leader, standby, c2 } = await leaderAndStandby();
    const { entries, carried } = await pullFrom(leader, standby);
    await standby.applyReplicated(entries, leader.termStarts(standby.position.lastSeq), { checkpoint: carried! });
    // The standby's retention deletes its own checkpoint record (seq 4): that index entry goes, the carried one stays.
    await standby.pruneBefore(100, 100, async () => true);
    expect((await standby.checkpoints()).map((c) => c.seq)).toEqual([8]);
    const location = standby.location;
    await stores.close(standby);
    const { store: reopened } = await stores.open(location);
    expect((await reopened.checkpoints()).map((c) => ({ seq: c.seq, checkpoint: parseSignedCheckpoint(c.checkpoint) }))).toEqual([{ seq: 8, checkpoint: c2 }]);
  });

  it('is refused when forged, altered, of another chain, or signed by a key neither side shows: AUDIT_INTEGRITY_MISMATCH, nothing stored', async () => {
    const { leader, standby, second, c2 } = await leaderAndStandby();
    const { entries, carried } = await pullFrom(leader, standby);
    const genuine = carried as CarriedCheckpoint;
    const attacker = newKey();
    const resign = (edit: Partial<SignedCheckpoint>, key: NodeKey = second): string => encodeSignedCheckpoint(signCheckpoint({ ...c2, ...edit }, key.privateKey));
    const forgeries: Array<[string, CarriedCheckpoint, RegExp]> = [
      ['altered after signing', { ...genuine, checkpoint: encodeSignedCheckpoint({ ...c2, chainHash: 'f'.repeat(64) }) }, /signature is not valid/],
      ['not a checkpoint', { ...genuine, checkpoint: '{"v":1}' }, /checkpoint is not valid/],
      ['another chain', { ...genuine, checkpoint: resign({ chainId: 'chain-2' }) }, /belongs to chain chain-2/],
      ['a new chain', { ...genuine, checkpoint: resign({ previousCheckpointHash: '' }) }, /does not come after/],
      ['covering its own record', { ...genuine, checkpoint: resign({ seq: 8 }) }, /not before its own record/],
      ['an older term', { ...genuine, checkpoint: resign({ term: 0 }) }, /signed in term 0/],
      ['signed by a key not shown', { seq: genuine.seq, checkpoint: resign({ keyId: attacker.keyId }, attacker) }, /does not hold and the sender did not show/],
      ['shown with a key of another id', { ...genuine, checkpoint: resign({ keyId: attacker.keyId }, attacker) }, /is not key/],
      ['shown with its key registered before the standby’s end', { ...genuine, checkpoint: resign({ keyId: attacker.keyId }, attacker), key: { seq: 3, key: JSON.stringify(publishKey(attacker, 'x')) } }, /not after this log's end/],
    ];
    for (const [what, forged, message] of forgeries) {
      await expect(standby.applyReplicated(entries, leader.termStarts(standby.position.lastSeq), { checkpoint: forged }), what).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH', message });
      expect(standby.position.lastSeq, what).toBe(4);
    }
    expect((await standby.checkpoints()).map((c) => c.seq)).toEqual([4]);
    expect((await standby.registeredKeys()).has(second.keyId)).toBe(false);
    expect((await standby.registeredKeys()).has(attacker.keyId)).toBe(false);
    // The genuine one is still taken.
    await standby.applyReplicated(entries, leader.termStarts(standby.position.lastSeq), { checkpoint: genuine });
    expect((await standby.checkpoints()).map((c) => c.seq)).toEqual([4, 8]);
  });

  it('is ignored where the entries do not skip its record, or the standby holds a newer checkpoint', async () => {
    const { leader, standby, c1 } = await leaderAndStandby();
    const { entries, carried } = await pullFrom(leader, standby);
    const genuine = carried as CarriedCheckpoint;
    // Past the last entry (a later answer would carry it), or at or before the standby's end (a stale answer).
    for (const seq of [9, 10, 4, 2]) {
      const { store: other } = await stores.open();
      await other.applyReplicated(await standby.readEncodedBySeq(0, 100), standby.termStarts());
      await other.applyReplicated(entries, leader.termStarts(4), { checkpoint: { ...genuine, seq } });
      expect((await other.checkpoints()).map((c) => parseSignedCheckpoint(c.checkpoint)), String(seq)).toEqual([c1]);
    }
    // The leader carries nothing when the entries hold its newest deleted checkpoint's seq or stop before it.
    expect(await leader.skippedByRetention(8, entries)).toEqual({});
    expect(await leader.skippedByRetention(4, [])).toEqual({});
  });

  it('ranges deleted by retention: kept when they fill a gap up to the next entry, which must link to their chain hash', async () => {
    const { leader, standby, history } = await leaderAndStandby();
    const { entries, ranges } = await pullFrom(leader, standby);
    const genuine = ranges![0]!;
    await expect(standby.applyReplicated(entries, leader.termStarts(4), { ranges: [{ ...genuine, chainHash: history[6]!.chainHash! }] })).rejects.toMatchObject({
      code: 'AUDIT_INTEGRITY_MISMATCH',
      message: /seq 9: its chain_hash does not follow/,
    });
    expect(standby.position.lastSeq).toBe(4);
    expect(standby.prunedRanges).toEqual([]);
    // Not reaching the next entry, or starting at or before the standby's end: ignored.
    for (const range of [{ ...genuine, toSeq: 7 }, { ...genuine, fromSeq: 4 }]) {
      const { store: other } = await stores.open();
      await other.applyReplicated(await standby.readEncodedBySeq(0, 100), standby.termStarts());
      await other.applyReplicated(entries, leader.termStarts(4), { ranges: [range] });
      expect(other.prunedRanges, JSON.stringify(range)).toEqual([]);
    }
    // Joined to the standby's own range when it follows it, kept across a restart, and cut with the log.
    await standby.pruneBefore(100, 100, async () => true);
    expect(standby.prunedRanges).toEqual([{ fromSeq: 1, toSeq: 4, chainHash: history[3]!.chainHash }]);
    await standby.applyReplicated(entries, leader.termStarts(4), { ranges: [genuine] });
    expect(standby.prunedRanges).toEqual([{ fromSeq: 1, toSeq: 8, chainHash: history[7]!.chainHash }]);
    const location = standby.location;
    await stores.close(standby);
    const { store: reopened } = await stores.open(location);
    expect(reopened.prunedRanges).toEqual([{ fromSeq: 1, toSeq: 8, chainHash: history[7]!.chainHash }]);
    // A cut inside it goes back to before it: no chain hash is known there but at its end
    // (the next entry could not be checked, nor would any link to one left without a hash).
    expect(await reopened.divertSuffixToOutbox(6)).toMatchObject({ keptThrough: 0 });
    expect(reopened.prunedRanges).toEqual([]);
  });

  it('the highest seq deleted or skipped: a prune batch that read the log before an apply raised it does not lower it', async () => {
    let applyHere: (() => Promise<unknown>) | undefined;
    const { leader, standby } = await leaderAndStandby({
      // The apply (skipping 5..8) runs after the prune read the records it deletes (1..4) and
      // before the prune takes the writer: what a standby's retention and a pull can do.
      beforePruneWrite: async () => {
        const apply = applyHere;
        applyHere = undefined;
        await apply?.();
      },
    });
    const { entries, ranges } = await pullFrom(leader, standby);
    applyHere = () => standby.applyReplicated(entries, leader.termStarts(4), { ranges: ranges! });
    await standby.pruneBefore(100, 100, async () => true);
    expect(applyHere).toBeUndefined();
    // Above the highest hole the log counts as contiguous: the tiering backlog is counted by
    // subtraction there, and a pull answer from there on carries no deleted range.
    const held = (await standby.readBySeq(0, 1_000)).length;
    expect(held).toBe(1);
    expect(await standby.countAfter(0)).toBe(held);
    const location = standby.location;
    await stores.close(standby);
    expect(await (await stores.open(location)).store.countAfter(0)).toBe(held);
  });

  it('ranges deleted by retention: a prune running beside the apply keeps the ranges the apply added', async () => {
    const { leader, standby, history } = await leaderAndStandby();
    const { entries, ranges } = await pullFrom(leader, standby);
    // Both start at once: the prune reads the records it deletes while the apply writes.
    await Promise.all([standby.pruneBefore(100, 100, async () => true), standby.applyReplicated(entries, leader.termStarts(4), { ranges: ranges! })]);
    expect(standby.prunedRanges).toEqual([{ fromSeq: 1, toSeq: 8, chainHash: history[7]!.chainHash }]);
    const location = standby.location;
    await stores.close(standby);
    expect((await stores.open(location)).store.prunedRanges).toEqual([{ fromSeq: 1, toSeq: 8, chainHash: history[7]!.chainHash }]);
  });
});
