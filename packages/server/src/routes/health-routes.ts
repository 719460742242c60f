import { writeFaultRefusal } from '@auditlake/store';
import type { FastifyInstance } from 'fastify';
import type { HostNames } from '../host-names.js';
import type { NodeMetrics } from '../metrics.js';

/**
 * `/health` and `/metrics`: open, and never audited (they carry no audit data). They answer the
 * node's state (its role; counts of events, refusals and ledger holes, node ids), so only under
 * a Host name the node knows (see HostNames): not to a web page through DNS rebinding.
 */
export function registerHealthRoutes(app: FastifyInstance, metrics: NodeMetrics, state: { role: () => string; storeFault: () => Error | undefined }, hosts: HostNames): void {
  const onRequest = async (request: { headers: { host?: string | undefined }; routeOptions: { url?: string | undefined } }) => hosts.check(request.headers.host, request.routeOptions.url ?? '');
  app.get('/health', { onRequest }, async (_request, reply) => {
    const fault = state.storeFault();
    // A store that failed a write takes no events until the node restarts: not healthy.
    if (fault !== undefined) return reply.code(503).send({ status: 'store-write-failed', role: state.role(), error: writeFaultRefusal(fault).message });
    return { status: 'ok', role: state.role() };
  });
  app.get('/metrics', { onRequest }, async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
