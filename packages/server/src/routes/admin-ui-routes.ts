import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AdminUiFiles } from '../admin-ui/admin-ui-files.js';

/** The Admin UI's pages: one HTML document each, which loads its data from the API with the user's token. */
export const ADMIN_UI_PAGES: ReadonlySet<string> = new Set(['/admin/audit', '/admin/audit/search', '/admin/audit/maintenance']);
const ASSET_PREFIX = '/admin/audit/assets/';

/**
 * Scripts, styles and data from this origin only; no inline script or style, no framing, no
 * form posting elsewhere. The page holds no data: everything comes from the API.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * A browser navigating to a URL (`Accept: text/html`): it gets the Admin UI page, not the API
 * answer. HEAD is answered as GET is (its headers, no body), as for every other route.
 */
export function wantsPage(request: FastifyRequest): boolean {
  return (request.method === 'GET' || request.method === 'HEAD') && (request.headers.accept ?? '').includes('text/html');
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return (q === -1 ? url : url.slice(0, q)).replace(/\/+$/, '') || '/';
}

/**
 * True when `request` is for one of the UI's page URLs, which answer a page or an API answer by
 * `Accept` (`/admin/audit`): their answers say so (`Vary: Accept`), so no cache hands a browser
 * the JSON or an API client the page.
 */
export function isPageUrl(request: FastifyRequest): boolean {
  return ADMIN_UI_PAGES.has(pathOf(request.url));
}

/** True when `request` is a browser asking for one of the UI's pages (answered before authentication). */
export function isPageView(request: FastifyRequest): boolean {
  return wantsPage(request) && isPageUrl(request);
}

export function sendAdminPage(reply: FastifyReply, ui: AdminUiFiles): FastifyReply {
  return reply
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .header('x-content-type-options', 'nosniff')
    // frame-ancestors 'none' says it to browsers that read CSP; older ones and some proxies read only this.
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    // Revalidated each time: a new build's page names new asset files.
    .header('cache-control', 'no-cache')
    .send(ui.html);
}

/**
 * The UI's assets (hashed names, so cached for good), and page-only routes for the UI paths
 * that no API route answers. Open like /health: they hold no data. Register after every API
 * route: a path an API route owns (`/admin/audit`) is answered for browsers by the page hook
 * in http-app instead.
 */
export function registerAdminUiRoutes(app: FastifyInstance, ui: AdminUiFiles): void {
  app.get(`${ASSET_PREFIX}:name`, async (request, reply) => {
    const asset = ui.assets.get((request.params as { name: string }).name);
    if (asset === undefined) {
      // As any 404: it quotes the URL asked for, so it is neither cached nor sniffed.
      return reply
        .code(404)
        .header('cache-control', 'no-store')
        .header('x-content-type-options', 'nosniff')
        .send({ status: 'error', error: `no such Admin UI asset: ${request.url.split('?')[0] ?? ''}`, code: 'AUDIT_NOT_FOUND' });
    }
    return reply.header('content-type', asset.contentType).header('x-content-type-options', 'nosniff').header('cache-control', 'public, max-age=31536000, immutable').send(asset.body);
  });
  for (const path of ADMIN_UI_PAGES) {
    if (!app.hasRoute({ method: 'GET', url: path })) app.get(path, async (_request, reply) => sendAdminPage(reply, ui));
  }
}
