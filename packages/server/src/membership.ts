import type { ClusterNode, ClusterNodeStatus, HeldByStandbys, Received } from '@auditlake/cluster';
import { AuditError, AuditErrorCode, type EncodedEvent } from '@auditlake/model';
import type { AuditStore, Sequencer } from '@auditlake/store';

export type { Received };

/** What the HTTP layer needs to know about this node's place in the cluster. */
export interface Membership {
  /** False for a node started without `--coordinator` (its own leader, no peers). */
  readonly coordinated: boolean;
  isLeader(): boolean;
  /** The term this node's commits carry (0 without a coordinator). */
  term(): number;
  /** The leader's URL when another node leads; undefined when this node leads or none does. */
  leaderUrl(): string | undefined;
  status(): Promise<ClusterNodeStatus>;
  /** Who may order events this node writes itself (settings changes): the leader's term, or AUDIT_NOT_LEADER. */
  readonly sequencer: Sequencer;
  /** Stores received events durably: in the log when this node orders, else in the outbox. */
  receive(events: readonly EncodedEvent[], freshIds?: ReadonlySet<string>, sender?: string): Promise<Received>;
  /** `ack=replicated`: true once the events are confirmed on another node, false after `timeoutMs`. */
  confirmReplicated(events: ReadonlyArray<Pick<EncodedEvent, 'eventId'>>, timeoutMs: number): Promise<boolean>;
  /** The highest seq every reachable standby holds (what the leader may tier); undefined: no bound. */
  heldByStandbys(): HeldByStandbys | undefined;
  /** A cluster's: a term above every one handed out, for the leader's own records (a tier adoption's). */
  reserveTerm?: () => Promise<number>;
  /** A cluster's: takes in a term a tier's rows show (ClusterNode.learnTerm). */
  learnTerm?: (term: number) => Promise<void>;
}

/** A node without a coordinator: always its own leader, term 0, no standbys. */
export function singleNodeMembership(nodeId: string, url: () => string, store: AuditStore): Membership {
  return {
    coordinated: false,
    isLeader: () => true,
    term: () => 0,
    leaderUrl: () => undefined,
    async status() {
      const self = { nodeId, url: url(), role: 'leader' as const, appliedSeq: store.position.lastSeq, lagMs: 0, lastHeardMs: 0 };
      return { nodeId, role: 'leader', term: 0, leader: { nodeId, url: url() }, nodes: [self], erasedIdsOwed: false, erasedIdsTakenThrough: 0 };
    },
    sequencer: () => 0,
    receive: async (events, freshIds, sender) => ({ path: 'log', result: await store.appendEncoded(events, { ...(freshIds ? { freshIds } : {}), ...(sender === undefined ? {} : { lookupSender: sender }) }) }),
    // Ingest refuses ack=replicated on a single node before storing anything.
    confirmReplicated: () => Promise.reject(new AuditError(AuditErrorCode.BAD_REQUEST, 'ack=replicated needs a standby, and this node runs without a cluster (--coordinator)')),
    heldByStandbys: () => undefined,
  };
}

export function clusterMembership(cluster: ClusterNode, leaderProven: (url: string) => boolean = () => true): Membership {
  return {
    coordinated: true,
    isLeader: () => cluster.isLeader(),
    term: () => cluster.elector.knownTerm,
    // A leader not proven to hold the cluster secret (when one is set) is not handed client
    // requests: they carry the client's Authorization, and the coordinator that names the leader
    // may have been rewritten to name someone else. The local replica answers instead.
    leaderUrl: () => {
      if (cluster.isLeader()) return undefined;
      const url = cluster.leader?.url;
      return url !== undefined && leaderProven(url) ? url : undefined;
    },
    status: () => cluster.status(),
    sequencer: cluster.elector.sequencer,
    receive: (events, freshIds, sender) => cluster.receive(events, freshIds, sender),
    confirmReplicated: (events, timeoutMs) => cluster.confirmReplicated(events, timeoutMs),
    heldByStandbys: () => cluster.heldByStandbys(),
    reserveTerm: () => cluster.reserveTerm(),
    learnTerm: (term) => cluster.learnTerm(term),
  };
}
