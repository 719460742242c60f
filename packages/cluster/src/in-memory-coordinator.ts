import type { Clock } from './clock.js';
import type { Coordinator, LeaderRecord, MemberInfo } from './coordinator.js';

/**
 * Carries one coordinator call to the shared state and its answer back. The simulator's link
 * delays, reorders or loses calls and fails them while the coordinator is down; the default
 * runs the call at once.
 */
export type CoordinatorLink = <T>(operation: () => T) => Promise<T>;

/**
 * What Redis holds for a cluster, in memory, with the same semantics as RedisCoordinator's
 * scripts (see Coordinator): for the deterministic simulator, where a real Redis would bring
 * its own clock and scheduling. Leases and member records expire on `clock`.
 */
export class InMemoryCoordinatorState {
  readonly #clock: Clock;
  readonly #newToken: () => string;
  #lease: { nodeId: string; term: number; expiresAtMs: number } | undefined;
  #term = 0;
  readonly #members = new Map<string, { info: MemberInfo; expiresAtMs: number }>();
  #token: string | undefined;
  /** Whether a node with data set or confirmed the token (Coordinator.clusterToken). */
  #tokenWithData = false;
  /** False while the coordinator is down: every call fails. */
  reachable = true;

  constructor(options: { clock: Clock; newToken: () => string }) {
    this.#clock = options.clock;
    this.#newToken = options.newToken;
  }

  /** A restart that lost every key (Redis without persistence). */
  loseData(): void {
    this.#lease = undefined;
    this.#term = 0;
    this.#members.clear();
    this.#token = undefined;
    this.#tokenWithData = false;
  }

  #now(): number {
    return this.#clock.monotonicMs();
  }

  #liveLease() {
    if (this.#lease !== undefined && this.#lease.expiresAtMs <= this.#now()) this.#lease = undefined;
    return this.#lease;
  }

  #assertReachable(): void {
    if (!this.reachable) throw new Error('coordinator unreachable');
  }

  campaign(nodeId: string, leaseTtlMs: number, knownTerm: number): number {
    this.#assertReachable();
    if (this.#liveLease() !== undefined) return 0;
    let term = this.#term + 1;
    if (term <= knownTerm) term = knownTerm + 1;
    this.#term = term;
    this.#lease = { nodeId, term, expiresAtMs: this.#now() + leaseTtlMs };
    return term;
  }

  raiseTermFloor(knownTerm: number): void {
    this.#assertReachable();
    this.#term = Math.max(this.#term, knownTerm);
  }

  renew(nodeId: string, term: number, leaseTtlMs: number): boolean {
    this.#assertReachable();
    const lease = this.#liveLease();
    if (lease === undefined || lease.nodeId !== nodeId || lease.term !== term) return false;
    lease.expiresAtMs = this.#now() + leaseTtlMs;
    return true;
  }

  resign(nodeId: string, term: number): void {
    this.#assertReachable();
    const lease = this.#liveLease();
    if (lease !== undefined && lease.nodeId === nodeId && lease.term === term) this.#lease = undefined;
  }

  leader(): LeaderRecord | undefined {
    this.#assertReachable();
    const lease = this.#liveLease();
    return lease === undefined ? undefined : { nodeId: lease.nodeId, term: lease.term };
  }

  latestTerm(): number {
    this.#assertReachable();
    return this.#term;
  }

  publish(info: MemberInfo, leaseTtlMs: number): MemberInfo | undefined {
    this.#assertReachable();
    const held = this.#members.get(info.nodeId);
    // Another instance's record refreshed within the last TTL stays (the Redis script's rule).
    if (held !== undefined && info.instance !== undefined && held.info.instance !== undefined && held.info.instance !== info.instance && held.expiresAtMs - this.#now() > 2 * leaseTtlMs) return { ...held.info };
    this.#members.set(info.nodeId, { info: { ...info }, expiresAtMs: this.#now() + 3 * leaseTtlMs });
    return undefined;
  }

  members(): MemberInfo[] {
    this.#assertReachable();
    const live: MemberInfo[] = [];
    for (const [nodeId, member] of this.#members) {
      if (member.expiresAtMs <= this.#now()) this.#members.delete(nodeId);
      else live.push({ ...member.info });
    }
    return live;
  }

  clusterToken(remembered: string | undefined, withData = false): string {
    this.#assertReachable();
    if (this.#token === undefined || (withData && remembered !== undefined && !this.#tokenWithData)) this.#token = remembered ?? this.#newToken();
    if (withData && this.#token === remembered) this.#tokenWithData = true;
    return this.#token;
  }
}

const DIRECT: CoordinatorLink = async (operation) => operation();

/** One node's client of an InMemoryCoordinatorState. */
export class InMemoryCoordinator implements Coordinator {
  readonly #state: InMemoryCoordinatorState;
  readonly #nodeId: string;
  readonly #leaseTtlMs: number;
  readonly #link: CoordinatorLink;

  constructor(state: InMemoryCoordinatorState, options: { nodeId: string; leaseTtlMs: number; link?: CoordinatorLink }) {
    this.#state = state;
    this.#nodeId = options.nodeId;
    this.#leaseTtlMs = options.leaseTtlMs;
    this.#link = options.link ?? DIRECT;
  }

  campaign(knownTerm: number): Promise<number> {
    return this.#link(() => this.#state.campaign(this.#nodeId, this.#leaseTtlMs, knownTerm));
  }

  raiseTermFloor(knownTerm: number): Promise<void> {
    return this.#link(() => this.#state.raiseTermFloor(knownTerm));
  }

  renew(term: number): Promise<boolean> {
    return this.#link(() => this.#state.renew(this.#nodeId, term, this.#leaseTtlMs));
  }

  resign(term: number): Promise<void> {
    return this.#link(() => this.#state.resign(this.#nodeId, term));
  }

  leader(): Promise<LeaderRecord | undefined> {
    return this.#link(() => this.#state.leader());
  }

  latestTerm(): Promise<number> {
    return this.#link(() => this.#state.latestTerm());
  }

  publish(info: MemberInfo): Promise<MemberInfo | undefined> {
    return this.#link(() => this.#state.publish(info, this.#leaseTtlMs));
  }

  members(): Promise<MemberInfo[]> {
    return this.#link(() => this.#state.members());
  }

  clusterToken(remembered: string | undefined, withData?: boolean): Promise<string> {
    return this.#link(() => this.#state.clusterToken(remembered, withData));
  }

  async close(): Promise<void> {}
}
