import { finish, type RunResult } from './run-seed.js';
import { EPOCH_MS } from './scheduler.js';
import { SimCluster } from './sim-cluster.js';
import type { SimNode } from './sim-node.js';

/**
 * The two reproductions of lost acknowledged events, as deterministic scenarios. Each returns
 * the properties that failed (none when the cluster is correct).
 */
export interface Scenario {
  name: string;
  run(root?: string): Promise<RunResult>;
}

const STEP_LIMIT_MS = 60_000;

/** Sends one request and runs the simulation until the client has its answer. */
async function ask(cluster: SimCluster, node: SimNode, count: number, replicated: boolean): Promise<boolean> {
  let answer: boolean | undefined;
  void cluster.workload.send(node, cluster.workload.events(count), replicated).then((ok) => (answer = ok));
  await cluster.scheduler.runUntil(() => answer !== undefined, STEP_LIMIT_MS);
  cluster.note(`${count} events to ${node.name}${replicated ? ' with ack=replicated' : ''}: ${answer === true ? '200' : 'failed'}`);
  return answer === true;
}

async function until(cluster: SimCluster, what: string, predicate: () => boolean): Promise<void> {
  if (!(await cluster.scheduler.runUntil(predicate, STEP_LIMIT_MS))) throw new Error(`scenario step never happened: ${what}\n${cluster.diagnostics()}`);
  cluster.note(what);
}

function leads(node: SimNode): boolean {
  return node.state === 'up' && node.cluster?.isLeader() === true;
}

/**
 * The opening every scenario shares: a leader is elected and `count` events are stored on
 * every node with ack=replicated. Answers the leader (a) and the two others (b, c).
 */
async function leaderWithFirstEvents(cluster: SimCluster, count: number): Promise<{ a: SimNode; b: SimNode; c: SimNode }> {
  const what = count === 1 ? 'event' : 'events';
  await until(cluster, 'a leader is elected', () => cluster.leader() !== undefined);
  const a = cluster.leader() as SimNode;
  const [b, c] = cluster.nodes.filter((n) => n !== a) as [SimNode, SimNode];
  if (!(await ask(cluster, a, count, true))) throw new Error(`the first ${what} ${count === 1 ? 'was' : 'were'} not replicated`);
  await until(cluster, `every node holds the first ${what}`, () => cluster.nodes.every((n) => n.store?.position.lastSeq === count));
  return { a, b, c };
}

/** The opening of leaderWithFirstEvents (10 events), then both standbys paused while the leader takes 3,000 more alone. */
async function leaderAheadOfPausedStandbys(cluster: SimCluster): Promise<{ a: SimNode; b: SimNode; c: SimNode }> {
  const nodes = await leaderWithFirstEvents(cluster, 10);
  cluster.pause(nodes.b);
  cluster.pause(nodes.c);
  for (let i = 0; i < 30; i++) if (!(await ask(cluster, nodes.a, 100, false))) throw new Error(`${nodes.a.name} did not take 100 events`);
  return nodes;
}

async function withCluster(seed: number, run: (cluster: SimCluster) => Promise<RunResult>, root?: string): Promise<RunResult> {
  const cluster = await SimCluster.create({ seed, size: 3, ...(root ? { root } : {}) });
  try {
    return await run(cluster);
  } finally {
    await cluster.close();
  }
}

/**
 * A divergence inside the asker's log. A leads term 1; C is paused; A stores 20 events with
 * ack=replicated (B has them); A and B are paused; C resumes, takes 10 events, wins term 2
 * alone and orders them after its last entry; C is paused; A and B resume and elect term 3;
 * C resumes. C's term-2 entries sit where the others hold A's term-1 entries: C must notice,
 * put its 10 events back into its outbox and forward them, and end with the leader's log.
 */
export const divergentLogScenario: Scenario = {
  name: 'divergent log inside the asker’s log',
  run: (root) =>
    withCluster(
      1,
      async (cluster) => {
        const { a, b, c } = await leaderWithFirstEvents(cluster, 1);
        cluster.pause(c);
        // Past the long poll C had open: A answers it empty, and C (paused) asks nothing more,
        // so none of the next 20 events reaches C.
        await cluster.scheduler.runFor(1500);
        if (!(await ask(cluster, a, 20, true))) throw new Error(`${a.name} did not confirm 20 events on ${b.name}`);
        cluster.pause(a);
        cluster.pause(b);
        cluster.resume(c);
        if (!(await ask(cluster, c, 10, false))) throw new Error(`${c.name} did not take 10 events`);
        await until(cluster, `${c.name} leads and has ordered its 10 events`, () => leads(c) && c.store?.outboxCount === 0 && (c.store?.position.lastSeq ?? 0) >= 11);
        cluster.pause(c);
        cluster.resume(a);
        cluster.resume(b);
        await until(cluster, `${a.name} or ${b.name} leads a later term`, () => leads(a) || leads(b));
        cluster.resume(c);
        await cluster.heal();
        return finish(cluster, 3, 60_000);
      },
      root,
    ),
};

/**
 * ack=replicated on the word of an old leader. A writes 3,000 events while both standbys are
 * paused; A is paused; B is elected; A resumes with its longer, unreplicated log; B answers 5
 * ack=replicated writes; A is paused at once and B loses its disk. Each of the 5 must have been
 * on another node when B answered, and must survive.
 */
export const oldLeaderAckScenario: Scenario = {
  name: 'ack=replicated counted from an old leader’s longer log',
  run: (root) =>
    withCluster(
      2,
      async (cluster) => {
        const { a, b } = await leaderAheadOfPausedStandbys(cluster);
        cluster.pause(a);
        cluster.resume(b);
        await until(cluster, `${b.name} leads`, () => leads(b));
        cluster.resume(a);
        const firstReplicated = cluster.workload.acked.size;
        for (let i = 0; i < 5; i++) await ask(cluster, b, 1, true);
        cluster.pause(a);
        cluster.note(`wipe ${b.name}`);
        await b.wipe();
        const replicatedOnB = new Set([...cluster.workload.acked.values()].slice(firstReplicated).filter((x) => x.ack === 'replicated' && x.node === b.name).map((x) => x.eventId));
        await cluster.heal();
        // A disk was lost: only what ack=replicated promised must survive it.
        return finish(cluster, 3, 60_000, (acked) => replicatedOnB.has(acked.eventId));
      },
      root,
    ),
};

/**
 * One term number given to two leaders. A leads term 1 (everyone knows it); C crashes and A is
 * paused; B wins term 2 alone and orders 10 events after seq 10; B crashes; the coordinator
 * restarts empty, so no node that is running knows term 2; A resumes and C restarts, and one
 * of them wins term 2 again and orders 5 events after seq 10 too; B restarts. B's log agrees
 * with the leader's on every term boundary, yet holds other entries under term 2: it must
 * notice (the chain hashes differ), put its 10 events back into its outbox, and converge.
 */
export const reusedTermScenario: Scenario = {
  name: 'a term number handed out twice after the coordinator lost its data',
  run: (root) =>
    withCluster(
      11,
      async (cluster) => {
        const { a, b, c } = await leaderWithFirstEvents(cluster, 10);
        await cluster.crash(c);
        cluster.pause(a);
        await until(cluster, `${b.name} leads`, () => leads(b));
        if (!(await ask(cluster, b, 10, false))) throw new Error(`${b.name} did not take 10 events`);
        await until(cluster, `${b.name} has ordered its 10 events`, () => (b.store?.position.lastSeq ?? 0) >= 20);
        const reused = b.cluster?.elector.leadingTerm;
        await cluster.crash(b);
        cluster.note('coordinator down');
        cluster.coordinator.down();
        await cluster.scheduler.runFor(2000);
        cluster.note('coordinator up empty');
        cluster.coordinator.restart(false);
        cluster.resume(a);
        await cluster.restart(c);
        await until(cluster, `${a.name} or ${c.name} leads`, () => leads(a) || leads(c));
        const winner = leads(a) ? a : c;
        cluster.note(`${winner.name} leads term ${winner.cluster?.elector.leadingTerm}; ${b.name} led term ${reused}`);
        // The point of the scenario: without a reused term it proves nothing.
        if (winner.cluster?.elector.leadingTerm !== reused) throw new Error(`the term was not handed out twice (${winner.name} leads term ${winner.cluster?.elector.leadingTerm}, ${b.name} led ${reused})`);
        if (!(await ask(cluster, winner, 5, false))) throw new Error(`${winner.name} did not take 5 events`);
        await until(cluster, `${winner.name} has ordered its 5 events`, () => (winner.store?.position.lastSeq ?? 0) >= 15);
        await cluster.restart(b);
        await cluster.heal();
        return finish(cluster, 3, 60_000);
      },
      root,
    ),
};

/**
 * A node paused through a whole coordinator outage. A leads term 1; C is paused (it knows term
 * 1 only); A is paused until B wins term 2, then resumes and learns term 2; B orders 10 events.
 * The coordinator goes down long enough for B's lease to run out, and comes back empty at the
 * moment C resumes. A and B are running and know term 2, so the next term must be 3: C, whose
 * last round that reached the coordinator was before its pause, must not take a term before
 * the running nodes have had a lease TTL of rounds to put the term counter back.
 */
export const pausedThroughOutageScenario: Scenario = {
  name: 'a node paused through a whole coordinator outage campaigns no sooner than the others',
  run: (root) =>
    withCluster(
      12,
      async (cluster) => {
        const { a, b, c } = await leaderWithFirstEvents(cluster, 10);
        cluster.pause(c);
        cluster.pause(a);
        await until(cluster, `${b.name} leads`, () => leads(b));
        const second = b.cluster?.elector.leadingTerm as number;
        cluster.resume(a);
        if (!(await ask(cluster, b, 10, true))) throw new Error(`${b.name} did not confirm 10 events`);
        await until(cluster, `${a.name} knows term ${second}`, () => (a.cluster?.elector.knownTerm ?? 0) >= second);
        cluster.note('coordinator down');
        cluster.coordinator.down();
        await cluster.scheduler.runFor(5000);
        cluster.note('coordinator up empty');
        cluster.coordinator.restart(false);
        cluster.resume(c);
        await until(cluster, 'a node leads again', () => cluster.nodes.some(leads));
        const winner = cluster.nodes.find(leads) as SimNode;
        const term = winner.cluster?.elector.leadingTerm as number;
        cluster.note(`${winner.name} leads term ${term}; ${b.name} led term ${second}`);
        if (term <= second) throw new Error(`${winner.name} took term ${term}, which ${b.name} already led (term ${second}): a term was handed out twice`);
        await cluster.heal();
        return finish(cluster, 3, 60_000);
      },
      root,
    ),
};

/** Retention on one node: deletes its entries up to `throughSeq` (the simulator has no tier; a real node deletes only tiered ones). */
async function prune(cluster: SimCluster, node: SimNode, throughSeq: number): Promise<void> {
  const store = node.store;
  if (store === undefined) throw new Error(`${node.name} is not running`);
  const { deleted } = await store.pruneBefore(EPOCH_MS + cluster.nowMs + 60_000, 1000, async () => true, throughSeq);
  cluster.note(`${node.name}'s retention deletes seqs 1..${throughSeq} (${deleted} entries)`);
}

/**
 * Standbys whose logs diverged inside, or right after, a range their retention deleted (the
 * reviewer's s10, with real processes and an Iceberg tier). A leads term 1; C is paused; A
 * stores 20 events with ack=replicated (B has them). A's retention deletes its whole log
 * (seqs 1..30) and B's its first 10 entries. A and B are paused; C resumes, wins term 2 and
 * orders 10 events after seq 10, and its retention deletes its first 10 entries (then in no
 * log: in the tier, on a real cluster). A and B resume: both find their logs diverged after
 * seq 10. B's hash at seq 10 is kept (its deleted range ends there): it moves its 20 entries
 * to its outbox, to be ordered again, and takes C's. A's is not (its range goes on to 30): it
 * must cut back to seq 0 and take C's answer from there, which skips the 10 C deleted with the
 * hash at their end. Cut at seq 11, A refused every entry C sent, for good.
 */
export const divergedInPrunedRangeScenario: Scenario = {
  name: 'standbys whose logs diverged inside or right after a range their retention deleted',
  run: (root) =>
    withCluster(
      13,
      async (cluster) => {
        const { a, b, c } = await leaderWithFirstEvents(cluster, 10);
        cluster.pause(c);
        await cluster.scheduler.runFor(1500);
        if (!(await ask(cluster, a, 20, true))) throw new Error(`${a.name} did not confirm 20 events on ${b.name}`);
        await until(cluster, `${b.name} holds the 20 events`, () => b.store?.position.lastSeq === 30);
        // Deleted everywhere by the end (in the tier, on a real cluster): the one thing that may be in no log.
        const deletedEverywhere = new Set((await (a.store as NonNullable<SimNode['store']>).readBySeq(0, 10)).map((e) => e.eventId));
        await prune(cluster, a, 30);
        await prune(cluster, b, 10);
        cluster.pause(a);
        cluster.pause(b);
        cluster.resume(c);
        if (!(await ask(cluster, c, 10, false))) throw new Error(`${c.name} did not take 10 events`);
        await until(cluster, `${c.name} leads and has ordered its 10 events`, () => leads(c) && c.store?.outboxCount === 0 && (c.store?.position.lastSeq ?? 0) >= 20);
        await prune(cluster, c, 10);
        cluster.resume(a);
        cluster.resume(b);
        await cluster.heal();
        return finish(cluster, 3, 60_000, (acked) => !deletedEverywhere.has(acked.eventId));
      },
      root,
    ),
};

/**
 * Metadata behind a fully pruned log. B is paused while A and C take 300 events; A writes a
 * metadata value and its retention deletes every entry it holds. B resumes: A holds nothing
 * after B's end, so no pull can bring B to A's end — B must take the metadata all the same (it
 * holds all A holds), else a standby behind a pruned log led with the defaults. A then takes an
 * event, and B catches up across the deleted range.
 */
export const metaBehindPrunedLogScenario: Scenario = {
  name: 'a standby behind a log its leader’s retention deleted takes the leader’s metadata',
  run: (root) =>
    withCluster(
      6,
      async (cluster) => {
        const { a, b } = await leaderWithFirstEvents(cluster, 10);
        cluster.pause(b);
        for (let i = 0; i < 3; i++) if (!(await ask(cluster, a, 100, false))) throw new Error(`${a.name} did not take 100 events`);
        await a.store?.putMeta({ simProbe: 'written before the log was pruned' });
        const pruned = await a.store?.pruneBefore(EPOCH_MS + 365 * 86_400_000, 1000, async () => true);
        cluster.note(`${a.name}'s retention deleted ${pruned?.deleted ?? 0} entries`);
        cluster.resume(b);
        const violations: string[] = [];
        const reached = await cluster.scheduler.runUntil(() => b.store?.meta('simProbe') !== undefined, 10_000);
        if (!reached) violations.push(`${b.name}, behind a log its leader deleted, did not take the leader's metadata within 10 virtual s`);
        cluster.note(`${b.name} took the metadata: ${reached}`);
        if (!(await ask(cluster, a, 1, false))) throw new Error(`${a.name} did not take an event`);
        await until(cluster, `${b.name} holds ${a.name}'s log to its end`, () => b.store?.position.lastSeq === a.store?.position.lastSeq);
        // Every node's retention then deletes all but that last event, so the logs compare equal.
        const last = await a.store?.getBySeq(a.store.position.lastSeq);
        if (last === undefined) throw new Error(`${a.name} lacks the event it just took`);
        for (const node of cluster.nodes) await node.store?.pruneBefore(last.timestamp, 1000, async () => true);
        await cluster.heal();
        // Retention deleted the others by design: the last event must survive everywhere.
        const result = await finish(cluster, 3, 60_000, (acked) => acked.eventId === last.eventId);
        result.violations.push(...violations);
        return result;
      },
      root,
    ),
};

/**
 * A settings change a successor took with the leader's metadata but not its record. A writes a
 * settings record (with the metadata naming it) after 3,000 events while B is paused; B resumes
 * and its first pull brings the metadata and 2,000 entries; A crashes. B leads with the change in
 * force and makes a change of its own; A restarts, its record is cut and forwarded: B must store
 * it as the record of a change made on its line (`audit:UpdateSettings`), not as one lost.
 */
export const settingsTakenWithoutRecordScenario: Scenario = {
  name: 'a settings record comes back to a leader that runs its change: stored as in force',
  run: (root) =>
    withCluster(
      7,
      async (cluster) => {
        const { a, b, c } = await leaderAheadOfPausedStandbys(cluster);
        const record = { ...cluster.workload.events(1)[0]!, eventId: 'settings-change', source: 'auditlake', action: 'audit:UpdateSettings', resource: 'audit.settings', details: 'audit.read.enabled: true → false' };
        await a.store?.append([record], { meta: [{ name: 'settingsRecord', value: record.eventId }, { name: 'settingsRecords', value: [record.eventId] }], sequencer: () => a.cluster?.elector.sequencer() ?? 0 });
        cluster.resume(b);
        await until(cluster, `${b.name} holds the metadata naming the record, not the record`, () => b.store?.meta('settingsRecord') === record.eventId);
        const held = (await b.store?.seqsOfEventIds([record.eventId]))?.[0];
        if (held !== undefined) throw new Error(`${b.name} already holds the record: the scenario needs it not to`);
        await cluster.crash(a);
        cluster.resume(c);
        await until(cluster, `${b.name} or ${c.name} leads`, () => leads(b) || leads(c));
        // The new leader makes a change of its own before A comes back: A's record was still made
        // on this line of leaders (superseded, not lost).
        const successor = leads(b) ? b : c;
        const second = { ...cluster.workload.events(1)[0]!, eventId: 'settings-change-2', source: 'auditlake', action: 'audit:UpdateSettings', resource: 'audit.settings', details: 'audit.read.enabled: false → true' };
        const history = successor.store?.meta<string[]>('settingsRecords') ?? [];
        await successor.store?.append([second], { meta: [{ name: 'settingsRecord', value: second.eventId }, { name: 'settingsRecords', value: [...history, second.eventId] }], sequencer: () => successor.cluster?.elector.sequencer() ?? 0 });
        await cluster.restart(a);
        await cluster.heal();
        const result = await finish(cluster, 3, 60_000);
        const leader = cluster.leader();
        const stored = leader === undefined ? undefined : await leader.store?.getByEventId(record.eventId);
        const inForce = leader?.store?.meta<string[]>('settingsRecords')?.includes(record.eventId) === true;
        cluster.note(`the record on the leader: ${stored?.action ?? 'absent'}; its change in force there: ${inForce}`);
        if (inForce && stored?.action !== 'audit:UpdateSettings') result.violations.push(`the leader runs the change of ${record.eventId} but stores its record as ${stored?.action ?? 'nothing'}`);
        if (!inForce && stored !== undefined && stored.action !== 'audit:UpdateSettingsLost') result.violations.push(`the leader does not run the change of ${record.eventId} but stores its record as ${stored.action}`);
        return result;
      },
      root,
    ),
};

/**
 * Erased ids behind a deleted range, for a new leader that owes them (the cluster review's case,
 * with real processes in test/cluster-erased-ids-sync.test.ts, goes through a standby's pulls).
 * B is paused; A stores an event and an erasure of it; A's retention deletes both. A takes one
 * more event; A's answer to B's pull (the entries after B's end, skipping the deleted range)
 * reaches B, and A crashes before B pulls again, so B owes itself the erased ids. B and C
 * resume: B, whose log is the longer, leads.
 * - `peerHolds`: C applied the erasure (then its retention deleted it too) and was paused after:
 *   B must take the erased ids from C, whose log is behind its own, before it orders anything.
 * - otherwise C was paused before the erasure (its log ends before the deleted range): it lacks
 *   the ids, so it must give none, and B leads owing them (a re-send would be stored; the node
 *   says so) while C, following B, owes them too and takes no incomplete set from B. A comes
 *   back, as a standby holding them all: B takes them from it within its retry interval, C then
 *   from B.
 * Either way the erased event re-sent to B with a new time is then not stored, and every node
 * holds the id as erased.
 */
function erasedIdsBehindPrunedRange(peerHolds: boolean): Scenario {
  return {
    name: peerHolds ? 'a new leader owed erased ids takes them from a peer whose log is behind' : 'a new leader owed erased ids that no live peer holds all of takes them once a node holding them comes back',
    run: (root) =>
      withCluster(
        8,
        async (cluster) => {
          const { a, b, c } = await leaderWithFirstEvents(cluster, 10);
          const [aStore, bStore, cStore] = [a.store, b.store, c.store];
          if (aStore === undefined || bStore === undefined || cStore === undefined) throw new Error('a node is not running');
          cluster.pause(b);
          if (!peerHolds) cluster.pause(c);
          const sequencer = () => a.cluster?.elector.sequencer() ?? 0;
          const erased = { ...cluster.workload.events(1)[0]!, eventId: 'erased-event', userId: 'erased-user' };
          const [stored] = (await aStore.append([erased], { sequencer })).stored;
          if (stored === undefined) throw new Error(`${a.name} did not store the event to erase`);
          const erasure = { ...cluster.workload.events(1)[0]!, eventId: 'erasure', userId: 'admin', source: 'auditlake', action: 'audit:EraseFields', resource: 'events:1', tables: [], details: JSON.stringify({ v: 1, fields: ['userId'], records: [{ eventId: erased.eventId, seq: stored.seq }] }) };
          await aStore.append([erasure], { sequencer });
          const erasureSeq = aStore.position.lastSeq;
          if (peerHolds) {
            await until(cluster, `${c.name} holds the erasure`, () => cStore.position.lastSeq === erasureSeq);
            cluster.pause(c);
            await prune(cluster, c, erasureSeq);
          }
          await prune(cluster, a, erasureSeq);
          await aStore.append(cluster.workload.events(1), { sequencer });
          // A's answer to B's pull arrives; A crashes before the next.
          const after = bStore.position.lastSeq;
          const entries = await aStore.readEncodedBySeq(after, 100);
          await bStore.applyReplicated(entries, aStore.termStarts(after), await aStore.skippedByRetention(after, entries));
          cluster.note(`${b.name} applied ${entries.length} entries after seq ${after}, skipping the deleted range; erased ids owed: ${JSON.stringify(bStore.erasedIdsOwed)}`);
          if (bStore.erasedIdsOwed === undefined) throw new Error(`${b.name} skipped the erasure record but owes no erased ids`);
          await cluster.crash(a);
          cluster.resume(b);
          cluster.resume(c);
          const violations: string[] = [];
          await until(cluster, `${b.name} or ${c.name} leads`, () => leads(b) || leads(c));
          if (!leads(b)) violations.push(`${c.name}, whose log ends before ${b.name}'s, was elected: the scenario needs ${b.name} to lead`);
          if (peerHolds) {
            if (bStore.erasedIdsOwed !== undefined) violations.push(`${b.name} leads still owing erased ids: ${JSON.stringify(bStore.erasedIdsOwed)}`);
          } else {
            // No live node holds them all: B must still owe them, and so must C once it follows B.
            await until(cluster, `${c.name} holds ${b.name}'s log to its end`, () => cStore.position.lastSeq === bStore.position.lastSeq);
            await cluster.scheduler.runFor(2000);
            if (bStore.erasedIdsOwed === undefined) violations.push(`${b.name} took an incomplete set of erased ids from ${c.name}, which never held the erasure`);
            if (cStore.erasedIdsOwed === undefined) violations.push(`${c.name} took an incomplete set of erased ids from ${b.name}, which owes them itself`);
            await cluster.restart(a);
            const taken = await cluster.scheduler.runUntil(() => bStore.erasedIdsOwed === undefined && cStore.erasedIdsOwed === undefined, 30_000);
            cluster.note(`${a.name} is back; ${b.name} and ${c.name} took the erased ids: ${taken}`);
            if (!taken) violations.push(`${a.name}, holding every erased id, came back, and ${b.name} or ${c.name} still owes them 30 virtual s later`);
          }
          const resent = { ...erased, timestamp: erased.timestamp + 3_600_000 };
          const again = await bStore.append([resent], { sequencer: () => b.cluster?.elector.sequencer() ?? 0 });
          cluster.note(`the erased event re-sent to ${b.name} with a new time: ${again.stored.length} stored`);
          if (again.stored.length > 0) violations.push(`${b.name} stored the erased event ${erased.eventId} again, with its values`);
          if (peerHolds) await cluster.restart(a);
          await cluster.heal();
          // Every node's retention then deletes the range only B kept, so the logs compare equal.
          for (const node of cluster.nodes) await node.store?.pruneBefore(EPOCH_MS + cluster.nowMs + 60_000, 1000, async () => true, erasureSeq);
          const keptFromMs = cluster.nowMs;
          const leader = cluster.leader();
          if (leader === undefined || !(await ask(cluster, leader, 5, true))) throw new Error('the healed cluster did not take 5 events');
          const result = await finish(cluster, 3, 60_000, (acked) => acked.atMs >= keptFromMs);
          for (const node of cluster.nodes) {
            const page = await node.store?.erasedIdsPage('');
            if (page?.ids.some(([eventId]) => eventId === erased.eventId) !== true) violations.push(`${node.name} does not hold ${erased.eventId} as erased`);
          }
          result.violations.push(...violations);
          return result;
        },
        root,
      ),
  };
}

export const erasedIdsFromBehindPeerScenario = erasedIdsBehindPrunedRange(true);
export const erasedIdsNoPeerHoldsScenario = erasedIdsBehindPrunedRange(false);

/**
 * A leader cut off from both standbys while all three still reach the coordinator. A leads;
 * the links A–B and A–C are cut. A takes 5 events (acknowledged, only A holds them), B and C
 * take 5 each into their outboxes (they cannot forward them). A keeps renewing its lease, so
 * before it stepped down for its standbys' silence no one else ever led, and B's and C's events
 * waited for as long as the cut lasted. Now A steps down after CUT_OFF_TTLS and yields; B or C
 * leads and orders the events sent to both; once the links are mended A's 5 events are moved to
 * its outbox and forwarded: none is lost.
 */
export const leaderCutOffScenario: Scenario = {
  name: 'a leader cut off from its standbys (not the coordinator) steps down, and one of them leads',
  run: (root) =>
    withCluster(
      21,
      async (cluster) => {
        const { a, b, c } = await leaderWithFirstEvents(cluster, 10);
        cluster.network.cutLink(a.name, b.name);
        cluster.network.cutLink(a.name, c.name);
        cluster.note(`links ${a.name}–${b.name} and ${a.name}–${c.name} cut`);
        if (!(await ask(cluster, a, 5, false))) throw new Error(`${a.name} did not take 5 events`);
        if (!(await ask(cluster, b, 5, false))) throw new Error(`${b.name} did not take 5 events`);
        if (!(await ask(cluster, c, 5, false))) throw new Error(`${c.name} did not take 5 events`);
        await until(cluster, `${b.name} or ${c.name} leads`, () => leads(b) || leads(c));
        await until(cluster, `the events sent to ${b.name} and ${c.name} are ordered`, () => b.store?.outboxCount === 0 && c.store?.outboxCount === 0 && b.store.position.lastSeq >= 20 && b.store.position.lastSeq === c.store.position.lastSeq);
        if (leads(a)) throw new Error(`${a.name} leads again while cut off`);
        await cluster.heal();
        return finish(cluster, 3, 60_000);
      },
      root,
    ),
};

export const SCENARIOS: readonly Scenario[] = [divergentLogScenario, oldLeaderAckScenario, reusedTermScenario, pausedThroughOutageScenario, divergedInPrunedRangeScenario, metaBehindPrunedLogScenario, settingsTakenWithoutRecordScenario, erasedIdsFromBehindPeerScenario, erasedIdsNoPeerHoldsScenario, leaderCutOffScenario];
