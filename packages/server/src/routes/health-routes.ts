import type { FastifyInstance } from 'fastify';
import type { NodeMetrics } from '../metrics.js';

/** `/health` and `/metrics`: open, and never audited (they carry no audit data). */
export function registerHealthRoutes(app: FastifyInstance, metrics: NodeMetrics, role: () => string): void {
  app.get('/health', async () => ({ status: 'ok', role: role() }));
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
