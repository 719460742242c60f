import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';
import type { FastifyInstance } from 'fastify';
import { Gauge, type Registry } from 'prom-client';
import './route-access.js';

/**
 * `GET /admin/audit/ledger[?sourceId=…]`: the completeness ledger as this node holds it — per
 * source that sends `sourceSeq`, how many distinct sourceSeqs arrived, the first, the highest
 * reached without a hole, the highest, and the holes as ranges with how many they hold.
 */
export function registerLedgerRoute(app: FastifyInstance, options: { store: AuditStore }): void {
  app.get('/admin/audit/ledger', { config: { access: { role: 'admin', action: 'audit:ReadLedger' } } }, async (request) => {
    const raw = (request.query as Record<string, unknown>)['sourceId'];
    if (raw !== undefined && (typeof raw !== 'string' || raw === '')) {
      throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter sourceId must be one non-empty source id: ${JSON.stringify(raw)}`);
    }
    const sources = options.store.sourceLedger(raw);
    return { sources, sourcesWithGaps: sources.filter((s) => s.missing > 0).length, missing: sources.reduce((n, s) => n + s.missing, 0) };
  });
}

/** `/metrics`: how many sourceSeqs the ledger misses, over every source, and how many sources miss some. */
export function registerLedgerGauges(registry: Registry, store: AuditStore): void {
  const registers = [registry];
  new Gauge({
    name: 'auditlake_ledger_missing_source_seqs',
    help: 'sourceSeqs a source counted that never arrived (holes in the completeness ledger), over every source',
    registers,
    collect() {
      this.set(store.sourceLedger().reduce((n, source) => n + source.missing, 0));
    },
  });
  new Gauge({
    name: 'auditlake_ledger_sources_with_gaps',
    help: 'Sources whose received sourceSeqs have at least one hole',
    registers,
    collect() {
      this.set(store.sourceLedger().filter((source) => source.missing > 0).length);
    },
  });
}
