import type { FastifyInstance } from 'fastify';
import type { SettingsService } from '../settings-service.js';
import './route-access.js';

/** tierStatus as the reference shapes it; no sweep runs until tiering is built. */
function tierStatus(settings: SettingsService) {
  const effective = settings.effective;
  return {
    mode: effective.tierMode,
    lastSuccessMs: 0,
    lastFailureMs: 0,
    lastError: null,
    retainLocalDays: effective.tierRetainLocalDays,
  };
}

export function registerSettingsRoutes(app: FastifyInstance, settings: SettingsService): void {
  const view = () => ({ ...settings.current, tierStatus: tierStatus(settings) });
  app.get('/admin/audit/settings', { config: { access: { role: 'admin', action: 'audit:ReadSettings' } } }, async () => view());
  app.post('/admin/audit/settings', { config: { access: { role: 'admin', action: 'audit:UpdateSettings' } } }, async (request) => {
    await settings.update(request.body, request.principal?.name ?? 'unknown');
    return view();
  });
}
