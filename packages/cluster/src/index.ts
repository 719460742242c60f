export { ClusterNode, type ClusterHooks, type ClusterNodeOptions, type ClusterNodeStatus } from './cluster-node.js';
export type { ClusterLog, LeaderView, NodeRole } from './leader-elector.js';
export type { ForwardRequest, ForwardResponse, PeerTransport, PullRequest, PullResponse, TermStart } from './protocol.js';
export { Coordinator, type MemberInfo } from './coordinator.js';
