import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { FastifyInstance } from 'fastify';
import type { IngestService } from '../ingest-service.js';
import './route-access.js';

function ackReplicated(query: unknown): boolean {
  const ack = (query as Record<string, unknown>)['ack'];
  if (ack === undefined || ack === 'local') return false;
  if (ack === 'replicated') return true;
  throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter ack must be local or replicated: ${typeof ack === 'string' ? ack : JSON.stringify(ack)}`);
}

export function registerIngestRoute(app: FastifyInstance, ingest: IngestService): void {
  app.register(async (scope) => {
    // The body stays bytes here: IngestService parses it (inline, or in a parse worker). Scoped to this
    // route, so every other route keeps fastify's JSON parser.
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.post('/v1/api/audit', { config: { access: { role: 'ingest', action: 'audit:Ingest' } } }, async (request) => {
      const body = request.body;
      if (!(body instanceof Uint8Array)) {
        throw new AuditError(AuditErrorCode.BAD_REQUEST, 'request body must be an audit event object or an array of them, sent as JSON (Content-Type: application/json)');
      }
      const sender = request.principal === undefined ? {} : { sender: { principal: request.principal.name, clientAddress: request.ip } };
      return ingest.ingest(body, { ackReplicated: ackReplicated(request.query), ...sender });
    });
  });
}
