import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { roleAllows, type Authenticator } from './auth/authenticator.js';
import type { DenyRecorder } from './auth/deny-recorder.js';
import { toHttpError } from './http-errors.js';
import type { NodeMetrics } from './metrics.js';
import type { AdminUiFiles } from './admin-ui/admin-ui-files.js';
import { isPageView, sendAdminPage } from './routes/admin-ui-routes.js';
import './routes/route-access.js';

export interface HttpAppOptions {
  bodyLimitBytes: number;
  authenticator: Authenticator;
  denyRecorder: DenyRecorder;
  metrics: NodeMetrics;
  logger: NonNullable<FastifyServerOptions['logger']>;
  /** The built Admin UI, served to browsers at its page URLs. */
  adminUi: AdminUiFiles;
}

/**
 * The fastify instance with what every route shares: authentication and roles (before the
 * body is read, so an unauthenticated caller cannot make the node parse 8 MiB), the error
 * shape, and request latency metrics.
 */
export function createHttpApp(options: HttpAppOptions): FastifyInstance {
  const app = Fastify({
    bodyLimit: options.bodyLimitBytes,
    logger: options.logger,
    // One debug line per request (onResponse below) instead of fastify's two info lines.
    logController: new LogController({ disableRequestLogging: true }),
    // Tokens travel in headers; fastify's default serializers log neither headers nor bodies.
    return503OnClosing: true,
    // Plain JSON.parse: no body is ever merged into an existing object (events are rebuilt
    // field by field, settings keys are checked against a fixed list), so prototype-poisoning
    // scans of every 8 MiB body buy nothing; they measured ~3% of ingest CPU.
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
  });

  app.addHook('onRequest', async (request, reply) => {
    // A browser navigating to a UI page gets the page (it holds no data; its API calls carry
    // the token), whatever API shares the URL, and is neither authenticated nor audited.
    if (isPageView(request)) return sendAdminPage(reply, options.adminUi);
    const access = request.routeOptions.config.access;
    if (!access) return;
    const resource = `${request.method} ${request.routeOptions.url ?? request.url}`;
    const result = options.authenticator.authenticate(request.headers.authorization);
    if (!result.ok) {
      options.metrics.accessDenied.inc({ status: '401' });
      options.denyRecorder.refuse({ status: 401, userId: 'anonymous', action: 'auth:Authenticate', resource, reason: result.reason, clientAddress: request.ip });
      reply.header('www-authenticate', 'Token, Bearer, AccessKey');
      return reply.code(401).send({ status: 'error', error: `authentication required: ${result.reason}`, code: 'AUDIT_UNAUTHENTICATED' });
    }
    if (!roleAllows(result.principal.role, access.role)) {
      options.metrics.accessDenied.inc({ status: '403' });
      const reason = `role ${result.principal.role} may not ${access.action} (needs ${access.role})`;
      options.denyRecorder.refuse({ status: 403, userId: result.principal.name, action: access.action, resource, reason, clientAddress: request.ip });
      return reply.code(403).send({ status: 'error', error: `forbidden: ${reason}`, code: 'AUDIT_FORBIDDEN' });
    }
    request.principal = result.principal;
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    request.log.debug({ method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
    options.metrics.httpDuration.observe({ method: request.method, route, status_code: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });

  app.setErrorHandler(async (err, request, reply) => {
    const { statusCode, body } = toHttpError(err);
    if (statusCode >= 500) request.log.error({ err }, 'request failed');
    if (statusCode === 413 && request.routeOptions.url === '/v1/api/audit') options.metrics.eventsRefused.inc();
    return reply.code(statusCode).send(body);
  });

  app.setNotFoundHandler(async (request, reply) => {
    return reply.code(404).send({ status: 'error', error: `no such endpoint: ${request.method} ${request.url.split('?')[0] ?? ''}`, code: 'AUDIT_NOT_FOUND' });
  });

  return app;
}
