import type { Decision } from '@auditlake/model';
import { parseRecordTime, UTC } from '../record-time.js';
import { detailsJson, malformed, mappedEvent, text, textList, type JsonFormat, type Mapped } from './record-format.js';

/** LHO's three outcomes: only DENY is a refusal; FAILURE is a request that failed (validation, an error). */
function decisionOf(outcome: string | undefined): Decision | '' {
  if (outcome === 'DENY') return 'DENY';
  if (outcome === 'SUCCESS') return 'ALLOW';
  return '';
}

/** Resource fields in the order they name an object most precisely; each entry becomes `kind:name`. */
const RESOURCE_FIELDS = [
  ['tables', 'table'],
  ['namespaces', 'namespace'],
  ['policies', 'policy'],
  ['taskId', 'task'],
  ['catalog', 'catalog'],
] as const;

function resourceOf(record: Record<string, unknown>): string {
  const uri = text(record['resourceUri']);
  if (uri !== undefined && uri !== '') return uri;
  return RESOURCE_FIELDS.flatMap(([field, kind]) => textList(record[field]).map((name) => `${kind}:${name}`)).join(', ');
}

/**
 * Cloudera Lakehouse Optimizer's audit files: NDJSON, one event per line, with outcome
 * SUCCESS, FAILURE or DENY. Authentication attempts carry the action of the attempt (LOGIN)
 * and, when they fail, a user name supplied by the service, which may be missing.
 */
export const lhoFormat: JsonFormat = {
  name: 'lho',
  framing: 'json',
  textLines: 'malformed',
  mapRecord(record, _context): Mapped {
    const action = text(record['action']);
    if (action === undefined || action === '') return malformed('action is missing');
    // --time-zone is for Gravitino's text format only (docs/import.md, which is right: the other
    // formats write an offset); a time without one here is read as UTC, not in --time-zone.
    const ts = parseRecordTime(record['timestamp'], UTC);
    if (ts === undefined) return malformed(`timestamp must be an ISO 8601 time or epoch number: ${JSON.stringify(record['timestamp'])}`);
    const user = text(record['userName']);
    return mappedEvent({
      source: 'lho',
      // A failed authentication may name nobody; the record still happened.
      userId: user === undefined || user === '' ? 'unknown' : user,
      action,
      resource: resourceOf(record),
      decision: decisionOf(text(record['outcome'])),
      tables: textList(record['tables']),
      details: detailsJson(record, ['timestamp', 'userName', 'action', ...(text(record['resourceUri']) ? ['resourceUri'] : [])]),
      ts,
    });
  },
};
