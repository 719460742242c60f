// Goal: a checkpoint the leader signs while its log is cut (an adoption of a tier's entries) never lands covering a head the log no longer has: the log verifies afterwards.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChainVerifier, nodeKeyOf } from '@auditlake/integrity';
import type { AuditEvent } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { IntegrityService } from '../src/integrity-service.js';
import type { Membership } from '../src/membership.js';

async function openStore(sequencer: () => number): Promise<AuditStore> {
  const dir = await mkdtemp(join(tmpdir(), 'checkpoint-cut-'));
  const store = await AuditStore.open({ location: join(dir, 's'), sequencer });
  onTestFinished(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return store;
}

function ev(eventId: string, timestamp: number): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp };
}

describe('a checkpoint signed while the log is cut', () => {
  it('is refused, signed again from the cut log, and the log verifies', async () => {
    // The dead leader ordered 10 in term 1; this leader received 6 of them, then ordered its own in term 2.
    const dead = await openStore(() => 1);
    await dead.append(Array.from({ length: 10 }, (_, i) => ev(`d${i + 1}`, i + 1)));
    const leader = await openStore(() => 2);
    await leader.applyReplicated(await dead.readEncodedBySeq(0, 6), dead.termStarts());
    await leader.append(Array.from({ length: 9 }, (_, i) => ev(`own${i + 1}`, 100 + i)));
    const membership = { isLeader: () => true, sequencer: () => 2, term: () => 2 } as unknown as Membership;
    const warnings: string[] = [];
    const integrity = new IntegrityService({
      store: leader,
      membership,
      nodeId: 'b',
      key: nodeKeyOf(generateKeyPairSync('ed25519').privateKey),
      now: Date.now,
      checkpointEvents: 1,
      checkpointIntervalMs: 1e9,
      pollMs: 1e9,
      log: { warn: (_o: object, m: string) => warnings.push(m) },
    });
    integrity.start();
    onTestFinished(() => integrity.close());
    await integrity.checkpointNow();
    await leader.append([ev('own10', 200)]);
    // The checkpoint reads the head, the adoption cuts the log before the checkpoint's record is
    // written: the cut is made inside the checkpoint's read of the previous checkpoint, which
    // comes after its read of the head, so the order does not depend on how fast either runs.
    const adopted = await dead.readEncodedBySeq(6, 10);
    const readCheckpoints = leader.checkpoints.bind(leader);
    const cutBetween = vi.spyOn(leader, 'checkpoints').mockImplementationOnce(async (limit) => {
      await leader.adoptSuffix(7, adopted, dead.termStarts(6));
      return readCheckpoints(limit);
    });
    await expect(integrity.checkpointNow()).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH' });
    expect(cutBetween).toHaveBeenCalledTimes(1);
    await leader.append((await leader.readOutbox(100)).map((o) => JSON.parse(o.json) as AuditEvent));
    // Signed again, now over the cut log's head (the key registered again with it).
    // Its record is the last entry; it covers the one before.
    expect((await integrity.checkpointNow())?.seq).toBe(leader.chainHead.seq - 1);
    const verifier = new ChainVerifier({ startSeq: 1 });
    for (const record of await leader.readBySeq(0, 1000)) verifier.add(record);
    const report = verifier.finish();
    expect(report.message).toMatch(/^verified \d+ records/);
    expect(report.ok).toBe(true);
  });
});
