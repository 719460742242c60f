import { Gauge } from 'prom-client';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { AuditErrorCode, isAuditError } from '@auditlake/model';
import { roleAllows, type Authenticator } from './auth/authenticator.js';
import type { DenyRecorder, RefusedAccess } from './auth/deny-recorder.js';
import { assertIdentityEncoding, assertUtf8Charset } from './body-charset.js';
import { guardRequestBodies } from './body-guard.js';
import { toHttpError } from './http-errors.js';
import type { NodeMetrics } from './metrics.js';
import type { AdminUiFiles } from './admin-ui/admin-ui-files.js';
import { isPageUrl, isPageView, sendAdminPage } from './routes/admin-ui-routes.js';
import { redactUrl } from './url-redaction.js';
import './routes/route-access.js';

export interface HttpAppOptions {
  bodyLimitBytes: number;
  /** Request bodies all together, and their time to arrive (body-guard.ts). */
  bodyInflightMaxBytes: number;
  bodyInflightPerClientMaxBytes: number;
  bodyTimeoutMs: number;
  authenticator: Authenticator;
  denyRecorder: DenyRecorder;
  metrics: NodeMetrics;
  logger: FastifyBaseLogger;
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
    loggerInstance: options.logger,
    // One debug line per request (onResponse below) instead of fastify's two info lines.
    logController: new LogController({ disableRequestLogging: true }),
    // Tokens travel in headers; fastify's default serializers log neither headers nor bodies.
    return503OnClosing: true,
    // Closing ends every connection at once: a client posting back to back on a keep-alive
    // connection otherwise held the close until the CLI's 10 s limit (measured: two writers
    // made every SIGTERM under load exit 1 after 10 s). A request cut so was never answered,
    // so never acknowledged; its events are kept if its append was queued (the store's close
    // waits for queued writes), and a retry with the same eventIds is a duplicate.
    forceCloseConnections: true,
    // Plain JSON.parse: no body is ever merged into an existing object (events are rebuilt
    // field by field, settings keys are checked against a fixed list), so prototype-poisoning
    // scans of every 8 MiB body buy nothing; they measured ~3% of ingest CPU.
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
  });
  // Bodies are JSON (or the peer wire form, internal-routes.ts): a body declared as text is
  // refused as not JSON (415), as the contract says, not read as a string and refused by each
  // route as a malformed body (400).
  app.removeContentTypeParser('text/plain');

  /**
   * Counts and records a refusal, then answers it: with its own status, or 429 once the client
   * is past its per-window threshold (nothing more is recorded for it until the window ends).
   */
  const refuse = (reply: FastifyReply, access: RefusedAccess, body: { error: string; code: string }) => {
    const verdict = options.denyRecorder.refuse(access);
    // The connection ends with the answer: a refused client trickling a body (chunked, a byte
    // every few seconds) otherwise held it open as long as it kept sending (review).
    reply.header('connection', 'close');
    if (verdict.limited) {
      options.metrics.accessDenied.inc({ status: '429' });
      reply.header('retry-after', String(verdict.retryAfterSec));
      const error = `too many refused requests from ${access.clientAddress}; retry after ${verdict.retryAfterSec} s (${body.error})`;
      return reply.code(429).send({ status: 'error', error, code: 'AUDIT_LIMIT_EXCEEDED' });
    }
    options.metrics.accessDenied.inc({ status: String(access.status) });
    if (access.status === 401) reply.header('www-authenticate', 'Token, Bearer, AccessKey');
    return reply.code(access.status).send({ status: 'error', ...body });
  };

  app.addHook('onRequest', async (request, reply) => {
    // A body sent to no route is answered before any of it is read, and its connection closed:
    // it passes no authentication, yet reading it counted against the bodies all clients may
    // hold at once (review).
    if (request.is404 && (request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined)) {
      reply.header('connection', 'close');
      return sendNotFound(request, reply);
    }
    if (isPageUrl(request)) reply.header('vary', 'Accept');
    // A browser navigating to a UI page gets the page (it holds no data; its API calls carry
    // the token), whatever API shares the URL, and is neither authenticated nor audited.
    if (isPageView(request)) return sendAdminPage(reply, options.adminUi);
    const access = request.routeOptions.config.access;
    if (!access) return;
    // Answers of the API hold audit records and settings: no browser or proxy cache keeps
    // them (a shared machine's next user, a proxy's disk), and no browser second-guesses
    // their content type. Set before authentication, so refusals carry them too.
    reply.header('cache-control', 'no-store').header('x-content-type-options', 'nosniff');
    const resource = `${request.method} ${request.routeOptions.url ?? request.url.split('?')[0] ?? ''}`;
    const result = options.authenticator.authenticate(request.headers.authorization);
    if (!result.ok) {
      const refused: RefusedAccess = { status: 401, userId: 'anonymous', action: 'auth:Authenticate', resource, reason: result.reason, clientAddress: request.ip };
      if (result.scheme !== undefined) refused.scheme = result.scheme;
      if (result.fingerprint !== undefined) refused.fingerprint = result.fingerprint;
      return refuse(reply, refused, { error: `authentication required: ${result.reason}`, code: 'AUDIT_UNAUTHENTICATED' });
    }
    if (!roleAllows(result.principal.role, access.role)) {
      const reason = `role ${result.principal.role} may not ${access.action} (needs ${access.role})`;
      return refuse(reply, { status: 403, userId: result.principal.name, action: access.action, resource, reason, clientAddress: request.ip }, { error: `forbidden: ${reason}`, code: 'AUDIT_FORBIDDEN' });
    }
    request.principal = result.principal;
  });

  // After authentication, before the body is read: only UTF-8 bodies are taken, and only as
  // many bytes of bodies at once, for as long, as the node allows.
  app.addHook('preParsing', async (request) => {
    assertUtf8Charset(request.headers['content-type']);
    // Only a body can be compressed: a request without one (a GET) has nothing to refuse.
    const hasBody = request.headers['transfer-encoding'] !== undefined || (request.headers['content-length'] ?? '0') !== '0';
    if (hasBody) assertIdentityEncoding(request.headers['content-encoding']);
  });
  const bodies = guardRequestBodies(app, { inflightMaxBytes: options.bodyInflightMaxBytes, inflightPerClientMaxBytes: options.bodyInflightPerClientMaxBytes, bodyLimitBytes: options.bodyLimitBytes, bodyTimeoutMs: options.bodyTimeoutMs });
  new Gauge({
    name: 'auditlake_http_body_held_bytes',
    help: 'Bytes of request bodies counted against auditlake.http.body.inflight.max.bytes now (declared lengths of bodies not yet answered)',
    registers: [options.metrics.registry],
    collect() {
      this.set(bodies.heldBytes());
    },
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    // The URL as sent may carry a credential a client put in the query string: masked. Built
    // only when the line is logged: masking every request's URL cost ~1% of a search's CPU.
    if (request.log.level === 'debug' || request.log.level === 'trace') request.log.debug({ method: request.method, url: redactUrl(request.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
    options.metrics.httpDuration.observe({ method: request.method, route, status_code: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });

  app.setErrorHandler(async (err, request, reply) => {
    const { statusCode, body, retryAfterSeconds } = toHttpError(err, { contentType: request.headers['content-type'], bodyLimitBytes: request.routeOptions.bodyLimit ?? options.bodyLimitBytes });
    // An event sent under a sourceId its sender may not use: refused access like a 403, so
    // recorded (who, from where, which sourceId) and counted against the client's threshold.
    if (isAuditError(err, AuditErrorCode.SOURCE_NOT_BOUND)) {
      const resource = `${request.method} ${request.routeOptions.url ?? ''}`;
      return refuse(reply, { status: 403, userId: request.principal?.name ?? 'unknown', action: 'audit:Ingest', resource, reason: err.message, clientAddress: request.ip }, body);
    }
    if (statusCode >= 500) {
      // An operating error (no leader, no standby, store closing) is an answer, not a bug: one
      // line with its code and message. Anything else is unexpected and logged with its stack.
      if (isAuditError(err)) request.log.warn({ code: err.code, route: request.routeOptions.url, status: statusCode }, err.message);
      else request.log.error({ err }, 'request failed');
    }
    // Retryable (a leader is being elected, the node is starting, a replication wait ran out):
    // the same request, with the same eventIds, may succeed after this many seconds.
    if (retryAfterSeconds !== undefined) reply.header('retry-after', String(retryAfterSeconds));
    if (statusCode === 413 && request.routeOptions.url === '/v1/api/audit') options.metrics.eventsRefused.inc();
    return reply.code(statusCode).send(body);
  });

  app.setNotFoundHandler(async (request, reply) => sendNotFound(request, reply));

  return app;
}

/**
 * The answer to a request no route takes. It quotes the URL asked for: like every API answer,
 * no cache keeps it and no browser reads it as anything but JSON.
 */
function sendNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply
    .code(404)
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .send({ status: 'error', error: `no such endpoint: ${request.method} ${request.url.split('?')[0] ?? ''}`, code: 'AUDIT_NOT_FOUND' });
}
