// Goal: retention never restarts the chain of checkpoints. Once it has deleted every checkpoint
// record a store held (a tiered node idle for retain.local.days), the next checkpoint — signed by
// the same leader, by it after a restart, or by a standby that became leader — still continues
// the chain: same chainId, linked to the newest checkpoint signed before.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChainVerifier, checkpointHash, nodeKeyOf, parseSignedCheckpoint, type SignedCheckpoint, type VerifyRecord } from '@auditlake/integrity';
import type { AuditEvent } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { describe, expect, it, onTestFinished } from 'vitest';
import { IntegrityService } from '../src/integrity-service.js';
import type { Membership } from '../src/membership.js';

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'checkpoint-retention-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function openStore(location: string, sequencer: () => number): Promise<AuditStore> {
  const store = await AuditStore.open({ location, sequencer });
  onTestFinished(() => store.close());
  return store;
}

function integrityOf(store: AuditStore, term: number, nodeId: string, now: () => number = Date.now): IntegrityService {
  const membership = { isLeader: () => true, sequencer: () => term, term: () => term } as unknown as Membership;
  const integrity = new IntegrityService({
    store,
    membership,
    nodeId,
    key: nodeKeyOf(generateKeyPairSync('ed25519').privateKey),
    now,
    checkpointEvents: 1_000_000,
    checkpointIntervalMs: 1e9,
    pollMs: 1e9,
    log: { warn: () => undefined },
  });
  integrity.start();
  onTestFinished(() => integrity.close());
  return integrity;
}

function ev(eventId: string, timestamp: number): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp };
}

/** Deletes every record the store holds (retention with a cutoff past every event's time). */
async function pruneEverything(store: AuditStore): Promise<void> {
  await store.pruneBefore(Date.now() + 86_400_000, 3, async () => true);
  expect(await store.readBySeq(0, 1000)).toEqual([]);
}

function expectFollows(next: SignedCheckpoint | undefined, previous: SignedCheckpoint | undefined): void {
  expect(next).toBeDefined();
  expect(previous).toBeDefined();
  expect(next?.chainId).toBe(previous?.chainId);
  expect(next?.previousCheckpointHash).toBe(checkpointHash(previous as SignedCheckpoint));
}

/** The whole history (as a tier would hold it) verifies as one chain of records and of checkpoints. */
function expectVerifies(records: VerifyRecord[], checkpoints: number): void {
  const verifier = new ChainVerifier({ startSeq: 1 });
  for (const record of records.sort((a, b) => a.seq - b.seq)) verifier.add(record);
  const report = verifier.finish();
  expect(report.message).toMatch(new RegExp(`^verified ${records.length} records, seq 1\\.\\.${records.length}, ${checkpoints} checkpoints$`));
  expect(report.ok).toBe(true);
}

describe('checkpoints after retention deleted every checkpoint record', () => {
  it('continue the chain on the leader, also after a restart, and the index keeps only the newest deleted one', async () => {
    const location = join(await tempDir(), 's');
    let store = await openStore(location, () => 1);
    let integrity = integrityOf(store, 1, 'a');
    const history: VerifyRecord[] = [];
    await store.append([ev('e1', 1), ev('e2', 2)]);
    const first = await integrity.checkpointNow();
    history.push(...(await store.readBySeq(0, 1000)));
    await pruneEverything(store);
    // The newest checkpoint stays listed, by the seq of its (deleted) record.
    expect((await store.checkpoints()).map((c) => parseSignedCheckpoint(c.checkpoint))).toEqual([first]);

    await store.append([ev('e3', 3)]);
    const second = await integrity.checkpointNow();
    expectFollows(second, first);
    history.push(...(await store.readBySeq(0, 1000)));
    await pruneEverything(store);
    // The older one's index entry went; the newer one is kept.
    expect((await store.checkpoints()).map((c) => parseSignedCheckpoint(c.checkpoint))).toEqual([second]);

    // Across a restart (the kept entry is on disk, and a new service finds it).
    await integrity.close();
    await store.close();
    store = await AuditStore.open({ location, sequencer: () => 1 });
    onTestFinished(() => store.close());
    integrity = integrityOf(store, 1, 'a');
    await store.append([ev('e4', 4)]);
    const third = await integrity.checkpointNow();
    expectFollows(third, second);
    history.push(...(await store.readBySeq(0, 1000)));
    expectVerifies(history, 3);
  });

  it('continue the chain on a standby that became leader after its own retention deleted them', async () => {
    const dir = await tempDir();
    const leader = await openStore(join(dir, 'leader'), () => 1);
    const standby = await openStore(join(dir, 'standby'), () => 2);
    const integrity = integrityOf(leader, 1, 'a');
    await leader.append([ev('e1', 1), ev('e2', 2)]);
    const first = await integrity.checkpointNow();
    await leader.append([ev('e3', 3)]);
    const second = await integrity.checkpointNow();
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 1000), leader.termStarts());
    const history: VerifyRecord[] = await leader.readBySeq(0, 1000);
    expect(await standby.readBySeq(0, 1000)).toEqual(history);
    await pruneEverything(standby);
    expectFollows(second, first);

    // Failover: the standby orders in term 2 and signs with its own key.
    const successor = integrityOf(standby, 2, 'b');
    await standby.append([ev('e4', 4)]);
    const third = await successor.checkpointNow();
    expectFollows(third, second);
    history.push(...(await standby.readBySeq(0, 1000)));
    expectVerifies(history, 3);
  });
});

describe('checkpoints signed after the clock stepped back', () => {
  it('keep this clock\'s time, and retention deletes them in seq order whatever their times, so the index stays one chain', async () => {
    const store = await openStore(join(await tempDir(), 's'), () => 1);
    const start = Date.now();
    let clock = start + 3_600_000;
    const integrity = integrityOf(store, 1, 'a', () => clock);
    await store.append([ev('e1', start - 10)]);
    const ahead = await integrity.checkpointNow();
    // NTP steps the clock back an hour; two more checkpoints, dated by it.
    clock = start;
    await store.append([ev('e2', start - 5)]);
    const second = await integrity.checkpointNow();
    await store.append([ev('e3', start - 1)]);
    const third = await integrity.checkpointNow();
    expect([second?.timeMs, third?.timeMs]).toEqual([start, start]);
    const checkpointRecords = async () => (await store.readBySeq(0, 100)).filter((event) => event.action === 'integrity:Checkpoint').map((event) => event.seq);
    const all = await checkpointRecords();
    expect(all).toHaveLength(3);
    // Retention half an hour ahead: the later two are old enough, but the first is not, so they
    // stay with it (deleted first, the index listed the first beside the newest deleted one,
    // whose link names the one between: verify said "a checkpoint was removed or forged").
    await store.pruneBefore(start + 1_800_000, 3, async () => true);
    expect(await checkpointRecords()).toEqual(all);
    const listed = () => store.checkpoints().then((entries) => entries.map((entry) => parseSignedCheckpoint(entry.checkpoint)));
    const chainOf = (checkpoints: SignedCheckpoint[]) => checkpoints.forEach((checkpoint, i) => i > 0 && expectFollows(checkpoint, checkpoints[i - 1]));
    chainOf(await listed());
    expect(await listed()).toEqual([ahead, second, third]);
    // Past the first one's time all three go, in seq order: the first, then the two it held
    // back at the next run (a run reads by time, and had passed them); the index keeps the newest deleted.
    await store.pruneBefore(start + 2 * 3_600_000, 3, async () => true);
    expect(await checkpointRecords()).toEqual(all.slice(1));
    chainOf(await listed());
    await store.pruneBefore(start + 2 * 3_600_000, 3, async () => true);
    expect(await checkpointRecords()).toEqual([]);
    expect(await listed()).toEqual([third]);
  });
});
