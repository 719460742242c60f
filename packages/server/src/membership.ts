import type { ClusterNode, ClusterNodeStatus } from '@auditlake/cluster';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';

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
  waitForReplication(seq: number, timeoutMs: number): Promise<boolean>;
  outboxChanged(): void;
}

/** A node without a coordinator: always its own leader, term 0, no standbys. */
export function singleNodeMembership(nodeId: string, url: () => string, store: AuditStore): Membership {
  return {
    coordinated: false,
    isLeader: () => true,
    term: () => 0,
    leaderUrl: () => undefined,
    async status() {
      const self = { nodeId, url: url(), role: 'leader', appliedSeq: store.position.lastSeq, lagMs: 0 };
      return { nodeId, role: 'leader', term: 0, leader: { nodeId, url: url() }, nodes: [self] };
    },
    waitForReplication: async () => false,
    outboxChanged: () => undefined,
  };
}

export function clusterMembership(cluster: ClusterNode): Membership {
  return {
    coordinated: true,
    isLeader: () => cluster.isLeader(),
    term: () => cluster.elector.knownTerm,
    leaderUrl: () => (cluster.isLeader() ? undefined : cluster.leader?.url),
    status: () => cluster.status(),
    waitForReplication: (seq, timeoutMs) => cluster.waitForReplication(seq, timeoutMs),
    outboxChanged: () => cluster.outboxChanged(),
  };
}

/** A cluster node before it has joined: not leader, no known leader, everything to the outbox. */
export function joiningMembership(): Membership {
  return {
    coordinated: true,
    isLeader: () => false,
    term: () => 0,
    leaderUrl: () => undefined,
    status: () => Promise.reject(new AuditError(AuditErrorCode.NOT_LEADER, 'this node has not joined its cluster yet', { retryable: true })),
    waitForReplication: async () => false,
    outboxChanged: () => undefined,
  };
}
