import type { FastifyInstance } from 'fastify';
import type { Membership } from '../membership.js';
import './route-access.js';

/** `GET /admin/cluster`: this node's view — role, term, leader, and every live node's lag. */
export function registerClusterRoute(app: FastifyInstance, membership: Membership): void {
  app.get('/admin/cluster', { config: { access: { role: 'admin', action: 'audit:ReadCluster' } } }, async () => membership.status());
}
