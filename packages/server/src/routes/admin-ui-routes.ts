import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ADMIN_UI_HTML, ADMIN_UI_SCRIPT, ADMIN_UI_SCRIPT_PATH } from '../admin-ui/page.js';

/** The page's own script only; data comes from this origin's API with the user's token. */
const CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'";

/** A browser navigating to a URL (docs/http-api.md: `Accept: text/html` gets the Admin UI page). */
export function wantsPage(request: FastifyRequest): boolean {
  return request.method === 'GET' && (request.headers.accept ?? '').includes('text/html');
}

export function sendAdminPage(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .header('x-content-type-options', 'nosniff')
    .send(ADMIN_UI_HTML);
}

/**
 * The Admin UI's page and script. Open like /health: they hold no data, and every search the
 * page makes goes through the authenticated API.
 */
export function registerAdminUiRoutes(app: FastifyInstance): void {
  app.get('/admin/audit/search', async (_request, reply) => sendAdminPage(reply));
  app.get(ADMIN_UI_SCRIPT_PATH, async (_request, reply) =>
    reply.header('content-type', 'text/javascript; charset=utf-8').header('x-content-type-options', 'nosniff').send(ADMIN_UI_SCRIPT),
  );
}
