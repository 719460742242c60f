import type { Clock } from './clock.js';

/** A standby's progress as the leader last heard it in the current term. */
export interface StandbyProgress {
  nodeId: string;
  /** The standby holds this leader's log up to here (its last pull matched there). */
  appliedSeq: number;
  /**
   * This node's monotonic clock when it heard. Its wall clock made a dead standby, after that
   * clock stepped back, look heard from just now (the age clamped to 0), and tiering waited at
   * the dead standby's seq until the node forgot it.
   */
  heardAtMs: number;
  /**
   * Pulls in a row that asked again from `appliedSeq` after this leader had sent entries past
   * it: the standby receives them and does not apply them (a node of an older version that
   * cannot read this leader's records, a disk that refuses writes). 0 once it moves on.
   */
  repeatedPulls: number;
  /** This leader sent entries past `appliedSeq` in answer to the last pull. */
  sentPast: boolean;
}

/**
 * Repeated pulls (StandbyProgress.repeatedPulls) from which a standby counts as not applying
 * what it is sent. More than a slow link costs: a standby whose pulls time out halves what it
 * asks for each time (ReplicationFollower), from 2,000 entries down to 1 in 11 pulls, so one that
 * only needs smaller answers is never named. A standby that refuses every entry gets there in a
 * few seconds (its retries back off from 50 ms).
 */
export const NOT_APPLYING_PULLS = 12;

/** Node ids whose last pull this node keeps: far more than any cluster has members. */
export const PULLS_HEARD_MAX = 1024;

/**
 * The leader's record of how far each standby holds its log, for one term at a time: only
 * pulls that matched this leader's log in the term it leads are recorded, and a new term
 * starts from nothing, so neither another leader's log nor an unmatched claim can make an
 * entry look replicated. Listeners hear of every change (ack=replicated waits on them).
 */
export class ReplicationTracker {
  readonly #clock: Clock;
  #term = 0;
  #progress = new Map<string, StandbyProgress>();
  /** When each node's last pull request reached this node, in any term and whatever it matched (monotonic). */
  readonly #pullsHeard = new Map<string, number>();
  readonly #listeners = new Set<() => void>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** The term the progress belongs to (0 before any). */
  get term(): number {
    return this.#term;
  }

  /**
   * A pull request of `nodeId` reached this node (before any check of it): the node reaches
   * this one, whatever its log. A leader that the standbys no longer reach steps down
   * (LeaderElector, CUT_OFF_TTLS).
   */
  pullHeard(nodeId: string): void {
    // Kept in the order last heard, the least recent first, and at most PULLS_HEARD_MAX: a node
    // id is a name a pull gives, and one that never comes back (a pod restarted under a new id,
    // or ids made up by a sender holding the cluster token) must not stay for good.
    this.#pullsHeard.delete(nodeId);
    this.#pullsHeard.set(nodeId, this.#clock.monotonicMs());
    if (this.#pullsHeard.size > PULLS_HEARD_MAX) this.#pullsHeard.delete(this.#pullsHeard.keys().next().value as string);
  }

  /** When `nodeId`'s last pull request reached this node (monotonic), or undefined. */
  lastPullMs(nodeId: string): number | undefined {
    return this.#pullsHeard.get(nodeId);
  }

  /** `nodeId`'s pull matched this leader's log at `seq` in `term`. */
  record(term: number, nodeId: string, seq: number): void {
    if (term < this.#term) return;
    if (term > this.#term) {
      this.#term = term;
      this.#progress = new Map();
    }
    const previous = this.#progress.get(nodeId);
    const appliedSeq = Math.max(seq, previous?.appliedSeq ?? 0);
    const repeated = previous !== undefined && previous.sentPast && seq === previous.appliedSeq;
    this.#progress.set(nodeId, { nodeId, appliedSeq, heardAtMs: this.#clock.monotonicMs(), repeatedPulls: repeated ? previous.repeatedPulls + 1 : 0, sentPast: false });
    for (const listener of [...this.#listeners]) listener();
  }

  /**
   * This leader answered `nodeId`'s pull from `after` with entries past it (after `record`).
   * Returns true when the standby has just come to count as not applying what it is sent.
   */
  sent(term: number, nodeId: string, after: number): boolean {
    const p = this.#progress.get(nodeId);
    if (term !== this.#term || p === undefined || p.appliedSeq !== after) return false;
    p.sentPast = true;
    return p.repeatedPulls === NOT_APPLYING_PULLS;
  }

  /** The standbys that keep asking from the same seq after being sent entries past it (repeatedPulls). */
  notApplying(): string[] {
    return [...this.#progress.values()].filter((p) => p.repeatedPulls >= NOT_APPLYING_PULLS).map((p) => p.nodeId);
  }

  /**
   * This leader's log was cut after `seq` (it took a tier's record of entries it lacked in
   * place of its own): what a standby held past it is no longer this log, whatever its pulls
   * matched before. Its progress counts again from its next matched pull.
   */
  cutAfter(seq: number): void {
    for (const [nodeId, p] of this.#progress) if (p.appliedSeq > seq) this.#progress.set(nodeId, { ...p, appliedSeq: seq, repeatedPulls: 0, sentPast: false });
  }

  /** True once a standby holds this leader's log up to `seq` in `term`. */
  confirmed(term: number, seq: number): boolean {
    if (term !== this.#term) return false;
    for (const p of this.#progress.values()) if (p.appliedSeq >= seq) return true;
    return false;
  }

  /** Calls `listener` after each recorded pull. Returns an unsubscribe. */
  onProgress(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The current term's progress of each standby heard from. */
  get progress(): StandbyProgress[] {
    return [...this.#progress.values()];
  }
}
