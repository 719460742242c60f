import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { FastifyInstance } from 'fastify';
import type { IngestService } from '../ingest-service.js';
import { ackReplicatedOf } from './ack-param.js';
import './route-access.js';

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
      return ingest.ingest(body, { ackReplicated: ackReplicatedOf(request.query), ...sender });
    });
  });
}
