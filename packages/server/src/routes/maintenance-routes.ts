import { AuditError, AuditErrorCode, jsonForMessage } from '@auditlake/model';
import type { FastifyInstance } from 'fastify';
import { LONG_PROXY_TIMEOUT_MS, proxyToLeader } from '../leader-proxy.js';
import type { Membership } from '../membership.js';
import type { TieringService } from '../tiering-service.js';
import './route-access.js';

/**
 * The table maintenance API: registrations with their last runs, and a run on demand; and the
 * way out of a tier that holds entries the leader's log lacks (adopt).
 */
export function registerMaintenanceRoutes(app: FastifyInstance, membership: Membership, tiering: TieringService): void {
  app.get('/admin/audit/maintenance', { config: { access: { role: 'admin', action: 'audit:ReadMaintenance' } } }, async (request, reply) => {
    if (await proxyToLeader(membership.leaderUrl(), request, reply)) return reply;
    const registrations = tiering.maintenance.registrations();
    return membership.isLeader() ? { registrations } : { registrations, stale: true };
  });
  app.post('/admin/audit/maintenance/run', { config: { access: { role: 'admin', action: 'audit:RunMaintenance' } } }, async (request, reply) => {
    // A run (or an adoption's sweep) takes as long as its work: wait for it.
    if (await proxyToLeader(membership.leaderUrl(), request, reply, { timeoutMs: LONG_PROXY_TIMEOUT_MS })) return reply;
    const body = (request.body ?? {}) as unknown;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new AuditError(AuditErrorCode.BAD_REQUEST, 'maintenance run request must be a JSON object, optionally {"table": "catalog.schema.table"}');
    const table = (body as Record<string, unknown>)['table'];
    if (table !== undefined && typeof table !== 'string') throw new AuditError(AuditErrorCode.BAD_REQUEST, `table must be a string: ${jsonForMessage(table)}`);
    const runs = await tiering.maintenance.runNow(request.principal?.name ?? 'unknown', table);
    return table === undefined ? { runs } : runs[0];
  });
  app.post('/admin/audit/tier/adopt', { config: { access: { role: 'admin', action: 'audit:AdoptTier' } } }, async (request, reply) => {
    // A run (or an adoption's sweep) takes as long as its work: wait for it.
    if (await proxyToLeader(membership.leaderUrl(), request, reply, { timeoutMs: LONG_PROXY_TIMEOUT_MS })) return reply;
    const body = (request.body ?? {}) as unknown;
    const throughSeq = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>)['throughSeq'] : undefined;
    if (typeof throughSeq !== 'number' || !Number.isSafeInteger(throughSeq) || throughSeq < 1) {
      throw new AuditError(AuditErrorCode.BAD_REQUEST, `adopt request must be {"throughSeq": N}, N the tier's watermark seq named in tierStatus.lastError; throughSeq was ${typeof throughSeq === 'number' ? throughSeq : typeof throughSeq}`);
    }
    return tiering.adoptTier(throughSeq, request.principal?.name ?? 'unknown');
  });
}
