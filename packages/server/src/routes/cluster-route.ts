import type { FastifyInstance } from 'fastify';
import type { AuditStore } from '@auditlake/store';
import './route-access.js';

export interface ClusterView {
  nodeId: string;
  /** Known only once the server listens (port 0). */
  url: () => string;
  store: AuditStore;
}

/** `GET /admin/cluster` for a single node: its own leader, term 0, no peers. */
export function registerClusterRoute(app: FastifyInstance, view: ClusterView): void {
  app.get('/admin/cluster', { config: { access: { role: 'admin', action: 'audit:ReadCluster' } } }, async () => {
    const url = view.url();
    const self = { nodeId: view.nodeId, url, role: 'leader', appliedSeq: view.store.position.lastSeq, lagMs: 0 };
    return { nodeId: view.nodeId, role: 'leader', term: 0, leader: { nodeId: view.nodeId, url }, nodes: [self] };
  });
}
