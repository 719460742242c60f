import type { Decision } from '@auditlake/model';
import { parseIsoTime, parseRecordTime, UTC } from '../record-time.js';
import { describeType, detailsJson, isObject, malformed, mappedEvent, text, type LineFormat, type MapContext, type Mapped } from './record-format.js';

/**
 * Operation types whose identifier is a table or view (partition and partition-statistics
 * operations identify their table). These records name it in `tables`.
 */
const TABLE_OPERATIONS = new Set([
  'CREATE_TABLE',
  'ALTER_TABLE',
  'RENAME_TABLE',
  'DROP_TABLE',
  'PURGE_TABLE',
  'LOAD_TABLE',
  'REGISTER_TABLE',
  'TABLE_EXISTS',
  'LOAD_TABLE_CREDENTIAL',
  'PLAN_TABLE_SCAN',
  'ADD_PARTITION',
  'DROP_PARTITION',
  'PURGE_PARTITION',
  'LOAD_PARTITION',
  'PARTITION_EXISTS',
  'LIST_PARTITION',
  'LIST_PARTITION_NAMES',
  'UPDATE_PARTITION_STATISTICS',
  'LIST_PARTITION_STATISTICS',
  'DROP_PARTITION_STATISTICS',
  'CREATE_VIEW',
  'ALTER_VIEW',
  'REPLACE_VIEW',
  'RENAME_VIEW',
  'DROP_VIEW',
  'LOAD_VIEW',
  'VIEW_EXISTS',
]);

/** HTTP statuses of a refused request: credentials that failed, or a missing privilege. */
const REFUSAL_STATUSES = new Set(['401', '403']);

/**
 * DENY for a refusal: an AUTHORIZATION_DENIAL record, or an HTTP-level FAILURE answered 401 or
 * 403 (how the IRC endpoint records a missing privilege, and how failed authentication shows).
 * ALLOW for a SUCCESS. Any other FAILURE is an error, not a refusal: no decision.
 */
function decisionOf(operation: string, status: string | undefined, customInfo: Record<string, unknown>): Decision | '' {
  if (operation === 'AUTHORIZATION_DENIAL') return 'DENY';
  if (status === 'SUCCESS') return 'ALLOW';
  const httpStatus = text(customInfo['http.status']);
  if (status === 'FAILURE' && httpStatus !== undefined && REFUSAL_STATUSES.has(httpStatus)) return 'DENY';
  return '';
}

/** The object acted on: the identifier, or for an HTTP-level record (identifier null) the URI. */
function resourceOf(identifier: string | undefined, customInfo: Record<string, unknown>): string {
  if (identifier !== undefined && identifier !== 'null') return identifier;
  return text(customInfo['http.uri']) ?? '';
}

function tablesOf(operation: string, identifier: string | undefined): string[] {
  return identifier !== undefined && identifier !== 'null' && identifier !== '' && TABLE_OPERATIONS.has(operation) ? [identifier] : [];
}

const TEXT_TIME = /^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)\]$/;

/**
 * Custom info as the text format writes it: `{key=value, key=value}`. A value may itself hold
 * `, ` (a SCIM failure reason), so a member ends only where `, ` is followed by `name=`.
 */
export function parseCustomInfo(value: string): Record<string, string> | undefined {
  const trimmed = value.trim();
  if (trimmed === '') return {};
  if (!trimmed.startsWith('{') || !trimmed.endsWith('}')) return undefined;
  const inner = trimmed.slice(1, -1);
  const info: Record<string, string> = {};
  if (inner.trim() === '') return info;
  for (const member of inner.split(/, (?=[^=,\s{}]+=)/)) {
    const eq = member.indexOf('=');
    if (eq <= 0) return undefined;
    info[member.slice(0, eq)] = member.slice(eq + 1);
  }
  return info;
}

/** A line of the default (SimpleFormatterV2) format: eight tab-separated fields. */
function mapTextLine(line: string, context: MapContext): Mapped {
  const fields = line.split('\t');
  if (fields.length < 7) return malformed(`expected 8 tab-separated fields (timestamp, user, operation type, identifier, status, source, client address, custom info), got ${fields.length}`);
  const [timeField, user, operation, identifier, status, eventSource, remoteAddress] = fields as [string, string, string, string, string, string, string];
  // Custom info is the last field; a tab inside it would otherwise split it.
  const customText = fields.slice(7).join('\t');
  const time = TEXT_TIME.exec(timeField);
  if (!time) return malformed(`timestamp must be [yyyy-MM-dd HH:mm:ss.SSS]: ${timeField.slice(0, 40)}`);
  const ts = parseIsoTime(time[1] ?? '', context.timeZone);
  if (ts === undefined) return malformed(`timestamp is not a real time: ${timeField}`);
  if (user === '') return malformed('user (field 2) is empty');
  if (operation === '') return malformed('operation type (field 3) is empty');
  const customInfo = parseCustomInfo(customText);
  if (customInfo === undefined) return malformed(`custom info (field 8) must be {key=value, ...}: ${customText.slice(0, 60)}`);
  // Named as the JSON formatter names them, so one query reads both formats.
  const details = JSON.stringify({ status, eventSource, remoteAddress, customInfo });
  return mappedEvent({
    source: 'gravitino',
    userId: user,
    action: operation,
    resource: resourceOf(identifier, customInfo),
    decision: decisionOf(operation, status, customInfo),
    tables: tablesOf(operation, identifier),
    details,
    ts,
  });
}

/** A line of JsonAuditFormatter: one object with named keys and a zoned timestamp. */
function mapJsonLine(line: string): Mapped {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch (err) {
    return malformed(`not valid JSON: ${(err as Error).message}`);
  }
  if (!isObject(record)) return malformed(`a JSON record must be an object, got ${describeType(record)}`);
  // operationType is the one to key on; operation is the older, coarser name.
  const actionKey = typeof record['operationType'] === 'string' ? 'operationType' : 'operation';
  const operation = record[actionKey];
  if (typeof operation !== 'string' || operation === '') return malformed('operationType is missing');
  const user = record['user'];
  if (typeof user !== 'string' || user === '') return malformed('user is missing');
  // --time-zone is for Gravitino's text format only (docs/import.md, which is right: the other
  // formats write an offset); a time without one here is read as UTC, not in --time-zone.
  const ts = parseRecordTime(record['timestamp'], UTC);
  if (ts === undefined) return malformed(`timestamp must be an ISO 8601 time: ${JSON.stringify(record['timestamp'])}`);
  const customInfo = isObject(record['customInfo']) ? record['customInfo'] : {};
  const identifier = record['identifier'] === null ? undefined : text(record['identifier']);
  const status = text(record['operationStatus']) ?? text(record['status']);
  return mappedEvent({
    source: 'gravitino',
    userId: user,
    action: operation,
    resource: resourceOf(identifier, customInfo),
    decision: decisionOf(operation, status, customInfo),
    tables: tablesOf(operation, identifier),
    details: detailsJson(record, ['timestamp', 'user', actionKey, 'identifier']),
    ts,
  });
}

/**
 * Apache Gravitino's audit log: the default tab-separated text and JsonAuditFormatter's JSON,
 * told apart line by line (a file written across a formatter switch holds both).
 */
export const gravitinoFormat: LineFormat = {
  name: 'gravitino',
  framing: 'lines',
  mapLine(line, context) {
    return line.trimStart().startsWith('{') ? mapJsonLine(line) : mapTextLine(line, context);
  },
};
