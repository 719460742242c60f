// Goal: a leader says which standby receives entries and does not apply them. In a rolling
// upgrade, a standby of a version before the leader's record format refused every entry of a new
// leader ("its record_hash does not match its content"), asked for them again for good, and the
// leader's tiering waited for it with nothing saying why (review). The leader now counts a
// standby that asks again from a seq it was already sent entries past, warns once, and names it
// in the hold tiering shows; a standby that applies and moves on, or that long-polls an idle
// log, is never counted.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditEvent } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { describe, expect, it, onTestFinished } from 'vitest';
import { InMemoryCoordinator, InMemoryCoordinatorState } from '../src/index.js';
import { LeaderElector } from '../src/leader-elector.js';
import { LogSource } from '../src/log-source.js';
import { MetaHash } from '../src/meta-hash.js';
import type { PullRequest } from '../src/protocol.js';
import { NOT_APPLYING_PULLS, ReplicationTracker } from '../src/replication-tracker.js';
import { ManualClock } from './manual-clock.js';

async function openStore(): Promise<AuditStore> {
  const dir = await mkdtemp(join(tmpdir(), 'not-applying-'));
  const store = await AuditStore.open({ location: dir });
  onTestFinished(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return store;
}

function ev(eventId: string): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: 'SELECT 1', details: '', timestamp: 1_700_000_000_000 };
}

/** A leading elector over an in-memory coordinator, a leader store holding `events`, and its log source. */
async function leaderWith(events: number) {
  const clock = new ManualClock();
  const state = new InMemoryCoordinatorState({ clock, newToken: () => 't' });
  const store = await openStore();
  await store.append(Array.from({ length: events }, (_, i) => ev(`e${i + 1}`)));
  const elector = new LeaderElector({
    coordinator: new InMemoryCoordinator(state, { nodeId: 'leader', leaseTtlMs: 1000 }),
    clock,
    nodeId: 'leader',
    leaseTtlMs: 1000,
    knownTerm: 0,
    logEnd: () => store.position,
    prepareLeadership: async () => undefined,
    persistTerm: async () => undefined,
    onTick: async () => undefined,
    instance: 'dir-leader',
    log: { info: () => undefined, warn: () => undefined },
  });
  onTestFinished(() => elector.close());
  for (let i = 0; i < 10 && !elector.isLeader(); i++) {
    await elector.tick();
    clock.advance(150);
  }
  expect(elector.isLeader()).toBe(true);
  const tracker = new ReplicationTracker(clock);
  const warnings: Array<{ standby: string; seq: number }> = [];
  const source = new LogSource({
    store,
    elector,
    tracker,
    metaHash: new MetaHash(store),
    nodeId: 'leader',
    clock,
    onMismatch: () => undefined,
    onNotApplying: (standby, seq) => void warnings.push({ standby, seq }),
  });
  const term = elector.leadingTerm as number;
  const request = (standby: AuditStore, nodeId: string): PullRequest => ({
    nodeId,
    after: standby.position.lastSeq,
    lastTerm: standby.position.lastTerm,
    term,
    limit: 2,
    waitMs: 0,
    metaHash: '',
    catchUp: false,
  });
  return { store, source, tracker, warnings, request };
}

describe('a standby that does not apply what it is sent', () => {
  it('is warned of once and named in the hold once it asked again from the same seq NOT_APPLYING_PULLS times; it is cleared once it moves on', async () => {
    const { source, tracker, warnings, request } = await leaderWith(6);
    const standby = await openStore();
    // A real refusal: the entry at seq 3 reaches the standby with a changed value, as a record
    // of a format it cannot read does; its chain check refuses the whole batch.
    const damaged = (entries: Uint8Array[]) => entries.map((bytes) => Buffer.from(Buffer.from(bytes).toString('utf8').replace('"userId":"u"', '"userId":"v"')));
    const refusals: string[] = [];
    const pullAndApply = async (damage: boolean) => {
      const answer = await source.pull(request(standby, 's1'));
      try {
        await standby.applyReplicated(damage && standby.position.lastSeq === 2 ? damaged(answer.entries) : answer.entries, answer.termStarts ?? []);
      } catch (err) {
        refusals.push((err as Error).message);
      }
    };
    await pullAndApply(true);
    await pullAndApply(true);
    expect(standby.position.lastSeq).toBe(2);
    for (let i = 0; i < NOT_APPLYING_PULLS + 3; i++) await pullAndApply(true);
    expect(refusals.length).toBe(NOT_APPLYING_PULLS + 4);
    expect(refusals[0]).toMatch(/record_hash does not match its content/);
    expect(warnings).toEqual([{ standby: 's1', seq: 2 }]);
    expect(tracker.notApplying()).toEqual(['s1']);
    // Sent undamaged, it applies them and moves on: no longer counted.
    await pullAndApply(false);
    await pullAndApply(false);
    expect(standby.position.lastSeq).toBe(6);
    expect(tracker.notApplying()).toEqual([]);
  });

  it('never counts a standby that applies each answer, nor one that long-polls a log with nothing new', async () => {
    const { source, tracker, warnings, request } = await leaderWith(5);
    const standby = await openStore();
    for (let i = 0; i < 3 + NOT_APPLYING_PULLS * 2; i++) {
      const answer = await source.pull(request(standby, 's2'));
      if (answer.entries.length > 0) await standby.applyReplicated(answer.entries, answer.termStarts ?? []);
    }
    expect(standby.position.lastSeq).toBe(5);
    expect(tracker.notApplying()).toEqual([]);
    expect(warnings).toEqual([]);
    expect(tracker.progress.find((p) => p.nodeId === 's2')?.repeatedPulls).toBe(0);
  });
});
