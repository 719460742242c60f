// A leader for tests of what it serves: an elector leading over an in-memory coordinator, a
// real store holding events, and its log source; and real stores for standbys.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditEvent } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { expect, onTestFinished } from 'vitest';
import { InMemoryCoordinatorState } from '../src/index.js';
import type { LeaderElector } from '../src/leader-elector.js';
import { LogSource } from '../src/log-source.js';
import { MetaHash } from '../src/meta-hash.js';
import type { PeerTransport, PullRequest } from '../src/protocol.js';
import { ReplicationFollower } from '../src/replication-follower.js';
import { ReplicationTracker } from '../src/replication-tracker.js';
import { ManualClock } from './manual-clock.js';
import { testElector } from './test-elector.js';

export async function openStore(): Promise<AuditStore> {
  const dir = await mkdtemp(join(tmpdir(), 'cluster-leader-log-'));
  const store = await AuditStore.open({ location: dir });
  onTestFinished(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return store;
}

export function ev(eventId: string, query = 'SELECT 1'): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query, details: '', timestamp: 1_700_000_000_000 };
}

/** An elector for `nodeId` over the in-memory coordinator `state`, its log `store`'s; closed when the test ends. */
export function electorOf(state: InMemoryCoordinatorState, clock: ManualClock, nodeId: string, store: AuditStore): LeaderElector {
  const elector = testElector(state, clock, nodeId, { logEnd: () => store.position, instance: `dir-${nodeId}` });
  onTestFinished(() => elector.close());
  return elector;
}

/** A leading elector over an in-memory coordinator, a leader store holding `events`, and its log source. */
export async function leaderWith(events: number, query?: string) {
  const clock = new ManualClock();
  const state = new InMemoryCoordinatorState({ clock, newToken: () => 't' });
  const store = await openStore();
  await store.append(Array.from({ length: events }, (_, i) => ev(`e${i + 1}`, query)));
  const elector = electorOf(state, clock, 'leader', store);
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
  return { store, source, tracker, warnings, request, clock, state, elector };
}


/**
 * A standby's replication follower over `transport`, started once both electors agree that
 * `leaderElector`'s node leads; closed when the test ends. The caller moves `clock` on.
 */
export async function startFollower(options: { store: AuditStore; elector: LeaderElector; leaderElector: LeaderElector; transport: PeerTransport; clock: ManualClock; nodeId: string }): Promise<ReplicationFollower> {
  const { store, elector, leaderElector, transport, clock, nodeId } = options;
  const follower = new ReplicationFollower({
    store,
    elector,
    transport,
    clock,
    metaHash: new MetaHash(store),
    nodeId,
    pullWaitMs: 0,
    onMetaApplied: () => undefined,
    onDiverted: () => undefined,
    log: { info: () => undefined, warn: () => undefined },
  });
  onTestFinished(() => follower.close());
  for (let i = 0; i < 5; i++) {
    await leaderElector.tick();
    await elector.tick();
  }
  expect(elector.leader?.nodeId).toBe('leader');
  follower.start();
  return follower;
}
