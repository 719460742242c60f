import { AuditError, AuditErrorCode, settingsView } from '@auditlake/model';
import type { FastifyInstance } from 'fastify';
import { proxyToLeader } from '../leader-proxy.js';
import type { Membership } from '../membership.js';
import type { SettingsService } from '../settings-service.js';
import type { TieringService } from '../tiering-service.js';
import './route-access.js';

export function registerSettingsRoutes(app: FastifyInstance, settings: SettingsService, membership: Membership, tiering: TieringService): void {
  // Numbers and booleans as JSON numbers and booleans; the answer can be posted back as it is.
  const view = async () => ({ ...settingsView(settings.current), tierStatus: await tiering.status() });
  app.get('/admin/audit/settings', { config: { access: { role: 'admin', action: 'audit:ReadSettings' } } }, async (request, reply) => {
    if (await proxyToLeader(membership.leaderUrl(), request, reply)) return reply;
    return membership.isLeader() ? view() : { ...(await view()), stale: true };
  });
  app.post('/admin/audit/settings', { config: { access: { role: 'admin', action: 'audit:UpdateSettings' } } }, async (request, reply) => {
    if (await proxyToLeader(membership.leaderUrl(), request, reply)) return reply;
    if (!membership.isLeader()) {
      throw new AuditError(AuditErrorCode.NOT_LEADER, 'no leader is reachable, so settings cannot be changed now (nothing was saved); retry once a leader is elected', { retryable: true });
    }
    await settings.update(request.body, request.principal?.name ?? 'unknown');
    return view();
  });
}
