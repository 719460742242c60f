import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';
import type { FastifyInstance } from 'fastify';
import { eraseFields, parseErasureRequest, type TieredRecordFinder } from '../erasure-service.js';
import type { IntegrityService } from '../integrity-service.js';
import type { Membership } from '../membership.js';
import { ackReplicatedOf } from './ack-param.js';
import { refuseUnknownParams } from './known-params.js';
import './route-access.js';

/** Most records one `GET /admin/audit/integrity/records` page holds. */
export const RECORDS_PAGE_MAX = 10_000;

/**
 * Most bytes of records one page holds (at least one record): 10,000 records of fields at their
 * limits joined into one string passed V8's string length — a 500, and `verify --url` could
 * never finish (review). A reader goes on from the last seq it got, as after any page.
 */
export const RECORDS_PAGE_BYTES_MAX = 32 * 1024 * 1024;

const NEWLINE = Buffer.from('\n');

/** Records read from the store at a time for a page: the page's bytes are bounded as it is read, not after. */
const RECORDS_READ_BATCH = 256;

/**
 * Up to `limit` stored records after `afterSeq`, one a line, stopping before the one that would
 * take the page past RECORDS_PAGE_BYTES_MAX (at least one record). Read a batch at a time:
 * read whole and cut after, a page of records at their field limits read 1.5 GB to send 32 MiB.
 */
async function recordsPage(store: AuditStore, afterSeq: number, limit: number): Promise<Buffer> {
  const lines: Buffer[] = [];
  let bytes = 0;
  let count = 0;
  let after = afterSeq;
  while (count < limit) {
    const asked = Math.min(RECORDS_READ_BATCH, limit - count);
    const entries = await store.readEncodedBySeq(after, asked);
    for (const entry of entries) {
      if (count > 0 && bytes + entry.byteLength + 1 > RECORDS_PAGE_BYTES_MAX) return Buffer.concat(lines, bytes);
      lines.push(Buffer.from(entry.buffer, entry.byteOffset, entry.byteLength), NEWLINE);
      bytes += entry.byteLength + 1;
      count++;
    }
    const last = entries.at(-1);
    // Fewer than asked: the log ends here.
    if (last === undefined || entries.length < asked) break;
    after = (JSON.parse(Buffer.from(last.buffer, last.byteOffset, last.byteLength).toString('utf8')) as { seq: number }).seq;
  }
  return Buffer.concat(lines, bytes);
}

/** The parameters `GET /admin/audit/integrity/records` takes. */
const RECORDS_PARAMS = ['afterSeq', 'limit'];

function nonNegativeInt(query: Record<string, unknown>, name: string, fallback: number, max: number): number {
  const raw = query[name];
  if (raw === undefined || raw === '') return fallback;
  if (typeof raw !== 'string') throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter ${name} must be given once: ${JSON.stringify(raw)}`);
  const value = /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value > max) throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter ${name} must be an integer from 0 to ${max}: ${raw}`);
  return value;
}

/**
 * `GET /admin/audit/integrity`: this node's key, chain head, registered keys, newest
 * checkpoints and retention-deleted ranges. `GET /admin/audit/integrity/records?afterSeq&limit`:
 * this node's stored records in seq order, as NDJSON (each line exactly as stored, chain
 * fields included), for `auditlake verify --url`. `POST /admin/audit/erase` (the leader):
 * erases fields of named records, keeping the proof.
 */
export function registerIntegrityRoutes(
  app: FastifyInstance,
  options: { integrity: IntegrityService; store: AuditStore; membership: Membership; now: () => number; findTiered?: TieredRecordFinder; ackReplicatedTimeoutMs: number },
): void {
  const access = { role: 'admin', action: 'audit:ReadIntegrity' } as const;
  app.get('/admin/audit/integrity', { config: { access } }, async () => options.integrity.view());
  app.get('/admin/audit/integrity/records', { config: { access } }, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    // As the search refuses them: a misspelt `afterseq` read from seq 0 would look like an answer.
    refuseUnknownParams(query, RECORDS_PARAMS);
    const afterSeq = nonNegativeInt(query, 'afterSeq', 0, Number.MAX_SAFE_INTEGER);
    const limit = nonNegativeInt(query, 'limit', 1000, RECORDS_PAGE_MAX);
    return reply.type('application/x-ndjson; charset=utf-8').send(await recordsPage(options.store, afterSeq, limit));
  });
  app.post('/admin/audit/erase', { config: { access: { role: 'admin', action: 'audit:EraseFields' } } }, async (request) => {
    // As for the body's keys: a parameter this version does not read (a `dryRun`) is refused, never ignored (review).
    refuseUnknownParams(request.query, ['ack'], '; nothing was erased');
    const body = parseErasureRequest(request.body);
    if (!options.membership.isLeader()) {
      throw new AuditError(AuditErrorCode.NOT_LEADER, `only the leader records an erasure (send it to ${options.membership.leaderUrl() ?? 'the leader, once elected'}); nothing was erased`, { retryable: true });
    }
    const ackReplicated = ackReplicatedOf(request.query, '; nothing was erased');
    if (ackReplicated && !options.membership.coordinated) {
      throw new AuditError(AuditErrorCode.BAD_REQUEST, 'ack=replicated needs a standby, and this node runs without a cluster (--coordinator); nothing was erased');
    }
    const { erasureEventIds, ...result } = await eraseFields(options.store, body, request.principal?.name ?? 'unknown', options.now(), options.membership.sequencer, options.findTiered);
    // As for ingest: the erasure is durable here once appended; `ack=replicated` also waits for
    // a standby to hold it, so losing this node's disk before the next pull cannot undo it.
    if (ackReplicated && !(await options.membership.confirmReplicated(erasureEventIds.map((eventId) => ({ eventId })), options.ackReplicatedTimeoutMs))) {
      throw new AuditError(
        AuditErrorCode.REPLICATION_TIMEOUT,
        `the erasure (records at seq ${result.erasureSeqs.join(', ')}) is stored on this node, but no standby confirmed it within ${options.ackReplicatedTimeoutMs} ms; it will be replicated — see GET /admin/audit/integrity/records on a standby, or send the request again (a repeated erasure changes nothing more)`,
        { retryable: true },
      );
    }
    return { status: 'ok', ...result };
  });
}
