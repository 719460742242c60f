import { randomUUID } from 'node:crypto';
import { AuditError, AuditErrorCode, isAuditError, type EncodedEvent } from '@auditlake/model';
import { appendForwarded, type AppendResult, type AuditStore, type EventIdConflict } from '@auditlake/store';
import type { Clock } from './clock.js';
import type { ClusterToken } from './cluster-token.js';
import type { Coordinator, MemberInfo } from './coordinator.js';
import { CUT_OFF_TTLS, LeaderElector, type ClusterLog, type LeaderView, type NodeRole } from './leader-elector.js';
import { LogSource } from './log-source.js';
import { MetaHash } from './meta-hash.js';
import { OutboxForwarder } from './outbox-forwarder.js';
import { ErasedIdsCatchUp, ERASED_IDS_RETRY_MS } from './erased-ids-catch-up.js';
import { markTimeAssigned, newIdsOf, parseForwardedEvent, skippedOf, type ForwardRequest, type ForwardResponse, type PeerTransport, type PullRequest, type PullResponse } from './protocol.js';
import { pullTimeoutMs, ReplicationFollower } from './replication-follower.js';
import { ReplicationTracker, type StandbyProgress } from './replication-tracker.js';

/** Where the leader's standbys hold its log up to: the lowest seq, and which standbys are there. */
export interface HeldByStandbys {
  throughSeq: number;
  nodes: string[];
  /**
   * Those of `nodes` that keep asking from `throughSeq` after being sent the entries past it:
   * they do not apply them (ReplicationTracker.notApplying), so the hold lasts until someone
   * looks at them. Absent when none.
   */
  notApplying?: string[];
}

/** What a cluster node is built from: its store and its ports to the world. */
export interface ClusterNodeOptions {
  store: AuditStore;
  /** Leadership and membership (Redis in production). Owned by the caller, who closes it. */
  coordinator: Coordinator;
  transport: PeerTransport;
  clock: Clock;
  clusterToken: ClusterToken;
  nodeId: string;
  leaseTtlMs: number;
  forwardMaxAttempts: number;
  forwardQueueCapacity: number;
  log: ClusterLog;
  hooks: ClusterHooks;
}

/** What the cluster reports to the node (metrics). */
export interface ClusterHooks {
  onForwarded(count: number): void;
  onForwardAttemptsExhausted(): void;
  onOutboxOverCapacity(): void;
  /** This node cut its log where it diverged from the leader's and moved `count` entries to its outbox. */
  onDiverted(count: number): void;
  /** As leader, this node answered a standby whose log diverged from its own. */
  onDivergenceFound(): void;
  /**
   * As leader, this node refused events another node forwarded (or its own outbox held) because
   * their eventId holds an event with other content; `receivedBy` is the node a client sent them
   * to. Called once per forward that had any, and awaited before the forward is answered: the
   * node records them (a self-audit event). It must not throw.
   */
  onConflicts(conflicts: readonly EventIdConflict[], receivedBy: string): Promise<void>;
  /**
   * Another running process holds this node's id in the coordinator (AUDIT_NODE_ID_IN_USE),
   * found after the start: this process must take no part at all (it would pull and confirm
   * events under the other's id), so the node stops. Called once.
   */
  onNodeIdInUse?(err: AuditError): void;
}

/** One node as another sees it (GET /admin/cluster). */
export interface ClusterMemberStatus {
  nodeId: string;
  url: string;
  /** `unreachable`: not heard from within a lease TTL (crashed, paused, cut off). */
  role: 'leader' | 'standby' | 'unreachable';
  /** Where its log ends, as last heard. */
  appliedSeq: number;
  /** How long ago the oldest entry it lacks was ingested (0 when it lacks none); null when unreachable. */
  lagMs: number | null;
  /** Milliseconds since it was last heard from (0 for the node answering). */
  lastHeardMs: number;
}

export interface ClusterNodeStatus {
  nodeId: string;
  role: NodeRole;
  term: number;
  leader: { nodeId: string; url: string } | null;
  nodes: ClusterMemberStatus[];
  /**
   * True while this node still takes its leader's erased ids, page by page: its log skipped
   * seqs the leader's retention deleted, and erasure records among them (erased-ids-sync.ts).
   */
  erasedIdsOwed: boolean;
  /** The highest seq through which this node took such a complete set (0: never needed one). */
  erasedIdsTakenThrough: number;
}

/** Where received events went: ordered into the log (this node leads) or into the outbox. */
export type Received = { path: 'log'; result: AppendResult } | { path: 'outbox' };

const LOCAL_TERM = 'knownTerm';
/** How long a standby's pull waits at the leader for new entries. */
const PULL_WAIT_MS = 1000;
/** This data dir's member instance (MemberInfo.instance), made at its first cluster start. */
const LOCAL_INSTANCE = 'memberInstance';

/**
 * One node's part in the cluster: leadership through the coordinator, answering pulls and
 * forwards as leader, replicating and forwarding as standby. Built from its ports (store,
 * coordinator, transport, clock), started once it knows its URL; `close()` stops in reverse.
 */
export class ClusterNode {
  readonly #options: ClusterNodeOptions;
  readonly #clock: Clock;
  /** Per forwarding node, the end of its forward being handled (receiveForward). */
  readonly #forwardsInFlight = new Map<string, Promise<void>>();
  readonly elector: LeaderElector;
  readonly tracker: ReplicationTracker;
  readonly #logSource: LogSource;
  readonly #follower: ReplicationFollower;
  readonly #erasedIds: ErasedIdsCatchUp;
  readonly #forwarder: OutboxForwarder;
  readonly #unsubscribeCut: () => void;
  #started = false;
  readonly #metaListeners = new Set<(meta: Record<string, unknown>) => void>();

  private constructor(options: ClusterNodeOptions, knownTerm: number, instance: string) {
    this.#options = options;
    this.#clock = options.clock;
    const { store, nodeId, log, clock } = options;
    this.tracker = new ReplicationTracker(clock);
    this.elector = new LeaderElector({
      coordinator: options.coordinator,
      clock,
      nodeId,
      leaseTtlMs: options.leaseTtlMs,
      knownTerm,
      logEnd: () => store.position,
      prepareLeadership: (term, stillLeader) => this.#prepareLeadership(term, stillLeader),
      persistTerm: (term) => store.putLocal(LOCAL_TERM, term),
      instance,
      onNodeIdInUse: (err) => options.hooks.onNodeIdInUse?.(err),
      lastPullMs: (peerId) => this.tracker.lastPullMs(peerId),
      // Four pull timeouts: a pull's silence also holds its wait at the leader and the retry
      // pauses, so three lost in a row from each standby stay below it (review).
      cutOffMs: Math.max(CUT_OFF_TTLS * options.leaseTtlMs, 4 * pullTimeoutMs(PULL_WAIT_MS)),
      onTick: async () => {
        await options.clusterToken.refresh();
        const term = this.elector.leadingTerm;
        if (term !== undefined) this.#erasedIds.retry(this.#peers(), term, () => this.elector.leadingTerm === term);
      },
      log,
    });
    this.#erasedIds = new ErasedIdsCatchUp({
      store,
      transport: options.transport,
      clock,
      nodeId,
      timeoutMs: Math.max(500, options.leaseTtlMs / 3),
      observeTerm: (term) => this.elector.observeMessageTerm(term),
      log,
    });
    const metaHash = new MetaHash(store);
    this.#logSource = new LogSource({
      store,
      elector: this.elector,
      tracker: this.tracker,
      metaHash,
      nodeId,
      clock,
      onMismatch: (asker) => {
        options.hooks.onDivergenceFound();
        log.info({ standby: asker }, 'a standby asked from a position this log does not hold; sent it this log’s term boundaries to find where they agree');
      },
      onNotApplying: (standby, seq) => {
        log.warn(
          { standby, seq },
          `standby ${standby} keeps asking for the entries after seq ${seq} that this leader sent it: it does not apply them, and tiering waits for it past that seq. Look at its log: a node of an older version cannot apply the records of a newer leader (upgrade it; upgrade standbys before the leader), its disk refuses writes, or the answers do not reach it in time (a slow link: \`did not answer\`)`,
        );
      },
    });
    this.#forwarder = new OutboxForwarder({
      store,
      elector: this.elector,
      transport: options.transport,
      clock,
      nodeId,
      maxAttempts: options.forwardMaxAttempts,
      queueCapacity: options.forwardQueueCapacity,
      // Enough events to spread a forward's fixed cost, few enough that the leader's LevelDB
      // batch stays a megabyte or two: larger native batches grow by copying into fresh pages.
      // On three nodes 1,000 and 2,000 measured alike, 5,000 with 10,000-entry pulls slower.
      batchSize: 2000,
      log,
      onForwarded: (n) => options.hooks.onForwarded(n),
      onAttemptsExhausted: () => options.hooks.onForwardAttemptsExhausted(),
      onOverCapacity: () => options.hooks.onOutboxOverCapacity(),
      onConflicts: (conflicts) => options.hooks.onConflicts(conflicts, nodeId),
    });
    this.#follower = new ReplicationFollower({
      store,
      elector: this.elector,
      transport: options.transport,
      clock,
      metaHash,
      nodeId,
      pullWaitMs: PULL_WAIT_MS,
      onMetaApplied: (meta) => {
        for (const listener of this.#metaListeners) listener(meta);
      },
      onDiverted: (diverted) => {
        options.hooks.onDiverted(diverted.moved);
        this.#forwarder.kick();
      },
      log,
    });
    // A cut of this log (a standby's diverged suffix, or a leader taking a tier's entries it
    // lacked) moves entries to the outbox: forward or order them now, and count no standby
    // as holding what is gone. A leader whose log is cut also steps down: what it orders next
    // must carry a new term, else a standby that still holds the cut entries under this term
    // would find its log matching this one at their seqs and keep them.
    // The lease is kept until it runs out rather than resigned: the adoption then writes its
    // record under a reserved term, and this node publishes that log end before anyone may
    // campaign, so a standby that still holds the cut entries (a log of an older last term now)
    // does not win the election and undo the adoption.
    this.#unsubscribeCut = store.onLogCut((lastSeq) => {
      this.tracker.cutAfter(lastSeq);
      if (this.elector.role === 'leader') this.elector.stepDown(`its log was cut after seq ${lastSeq} (it took a tier's entries it lacked): a new term orders what follows`, { resign: false });
      this.#forwarder.kick();
    });
  }

  /**
   * Builds a node on its store and ports. It takes part in nothing until start(); until
   * then it is not the leader, and whatever it receives goes to its outbox.
   */
  static async open(options: ClusterNodeOptions): Promise<ClusterNode> {
    // Never below the term of the last entry in the log: a node knows every term it holds.
    const knownTerm = Math.max((await options.store.getLocal<number>(LOCAL_TERM)) ?? 0, options.store.position.lastTerm);
    let instance = await options.store.getLocal<string>(LOCAL_INSTANCE);
    if (instance === undefined) {
      instance = randomUUID();
      await options.store.putLocal(LOCAL_INSTANCE, instance);
    }
    return new ClusterNode(options, knownTerm, instance);
  }

  /**
   * Another running process that is a member under this node's id (another data dir), if any:
   * looked for before this node takes part, so a second process given the same `--node-id` is
   * refused at start (LeaderElector.liveTwin).
   */
  liveTwin(): Promise<MemberInfo | undefined> {
    return this.elector.liveTwin();
  }

  /** Joins the cluster as `url` (where peers reach this node); works while the coordinator is down. */
  start(url: string): void {
    if (this.#started) throw new Error('cluster node already started');
    this.#started = true;
    this.elector.start(url);
    this.#follower.start();
    this.#forwarder.start();
  }

  /** Calls `listener` after replicated metadata was applied here (settings may have changed). Returns an unsubscribe. */
  onMetaApplied(listener: (meta: Record<string, unknown>) => void): () => void {
    this.#metaListeners.add(listener);
    return () => this.#metaListeners.delete(listener);
  }

  isLeader(): boolean {
    return this.elector.isLeader();
  }

  /**
   * A term above every term the coordinator handed out, taken for the leader's own use (the
   * record of a tier adoption, AuditStore.adoptSuffix): no election ever hands it out after
   * this. Asked by the leader only: while its lease holds nobody campaigns, so the counter read
   * is the one raised. Should the lease be lost in between, a campaign may take the same number,
   * but the adoption then finds this node no longer leads and writes nothing.
   */
  async reserveTerm(): Promise<number> {
    if (!this.elector.isLeader()) throw new AuditError(AuditErrorCode.NOT_LEADER, 'only the leader takes a term for its own records', { retryable: true });
    const coordinator = this.#options.coordinator;
    const term = Math.max(await coordinator.latestTerm(), this.elector.knownTerm) + 1;
    await coordinator.raiseTermFloor(term);
    return term;
  }

  /**
   * Takes in a term seen outside the coordinator and the peers (rows a tier holds): the next
   * term handed out is above it, and a leader of a term not above it steps down, so the next
   * one leads in a term above. What puts terms back after the coordinator lost its data when no
   * running node remembered them (the node that led first had lost its own).
   */
  async learnTerm(term: number): Promise<void> {
    this.elector.observeMessageTerm(term);
    await this.#options.coordinator.raiseTermFloor(term);
    const leading = this.elector.leadingTerm;
    if (leading !== undefined && leading <= term) this.elector.stepDown(`the tier holds entries of term ${term}, not before this leader's: the next leader takes a term above it`);
  }

  get leader(): LeaderView | undefined {
    return this.elector.leader;
  }

  /** Events were put into the outbox: forward them now. */
  outboxChanged(): void {
    this.#forwarder.kick();
  }

  /**
   * Stores events received by this node, synced before this resolves: ordered into the log
   * when this node leads, else into the outbox for the leader. A leader that loses its lease
   * on the way falls back to the outbox rather than failing the caller.
   */
  async receive(events: readonly EncodedEvent[], freshIds?: ReadonlySet<string>, sender?: string): Promise<Received> {
    const { store } = this.#options;
    if (this.elector.isLeader()) {
      try {
        return { path: 'log', result: await store.appendEncoded(events, { ...(freshIds ? { freshIds } : {}), ...(sender === undefined ? {} : { lookupSender: sender }), sequencer: this.elector.sequencer }) };
      } catch (err) {
        if (!isAuditError(err, AuditErrorCode.NOT_LEADER)) throw err;
      }
    }
    await store.enqueueOutbox(events, freshIds ? { freshIds } : {});
    this.#forwarder.kick();
    return { path: 'outbox' };
  }

  /**
   * Resolves true once every one of `events` is confirmed on a node other than this one
   * (`ack=replicated`), false after `timeoutMs`. An event is confirmed when the tier is known to
   * hold it (heldByTier), or its entry in this node's log came from another node (replicated or
   * caught up: the sender holds it), or was ordered here above `unlinkedThrough` and either a
   * standby's proven pull in the term this node leads now has matched this log at or past its
   * seq, or, on a node that follows another now, the leader it follows matched this log at or
   * past its seq (a proven answer). Progress of another term, or a pull that did not match or
   * matched by term alone, never counts.
   */
  async confirmReplicated(events: ReadonlyArray<Pick<EncodedEvent, 'eventId'>>, timeoutMs: number): Promise<boolean> {
    const deadline = this.#clock.monotonicMs() + timeoutMs;
    const pending = new Set(events.map((e) => e.eventId));
    for (;;) {
      // Where each is in the log, read again at every change: a cut may move one back to the outbox.
      const eventIds = [...pending];
      const seqs = await this.#options.store.seqsOfEventIds(eventIds);
      eventIds.forEach((eventId, i) => {
        if (this.#confirmed(eventId, seqs[i])) pending.delete(eventId);
      });
      if (pending.size === 0) return true;
      const remainingMs = deadline - this.#clock.monotonicMs();
      if (remainingMs <= 0) return false;
      await this.#nextChange(Math.min(remainingMs, 250));
    }
  }

  /** Whether the event stored at `seq` (undefined: not in the log) is confirmed, as confirmReplicated says. */
  #confirmed(eventId: string, seq: number | undefined): boolean {
    const { store } = this.#options;
    // Held by the tier (found there as the copy of a re-send, here or by the leader it was
    // forwarded to): the bucket holds it, whatever this log's copy (review: a former leader whose
    // own copy sits before an unlinked join, below, answered 503 to every retry though the tier
    // held it). Else, not in the log: not confirmed yet (still in the outbox, or moved back).
    if (store.heldByTier(eventId)) return true;
    if (seq === undefined) return false;
    const run = store.runAt(seq);
    if (run === undefined) return false;
    if (run.received) return true;
    // Ordered here, before a join to another log no chain hash linked: no match of this log
    // proves another node holds it (a later standby may match the entries after the join only;
    // review, with a term number handed out twice).
    if (seq <= store.unlinkedThrough) return false;
    // Ordered here: while leading, a standby of this term matched past it; while following, the
    // leader did (this node ordered it in a term it led before).
    const term = this.elector.leadingTerm;
    return term !== undefined ? this.tracker.confirmed(term, seq) : this.#follower.leaderHolds(seq);
  }

  /** Waits for the log to grow, a standby's progress, or `ms`. */
  #nextChange(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = this.#clock.setTimer(done, ms);
      const unsubscribeLog = this.#options.store.onLogGrowth(done);
      const unsubscribeProgress = this.tracker.onProgress(done);
      function done() {
        timer.cancel();
        unsubscribeLog();
        unsubscribeProgress();
        resolve();
      }
    });
  }

  pull(request: PullRequest): Promise<PullResponse> {
    return this.#logSource.pull(request);
  }

  /**
   * The leader's side of forwarding: de-duplicate by eventId and store in order. Events whose
   * id holds another content are refused as conflicts, recorded here and named in the answer.
   */
  receiveForward(request: ForwardRequest): Promise<ForwardResponse> {
    // One forward of a sender at a time, in arrival order. Ids it flagged new are stored without
    // a lookup, and a re-send of the same batch (its sender gave up waiting, or restarted with
    // the batch still in its outbox) carries them unflagged: taken while the first attempt was
    // still on its way to the writer, the re-send was looked up, found nothing and stored them,
    // and the first attempt then stored them again (review, in the simulator: three events
    // twice in every log). In turn, the re-send finds them stored.
    const sender = request.nodeId;
    // The term it arrived in: its flagged ids are trusted only while this node still leads in it.
    const arrivedInTerm = this.elector.isLeader() ? this.elector.leader?.term : undefined;
    const before = this.#forwardsInFlight.get(sender);
    const answer = (before === undefined ? Promise.resolve() : before).then(() => this.#receiveForwardInTurn(request, arrivedInTerm));
    const settled = answer.then(
      () => undefined,
      () => undefined,
    );
    this.#forwardsInFlight.set(sender, settled);
    void settled.then(() => {
      if (this.#forwardsInFlight.get(sender) === settled) this.#forwardsInFlight.delete(sender);
    });
    return answer;
  }

  async #receiveForwardInTurn(request: ForwardRequest, arrivedInTerm: number | undefined): Promise<ForwardResponse> {
    this.elector.observeMessageTerm(request.term);
    if (!this.elector.isLeader()) throw new AuditError(AuditErrorCode.NOT_LEADER, `node ${this.#options.nodeId} is not the leader`, { retryable: true });
    const events = markTimeAssigned(request.events.map(parseForwardedEvent), request.newIdFlags);
    // Flagged ids are stored unlooked-up only by the writer of the term the forward arrived in:
    // its sender's re-sends wait behind it (receiveForward), but a re-send that reached another
    // leader meanwhile was stored there, and this node, leading again later, holds it (review:
    // a forward held across two elections stored its events a second time). In a later term
    // they are looked up. (A check in the sequencer instead split the writer's groups: it
    // batches appends of one sequencer together, and each forward had its own.)
    const freshIdsTrusted = () => this.elector.isLeader() && this.elector.leader?.term === arrivedInTerm;
    // An erasure record among them is re-applied by eventId (appendForwarded), not stored with the seqs of the log it was cut from.
    // Its tier lookups take turns as one sender, the forwarding node (ResendLookupGate).
    const result = await appendForwarded(this.#options.store, events, { freshIds: newIdsOf(events, request.newIdFlags), freshIdsTrusted, sequencer: this.elector.sequencer, lookupSender: `node ${request.nodeId}` });
    if (result.conflicts.length > 0) await this.#options.hooks.onConflicts(result.conflicts, request.nodeId);
    const response: ForwardResponse = { term: this.elector.knownTerm, stored: result.stored.length, duplicates: result.duplicates };
    if (result.conflicts.length > 0) response.conflicts = result.conflicts;
    if (result.heldByTier !== undefined && result.heldByTier.length > 0) response.heldByTier = result.heldByTier;
    return response;
  }

  /**
   * After winning, before ordering anything: take from live peers whatever extends this log
   * (most up-to-date peer first), but only where the peer's log matches this one at its end.
   * A leader never cuts its own log: a peer whose log diverged is left to divert its entries.
   */
  async #prepareLeadership(term: number, stillLeader: () => boolean): Promise<void> {
    const { store, transport, nodeId } = this.#options;
    const peers = this.#peers();
    for (const peer of peers) {
      for (let round = 0; round < 1000 && stillLeader(); round++) {
        const position = store.position;
        const lastTerm = store.termAt(position.lastSeq);
        // A peer whose entry here has the same term but another chain hash holds other entries
        // (a term number handed out twice): nothing of its log extends this one.
        const lastChainHash = await store.chainHashAt(position.lastSeq);
        if (store.position.lastSeq !== position.lastSeq) break;
        let response: PullResponse;
        try {
          response = await transport.pull(
            peer.url,
            { nodeId, after: position.lastSeq, lastTerm, ...(lastChainHash !== undefined ? { lastChainHash } : {}), term, limit: 5000, waitMs: 0, metaHash: '', catchUp: true },
            Math.max(500, this.#options.leaseTtlMs / 3),
          );
        } catch {
          break; // a peer that cannot answer has nothing we can take
        }
        // A peer that already knows a later term: this election is stale.
        if (response.term > term) {
          this.elector.observeMessageTerm(response.term);
          throw new Error(`peer ${peer.nodeId} already knows term ${response.term}; not leading term ${term}`);
        }
        if (response.mismatch !== undefined || store.position.lastSeq !== position.lastSeq) break;
        if (response.entries.length === 0) {
          // The peer's retention deleted what it holds past this log's end: its erased ids are owed.
          if (response.tailDeleted !== undefined) await store.owedForTail(response.tailDeleted.throughSeq, response.tailDeleted.term);
          break;
        }
        await store.applyReplicated(response.entries, response.termStarts ?? [], skippedOf(response));
      }
    }
    // Erased ids this log owes (it skipped seqs, maybe erasure records): taken before ordering.
    const owed = (await this.#erasedIds.takeFrom(peers, term, stillLeader)) ? undefined : store.erasedIdsOwed;
    if (owed !== undefined && stillLeader()) {
      this.#options.log.warn(
        { erasedAfter: owed.after, throughSeq: owed.throughSeq },
        `leading without all erased ids: this log skipped seqs up to ${owed.throughSeq} that its leader's retention deleted, erasure records maybe among them, and no live peer holds that range with every erased id; a re-send of an event erased there may be stored again until a peer that holds them comes back (asked every ${ERASED_IDS_RETRY_MS / 1000} s)`,
      );
    }
  }

  /**
   * What `GET /admin/cluster` shows: this node, and every node it has heard from since it
   * started, with where its log ends and its lag; one not heard from within a lease TTL is
   * `unreachable`, with how long ago it was last heard from.
   */
  async status(): Promise<ClusterNodeStatus> {
    const { store, nodeId } = this.#options;
    const leader = this.elector.leader;
    const role: NodeRole = this.elector.isLeader() ? 'leader' : 'standby';
    const lastSeq = store.position.lastSeq;
    const nodes: ClusterMemberStatus[] = [{ nodeId, url: this.elector.url, role, appliedSeq: lastSeq, lagMs: 0, lastHeardMs: 0 }];
    for (const { member, pull, lastHeardMs, reachable } of this.#peersHeard(this.tracker.progress)) {
      const appliedSeq = Math.max(member.lastSeq, pull?.appliedSeq ?? 0);
      nodes.push({
        nodeId: member.nodeId,
        url: member.url,
        role: !reachable ? 'unreachable' : leader?.nodeId === member.nodeId ? 'leader' : 'standby',
        appliedSeq,
        lagMs: reachable ? await this.#lagMs(appliedSeq, lastSeq) : null,
        lastHeardMs,
      });
    }
    nodes.sort((a, b) => a.nodeId.localeCompare(b.nodeId));
    return { nodeId, role, term: this.elector.knownTerm, leader: leader ? { nodeId: leader.nodeId, url: leader.url } : null, nodes, erasedIdsOwed: store.erasedIdsOwed !== undefined, erasedIdsTakenThrough: store.erasedIdsCompleteThrough };
  }

  /**
   * The highest seq every standby this leader hears from (within a lease TTL, as `status()`
   * judges reachability) holds of its log in the term it leads, by their matched pulls (0 for
   * one that has not pulled in this term yet), with the standbys that hold no more than that.
   * Undefined when no standby is heard from (the entries cannot be held anywhere else) or this
   * node does not lead.
   */
  heldByStandbys(): HeldByStandbys | undefined {
    const term = this.elector.leadingTerm;
    if (term === undefined) return undefined;
    let held: HeldByStandbys | undefined;
    for (const { member, pull, reachable } of this.#peersHeard(this.tracker.term === term ? this.tracker.progress : [])) {
      if (!reachable) continue;
      const seq = pull?.appliedSeq ?? 0;
      if (held === undefined || seq < held.throughSeq) held = { throughSeq: seq, nodes: [member.nodeId] };
      else if (seq === held.throughSeq) held.nodes.push(member.nodeId);
    }
    held?.nodes.sort();
    if (held !== undefined) {
      const notApplying = this.tracker.notApplying().filter((nodeId) => held?.nodes.includes(nodeId));
      if (notApplying.length > 0) held.notApplying = notApplying.sort();
    }
    return held;
  }

  /**
   * Every other node heard from, with its last matched pull among `progress` and how long ago
   * it was last heard from (its published record or that pull, whichever is newer); reachable
   * when that was within a lease TTL.
   */
  *#peersHeard(progress: readonly StandbyProgress[]): Generator<{ member: MemberInfo; pull: StandbyProgress | undefined; lastHeardMs: number; reachable: boolean }> {
    const pulled = new Map(progress.map((p) => [p.nodeId, p]));
    const nowMs = this.#clock.monotonicMs();
    for (const { member, lastHeardMs: publishedMs } of this.elector.heard()) {
      if (member.nodeId === this.#options.nodeId) continue;
      const pull = pulled.get(member.nodeId);
      const lastHeardMs = Math.min(publishedMs, pull === undefined ? Infinity : Math.max(0, nowMs - pull.heardAtMs));
      yield { member, pull, lastHeardMs, reachable: lastHeardMs < this.#options.leaseTtlMs };
    }
  }

  /**
   * How long ago the oldest entry a node lacks was ingested (0 when it lacks none), on the log's
   * ingest clock: after the wall clock stepped back (or a failover to a slower clock) ingestTs
   * stays ahead of it, going on at real speed, and the wall clock minus ingestTs read 0 for
   * every lag shorter than that step, for good (review).
   */
  async #lagMs(appliedSeq: number, lastSeq: number): Promise<number> {
    if (appliedSeq >= lastSeq) return 0;
    const { store } = this.#options;
    const [next] = await store.readBySeq(appliedSeq, 1);
    return next === undefined ? 0 : Math.max(0, Math.max(this.#clock.wallMs(), store.ingestNow()) - next.ingestTs);
  }

  /** The other members, most up to date first. */
  #peers(): MemberInfo[] {
    return this.elector.members.filter((m) => m.nodeId !== this.#options.nodeId).sort((a, b) => b.lastTerm - a.lastTerm || b.lastSeq - a.lastSeq);
  }

  async close(): Promise<void> {
    this.#unsubscribeCut();
    this.#logSource.close();
    await this.#forwarder.close();
    await this.#follower.close();
    await this.elector.close();
    await this.#erasedIds.close();
  }
}
