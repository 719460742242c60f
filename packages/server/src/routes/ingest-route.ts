import type { FastifyInstance } from 'fastify';
import type { IngestService } from '../ingest-service.js';
import './route-access.js';

export function registerIngestRoute(app: FastifyInstance, ingest: IngestService): void {
  app.post('/v1/api/audit', { config: { access: { role: 'ingest', action: 'audit:Ingest' } } }, async (request) => {
    return ingest.ingest(request.body);
  });
}
