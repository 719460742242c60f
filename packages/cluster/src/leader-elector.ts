import { AuditError, AuditErrorCode, isAuditError } from '@auditlake/model';
import type { Clock, Timer } from './clock.js';
import type { Coordinator, MemberInfo } from './coordinator.js';

export type NodeRole = 'leader' | 'standby';

export interface LeaderView {
  nodeId: string;
  url: string;
  term: number;
}

export interface ClusterLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Where a log ends: its last seq and the term of that entry. */
export interface LogEnd {
  lastSeq: number;
  lastTerm: number;
}

/**
 * How far above the terms a node knows a message's term may be (LeaderElector.observeMessageTerm):
 * terms count elections, and a node misses at most the elections held while it was away.
 */
export const TERM_JUMP_MAX = 1_000_000;

/** How often a node refused by its coordinator's cluster says so again. */
const REFUSAL_LOG_INTERVAL_MS = 60_000;

/**
 * Lease TTLs without a pull request from most of its live standbys (two or more, their member
 * records refreshed through the coordinator) after which a leader steps down: it is cut off
 * from them while they still reach the coordinator, so it would keep its lease for good, and
 * the events sent to them would wait in their outboxes (replication.md, "Cut off from the
 * standbys"). At least: the cluster node waits no less than four pull timeouts (cutOffMs), 24 s
 * at the default TTL; standbys pull without pause, so a slow pull, or three lost in a row, stay
 * below it.
 */
export const CUT_OFF_TTLS = 5;

/**
 * Lease TTLs a leader that stepped down for being cut off neither campaigns nor counts in the
 * election restriction (MemberInfo.yielding), so a standby holding less of the log can win:
 * what only the yielding node holds is moved to its outbox and forwarded once it reaches the new
 * leader, as any deposed leader's entries. After that it campaigns again like any node.
 */
export const YIELD_TTLS = 10;

export interface LeaderElectorOptions {
  coordinator: Coordinator;
  clock: Clock;
  nodeId: string;
  leaseTtlMs: number;
  /** The highest term this node has seen before (persisted), so it refuses older ones after a restart. */
  knownTerm: number;
  /** Where this node's log ends now. */
  logEnd: () => LogEnd;
  /**
   * Runs after a won election and before the first event is ordered: catch up from peers,
   * record where the term starts. `stillLeader()` turns false if the lease is lost meanwhile.
   */
  prepareLeadership: (term: number, stillLeader: () => boolean) => Promise<void>;
  persistTerm: (term: number) => Promise<void>;
  /** Which data dir this node runs on (MemberInfo.instance): tells a second process under the same node id. */
  instance?: string;
  /** Told once when the coordinator keeps another running process's record under this id (ClusterHooks.onNodeIdInUse). */
  onNodeIdInUse?: (err: AuditError) => void;
  /** Runs every round while Redis answers (the node refreshes what it keeps there). */
  onTick: () => Promise<void>;
  /** When `nodeId`'s last pull request reached this node (monotonic), or undefined: a leader cut off from its standbys steps down (CUT_OFF_TTLS). Default: never checked. */
  lastPullMs?: (nodeId: string) => number | undefined;
  /**
   * How long most live standbys must have sent no pull request before a leader steps down;
   * default CUT_OFF_TTLS lease TTLs. The cluster node passes at least four of its standbys'
   * pull timeouts: one lost pull is one timeout of silence, and with a short TTL five TTLs were
   * less than that, so a lossy but connected network stepped healthy leaders down (review).
   */
  cutOffMs?: number;
  log: ClusterLog;
}

/** Lease TTLs after it was last heard that a node whose member record is gone is forgotten. */
export const HEARD_FORGET_TTLS = 1000;

/** Whether log end `a` is more up to date than `b`: a later last term, or the same and longer. */
export function isMoreUpToDate(a: LogEnd, b: LogEnd): boolean {
  return a.lastTerm > b.lastTerm || (a.lastTerm === b.lastTerm && a.lastSeq > b.lastSeq);
}

/**
 * Leadership through the Redis lease. A leader acts only while its lease is valid by its own
 * monotonic clock, with a margin: it renews every TTL/6 and treats the lease as gone at
 * TTL − margin after the last renewal began, so it stops ordering events before Redis can
 * hand the lease to anyone else — even if the process was paused (SIGSTOP) in between.
 */
export class LeaderElector {
  readonly #options: LeaderElectorOptions;
  readonly #clock: Clock;
  readonly #marginMs: number;
  /** The URL peers reach this node at, known once it listens (start). */
  #url = '';
  #role: NodeRole = 'standby';
  #ready = false;
  #term = 0;
  #knownTerm: number;
  #leaseValidUntil = 0;
  #leader: LeaderView | undefined;
  #members: MemberInfo[] = [];
  /**
   * When each member's record last changed, by this node's monotonic clock (clocks of nodes
   * differ), and since when it has changed at least once a lease TTL (live since then).
   */
  readonly #heard = new Map<string, { member: MemberInfo; heardAtMs: number; liveSinceMs: number }>();
  /** Since when every round reached Redis (undefined while it does not answer). */
  #redisUpSince: number | undefined;
  /** When the last round that reached Redis ended, by the monotonic clock. */
  #lastReachedMs: number | undefined;
  #timer: Timer | undefined;
  #ticking = false;
  /** The record of another instance the coordinator kept under this node's id at the last publish. */
  #heldBy: MemberInfo | undefined;
  /** Whether this node was told another process holds its id (onNodeIdInUse, once). */
  #nodeIdInUseTold = false;
  /** When the coordinator's refusal of this node was last logged (AUDIT_CLUSTER_MISMATCH). */
  #refusalLoggedMs: number | undefined;
  /** When this node last won an election (monotonic): standbys are given the cut-off (#cutOffMs) from then to pull. */
  #wonAtMs = 0;
  /** Until when this node yields after stepping down cut off from its standbys (YIELD_TTLS; monotonic). */
  #yieldUntilMs = 0;
  #closed = false;

  constructor(options: LeaderElectorOptions) {
    this.#options = options;
    this.#clock = options.clock;
    this.#knownTerm = options.knownTerm;
    this.#marginMs = Math.max(100, Math.floor(options.leaseTtlMs * 0.2));
  }

  /** Starts the rounds; `url` is where peers reach this node. */
  start(url: string): void {
    this.#url = url;
    // Rounds every TTL/6: a leader renews well inside its TTL, and a standby notices an
    // expired lease within a sixth of it (failover ≈ the dead leader's remaining lease + this).
    const intervalMs = Math.max(50, Math.floor(this.#options.leaseTtlMs / 6));
    const round = () => {
      if (this.#closed) return;
      this.#timer = this.#clock.setTimer(round, intervalMs);
      void this.tick();
    };
    round();
  }

  /** Where peers reach this node ('' before start). */
  get url(): string {
    return this.#url;
  }

  get role(): NodeRole {
    return this.#role;
  }

  get knownTerm(): number {
    return this.#knownTerm;
  }

  get members(): readonly MemberInfo[] {
    return this.#members;
  }

  /**
   * Every node this one has seen publish since it started, with how long ago (by this node's
   * clock) its record last changed; a node that stopped publishing stays listed.
   */
  heard(): Array<{ member: MemberInfo; lastHeardMs: number }> {
    const now = this.#clock.monotonicMs();
    return [...this.#heard.values()].map((h) => ({ member: h.member, lastHeardMs: Math.max(0, now - h.heardAtMs) }));
  }

  /**
   * Notes the members just read, and when each last published by this node's own clock. A node
   * whose record is gone (expired: it stopped publishing) stays listed as unreachable for
   * HEARD_FORGET_TTLS lease TTLs after it was last heard (50 minutes at the default 3 s), then is
   * forgotten: nodes replaced over a year would otherwise be listed, and kept in memory, for as
   * long as this node runs.
   */
  #see(members: MemberInfo[]): void {
    this.#members = members;
    const now = this.#clock.monotonicMs();
    for (const member of members) {
      const previous = this.#heard.get(member.nodeId);
      if (previous !== undefined && previous.member.updatedAtMs === member.updatedAtMs) continue;
      const wasLive = previous !== undefined && now - previous.heardAtMs < this.#options.leaseTtlMs;
      this.#heard.set(member.nodeId, { member, heardAtMs: now, liveSinceMs: wasLive ? previous.liveSinceMs : now });
    }
    if (this.#heard.size === members.length) return;
    const listed = new Set(members.map((m) => m.nodeId));
    const forgetMs = HEARD_FORGET_TTLS * this.#options.leaseTtlMs;
    for (const [nodeId, heard] of this.#heard) if (!listed.has(nodeId) && now - heard.heardAtMs >= forgetMs) this.#heard.delete(nodeId);
  }

  /** The term this node leads right now (prepared, lease valid), else undefined. */
  get leadingTerm(): number | undefined {
    return this.isLeader() ? this.#term : undefined;
  }

  /** True only for a prepared leader whose lease is still valid right now. */
  isLeader(): boolean {
    if (this.#role !== 'leader' || !this.#ready) return false;
    if (this.#clock.monotonicMs() < this.#leaseValidUntil) return true;
    this.#stepDown('lease expired before it could be renewed');
    return false;
  }

  /** The store's sequencer: the term to stamp, or AUDIT_NOT_LEADER. */
  readonly sequencer = (): number => {
    if (this.isLeader()) return this.#term;
    throw new AuditError(AuditErrorCode.NOT_LEADER, `node ${this.#options.nodeId} is not the leader`, { retryable: true });
  };

  /** The leader as last seen (this node when it leads). */
  get leader(): LeaderView | undefined {
    if (this.isLeader()) return { nodeId: this.#options.nodeId, url: this.#url, term: this.#term };
    return this.#leader;
  }

  /**
   * Notes a term a message carries (a pull or forward request, a pull answer, a tier's rows),
   * as observeTerm does, unless no cluster could have reached it — refused then: not a
   * non-negative integer, or more than TERM_JUMP_MAX above the terms this node knows. Taken in,
   * a forged huge term was persisted and written back
   * to the coordinator as its floor: one pull request with term 1e15 left the cluster without a
   * leader for good, and an absolute bound wedged it at the bound itself (reviews). Relative, the
   * next election always stays within it.
   */
  observeMessageTerm(term: number): void {
    if (!Number.isSafeInteger(term) || term < 0 || term > this.#knownTerm + TERM_JUMP_MAX) {
      throw new AuditError(AuditErrorCode.BAD_REQUEST, `term ${term} is not one a cluster could have reached: this node knows term ${this.#knownTerm}, and terms count elections (at most ${TERM_JUMP_MAX} above it taken)`);
    }
    this.observeTerm(term);
  }

  /**
   * Notes a term seen: this node's own election, a coordinator record, or a message's (checked
   * first, observeMessageTerm). A newer term means someone else won an election: a leader seeing
   * one steps down at once.
   */
  observeTerm(term: number): void {
    if (term <= this.#knownTerm) return;
    this.#knownTerm = term;
    this.#options.persistTerm(term).catch(() => undefined);
    if (this.#role === 'leader' && term > this.#term) this.#stepDown(`saw newer term ${term}`);
  }

  /** One round: renew or watch the lease, campaign when allowed, publish this node. */
  async tick(): Promise<void> {
    if (this.#ticking || this.#closed) return;
    this.#ticking = true;
    try {
      // Rounds run every TTL/6. One that starts long after the last that reached Redis (this
      // process was paused, or its event loop stalled) cannot vouch that Redis kept its data
      // meanwhile: it may have restarted empty while this node was not looking, and this
      // node's known term may be behind a term another node won. So it waits as after an
      // outage it saw, for the running nodes to put their terms back before it campaigns.
      if (this.#lastReachedMs !== undefined && this.#clock.monotonicMs() - this.#lastReachedMs > this.#options.leaseTtlMs / 2) this.#redisUpSince = undefined;
      // First, so a node the coordinator's cluster refuses (AUDIT_CLUSTER_MISMATCH) neither
      // campaigns, renews, raises the term counter nor publishes itself there.
      await this.#options.onTick();
      if (this.#role === 'leader') await this.#renew();
      else await this.#watchAndCampaign();
      await this.#publish();
      this.#lastReachedMs = this.#clock.monotonicMs();
      this.#redisUpSince ??= this.#lastReachedMs;
    } catch (err) {
      this.#redisUpSince = undefined;
      if (isAuditError(err, AuditErrorCode.CLUSTER_MISMATCH)) {
        this.#refusedByCluster(err);
        return;
      }
      // Redis unreachable: a leader's lease simply runs out (checked in isLeader()).
      if (this.#role === 'leader' && this.#clock.monotonicMs() >= this.#leaseValidUntil) this.#stepDown(`could not renew the lease: ${String(err)}`);
    } finally {
      this.#ticking = false;
    }
  }

  /**
   * The coordinator holds another cluster than this node's data: lead no longer (the lease runs
   * out, never renewed), and say so once a minute while it lasts.
   */
  #refusedByCluster(err: Error): void {
    this.#leader = undefined;
    this.#stepDown(err.message, false);
    const now = this.#clock.monotonicMs();
    if (this.#refusalLoggedMs !== undefined && now - this.#refusalLoggedMs < REFUSAL_LOG_INTERVAL_MS) return;
    this.#refusalLoggedMs = now;
    this.#options.log.warn({ code: AuditErrorCode.CLUSTER_MISMATCH }, err.message);
  }

  async #renew(): Promise<void> {
    const started = this.#clock.monotonicMs();
    const renewed = await this.#options.coordinator.renew(this.#term);
    if (!renewed) {
      this.#stepDown('the lease is held by another node');
      return;
    }
    if (this.#role === 'leader') this.#leaseValidUntil = started + this.#options.leaseTtlMs - this.#marginMs;
    this.#see(await this.#options.coordinator.members());
    const cutOff = this.#cutOffFrom();
    if (cutOff !== undefined) {
      this.#yieldUntilMs = this.#clock.monotonicMs() + YIELD_TTLS * this.#options.leaseTtlMs;
      this.#stepDown(`cut off from its standbys: ${cutOff.join(', ')} reach the coordinator but sent this node no pull request for ${this.#cutOffMs / 1000} s; not campaigning for ${(YIELD_TTLS * this.#options.leaseTtlMs) / 1000} s so one of them can lead`);
    }
  }

  /**
   * The live standbys that have not reached this leader for the cut-off (#cutOffMs), when they
   * are most of two or more: this node is cut off from them (not they from each other, or most
   * would still reach it). Undefined otherwise, and without lastPullMs. With one standby nothing
   * tells which of the two is cut off, and both would step down in turn, so it is never checked.
   */
  #cutOffFrom(): string[] | undefined {
    const lastPullMs = this.#options.lastPullMs;
    if (lastPullMs === undefined || this.#role !== 'leader' || !this.#ready) return undefined;
    const now = this.#clock.monotonicMs();
    const cutOffMs = this.#cutOffMs;
    if (now - this.#wonAtMs < cutOffMs) return undefined;
    const live = this.#liveOthers(this.#members).filter((m) => m.yielding !== true);
    if (live.length < 2) return undefined;
    // A node of a version before yielding would still count this node's longer log, never
    // campaign, and leave the cluster with no leader while this one yields, then elect it again
    // (review: a rolling upgrade). Only among nodes that say they leave a yielding node out.
    if (live.some((m) => m.honoursYielding !== true)) return undefined;
    // A member is given the whole period from when it came back (restarted, resumed, joined)
    // too: until then it could not have pulled.
    const silentSince = (m: MemberInfo) => Math.max(lastPullMs(m.nodeId) ?? Number.NEGATIVE_INFINITY, this.#heard.get(m.nodeId)?.liveSinceMs ?? now);
    const silent = live.filter((m) => now - silentSince(m) > cutOffMs).map((m) => m.nodeId);
    return silent.length * 2 > live.length ? silent : undefined;
  }

  /** How long most live standbys must have sent no pull request before this leader steps down. */
  get #cutOffMs(): number {
    return this.#options.cutOffMs ?? CUT_OFF_TTLS * this.#options.leaseTtlMs;
  }

  /** The other members heard from within one lease TTL (twins of this node id left out). */
  #liveOthers(members: readonly MemberInfo[]): MemberInfo[] {
    return members.filter((m) => m.nodeId !== this.#options.nodeId && this.#heardWithinTtl(m));
  }

  /**
   * Whether `member`'s record changed within one lease TTL (members publish every TTL/6): a
   * dead node's record lives for three, and must not hold every survivor back. By this node's
   * own clock: comparing another node's wall clock with ours would make skew decide.
   */
  #heardWithinTtl(member: MemberInfo): boolean {
    return this.#clock.monotonicMs() - (this.#heard.get(member.nodeId)?.heardAtMs ?? Number.NEGATIVE_INFINITY) < this.#options.leaseTtlMs;
  }

  async #watchAndCampaign(): Promise<void> {
    const coordinator = this.#options.coordinator;
    const [record, members] = await Promise.all([coordinator.leader(), coordinator.members()]);
    this.#see(members);
    if (record) {
      this.observeTerm(record.term);
      const url = members.find((m) => m.nodeId === record.nodeId)?.url;
      this.#leader = url === undefined || record.nodeId === this.#options.nodeId ? undefined : { nodeId: record.nodeId, url, term: record.term };
      return;
    }
    this.#leader = undefined;
    if (this.#clock.monotonicMs() < this.#yieldUntilMs || !this.#mayCampaign(members)) return;
    const started = this.#clock.monotonicMs();
    const term = await coordinator.campaign(this.#knownTerm);
    if (term === 0) return;
    this.#role = 'leader';
    this.#ready = false;
    this.#term = term;
    this.#wonAtMs = started;
    this.#leaseValidUntil = started + this.#options.leaseTtlMs - this.#marginMs;
    this.observeTerm(term);
    this.#options.log.info({ term }, 'won the leader election; catching up before accepting writes');
    void this.#prepare(term);
  }

  /**
   * Only the node with the most up-to-date log among the live members campaigns: the highest
   * (last term, last seq), compared in that order, as Raft's election restriction. A log whose
   * last entry has a later term holds every entry a later leader could have kept; a longer log
   * of an older term may hold entries no later leader has (they are diverted, not kept).
   */
  #mayCampaign(members: MemberInfo[]): boolean {
    // Redis may have restarted empty: wait one lease TTL of rounds that reached it, so every
    // live node has put its known term back (raiseTermFloor) and republished itself before
    // anyone takes a term — else a node that never saw the latest term could reuse it.
    if (this.#redisUpSince === undefined || this.#clock.monotonicMs() - this.#redisUpSince < this.#options.leaseTtlMs) return false;
    const mine = this.#options.logEnd();
    // A record of this node id that another process keeps refreshing: no campaign beside it.
    if (members.some((m) => this.#isOtherInstance(m) && this.#heardWithinTtl(m))) return false;
    // A member yielding (cut off from its standbys as leader) does not hold the others back: what
    // only it holds goes to its outbox and is forwarded once it reaches the new leader.
    const live = this.#liveOthers(members).filter((m) => m.yielding !== true);
    return live.every((m) => !isMoreUpToDate(m, mine));
  }

  async #prepare(term: number): Promise<void> {
    const stillLeader = () => this.#role === 'leader' && this.#term === term && this.#clock.monotonicMs() < this.#leaseValidUntil;
    try {
      await this.#options.prepareLeadership(term, stillLeader);
      if (!stillLeader()) throw new Error('lost the lease while catching up');
      this.#ready = true;
      this.#options.log.info({ term }, 'leading');
    } catch (err) {
      if (this.#role === 'leader' && this.#term === term) this.#stepDown(`could not prepare leadership: ${String(err)}`);
    }
  }

  /**
   * Gives up leadership now, so the next leader orders under a new term. The lease is resigned
   * unless `resign` is false: then it runs out (one lease TTL at most) while this node publishes
   * where its log ends, so the election that follows compares that log end, not the last one
   * published.
   */
  stepDown(reason: string, options: { resign?: boolean } = {}): void {
    this.#stepDown(reason, options.resign ?? true);
  }

  #stepDown(reason: string, resign = true): void {
    if (this.#role !== 'leader') return;
    const term = this.#term;
    this.#role = 'standby';
    this.#ready = false;
    this.#leaseValidUntil = 0;
    this.#options.log.warn({ term, reason }, 'stepped down as leader');
    if (resign) this.#options.coordinator.resign(term).catch(() => undefined);
  }

  async #publish(): Promise<void> {
    await this.#options.coordinator.raiseTermFloor(this.#knownTerm);
    const { lastSeq, lastTerm } = this.#options.logEnd();
    const held = await this.#options.coordinator.publish({
      nodeId: this.#options.nodeId,
      url: this.#url,
      role: this.isLeader() ? 'leader' : 'standby',
      term: this.#knownTerm,
      lastSeq,
      lastTerm,
      updatedAtMs: this.#clock.wallMs(),
      ...(this.#options.instance === undefined ? {} : { instance: this.#options.instance }),
      ...(this.#clock.monotonicMs() < this.#yieldUntilMs ? { yielding: true as const } : {}),
      honoursYielding: true,
    });
    if (held === undefined) {
      this.#heldBy = undefined;
      return;
    }
    // Another process publishes this node id: two nodes under one id take each other for
    // themselves (neither pulls from nor forwards to a leader of its own id), and one elected
    // with a shorter log cut acknowledged events off (review). This one leads nothing.
    this.#stepDown(`another process runs as node ${this.#options.nodeId}`);
    // Stopped only once that record was refreshed since it was first found held: a process
    // that died a moment ago (this node restarted at once on a wiped data dir) leaves a record
    // no one refreshes, which the coordinator gives up after a lease TTL.
    const seen = this.#heldBy;
    this.#heldBy = held;
    if (seen === undefined || seen.instance !== held.instance || seen.updatedAtMs === held.updatedAtMs || this.#nodeIdInUseTold) return;
    this.#nodeIdInUseTold = true;
    const refusal = nodeIdInUse(this.#options.nodeId, held);
    this.#options.log.warn({ code: AuditErrorCode.NODE_ID_IN_USE, heldBy: held.url }, refusal.message);
    this.#options.onNodeIdInUse?.(refusal);
  }

  /**
   * A live member record of another process under this node's id (another instance, refreshed
   * within one lease TTL by this node's clock), if any: looked at twice, half a TTL apart, so a
   * record its own process left behind when it died does not count.
   */
  async liveTwin(): Promise<MemberInfo | undefined> {
    if (this.#options.instance === undefined) return undefined;
    const other = async () => (await this.#options.coordinator.members()).find((m) => this.#isOtherInstance(m));
    const first = await other();
    if (first === undefined) return undefined;
    await new Promise<void>((resolve) => this.#clock.setTimer(resolve, this.#options.leaseTtlMs / 2));
    const second = await other();
    return second !== undefined && second.updatedAtMs !== first.updatedAtMs ? second : undefined;
  }

  /** Whether `member` is a record of this node's id published by another instance (another data dir). */
  #isOtherInstance(member: MemberInfo): boolean {
    const instance = this.#options.instance;
    return member.nodeId === this.#options.nodeId && instance !== undefined && member.instance !== undefined && member.instance !== instance;
  }

  /** Stops electing; a leader resigns so a successor need not wait for the lease to expire. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#timer?.cancel();
    if (this.#role === 'leader') {
      const term = this.#term;
      this.#role = 'standby';
      this.#ready = false;
      await this.#options.coordinator.resign(term).catch(() => undefined);
    }
  }
}

/** The refusal of a second process under a node id another running process holds. */
export function nodeIdInUse(nodeId: string, held: MemberInfo): AuditError {
  return new AuditError(
    AuditErrorCode.NODE_ID_IN_USE,
    `node id ${nodeId} is in use by another running node (${held.url}, another data dir): two processes under one id take each other for themselves and can strand acknowledged events, so this one takes no part. Give each node its own --node-id`,
  );
}
