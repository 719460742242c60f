/** What each node publishes about itself, so peers find each other without a static list. */
export interface MemberInfo {
  nodeId: string;
  url: string;
  role: 'leader' | 'standby';
  /** The newest term the node knows. */
  term: number;
  /** Where its log ends: the last seq and the term of that entry (elections compare these). */
  lastSeq: number;
  lastTerm: number;
  /** The publisher's wall clock when it published. */
  updatedAtMs: number;
  /**
   * Which data dir publishes under this node id (random, kept in its store): two running
   * processes given one `--node-id` differ here, a node restarted on its own data dir does not.
   * Absent from nodes of versions before it.
   */
  instance?: string;
  /**
   * The node stepped down because its standbys no longer reached it (LeaderElector,
   * CUT_OFF_TTLS) and does not campaign for a while: candidates leave its log out of the
   * election restriction. Absent otherwise, and from nodes of versions before it.
   */
  yielding?: true;
  /** The node leaves a yielding member out of its election restriction (versions before it do not): a leader steps down for being cut off only when every live standby does. */
  honoursYielding?: true;
}

export interface LeaderRecord {
  nodeId: string;
  term: number;
}

/**
 * The cluster's shared view: the leader lease, the term counter and the members. The
 * production implementation is Redis (RedisCoordinator); InMemoryCoordinator implements the
 * same semantics for the deterministic simulator. Every call rejects while the coordinator is
 * unreachable; none is queued.
 *
 * Semantics every implementation keeps (the conformance suite checks them):
 * - `campaign(knownTerm)` wins only when nobody holds the lease, and then takes a term above
 *   both every term handed out before and `knownTerm`, in one atomic step;
 * - a lease lasts `leaseTtlMs` from the last successful campaign or renew, on the
 *   coordinator's clock; `renew` and `resign` act only for the holder in that term;
 * - `raiseTermFloor` never lowers the counter; member records expire 3 lease TTLs after
 *   they were last published, and one published within the last lease TTL is not replaced by
 *   another instance's.
 */
export interface Coordinator {
  /** The new term (above `knownTerm`), or 0 when someone holds the lease. */
  campaign(knownTerm: number): Promise<number>;
  /** Puts the term counter back to at least `knownTerm` (after the coordinator lost its data). */
  raiseTermFloor(knownTerm: number): Promise<void>;
  /** Extends this node's lease for `term`; false when it is no longer ours. */
  renew(term: number): Promise<boolean>;
  /** Gives the lease up if this node holds it in `term`. */
  resign(term: number): Promise<void>;
  /** The current lease holder, if any. */
  leader(): Promise<LeaderRecord | undefined>;
  /** The highest term ever handed out. */
  latestTerm(): Promise<number>;
  /**
   * Publishes this node's member record; undefined when published. When another instance
   * published the same node id within the last lease TTL (a second process running under that
   * id), its record is left as it is and returned.
   */
  publish(info: MemberInfo): Promise<MemberInfo | undefined>;
  /** Members whose record has not expired. */
  members(): Promise<MemberInfo[]>;
  /**
   * The secret nodes present to each other's internal endpoints: created by the first node
   * to ask, or put back from `remembered` after the coordinator lost it. `withData`: the asker
   * remembers `remembered` and its log holds entries. A token set by a node without data (a
   * new node that asked first after the coordinator lost its data) is replaced by the
   * remembered token of one with data, which the cluster's nodes hold; one set or confirmed by a
   * node with data never is (a node of another cluster must not take this one over).
   */
  clusterToken(remembered: string | undefined, withData?: boolean): Promise<string>;
  close(): Promise<void>;
}
