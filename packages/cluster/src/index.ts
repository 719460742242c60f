export { ClusterNode, type ClusterHooks, type ClusterMemberStatus, type ClusterNodeOptions, type ClusterNodeStatus, type HeldByStandbys, type Received } from './cluster-node.js';
export { ClusterToken } from './cluster-token.js';
export { systemClock, type Clock, type Timer } from './clock.js';
export type { ClusterLog, LeaderView, LogEnd, NodeRole } from './leader-elector.js';
export { nodeIdInUse } from './leader-elector.js';
export type { ForwardRequest, ForwardResponse, PeerTransport, PullRequest, PullResponse, TermStart } from './protocol.js';
export type { Coordinator, LeaderRecord, MemberInfo } from './coordinator.js';
export { RedisCoordinator, type RedisCoordinatorOptions } from './redis-coordinator.js';
export { InMemoryCoordinator, InMemoryCoordinatorState, type CoordinatorLink } from './in-memory-coordinator.js';
