import type { Decision } from '@auditlake/model';
import { parseRecordTime, UTC } from '../record-time.js';
import { detailsJson, isObject, malformed, mappedEvent, text, type JsonFormat, type Mapped } from './record-format.js';

/**
 * Failure reasons that are a verdict about this action on this resource, as Lakekeeper's own
 * "real refusals" filter selects them (the same set `authorizations[].allowed == false` marks).
 * The others (internal_authorization_error, internal_catalog_error, invalid_request_data, and
 * any reason a later release adds) mean no verdict was reached: an outage is not a refusal.
 */
export const REFUSAL_REASONS = new Set(['action_forbidden', 'resource_not_found', 'cannot_see_resource']);

/** Entity types whose name goes into `tables`. */
const TABLE_LIKE = ['table', 'view', 'generic_table'] as const;

/** Who acted: the principal, or the actor type for actors without one (anonymous, lakekeeper_internal). */
function userOf(actor: unknown): string {
  if (!isObject(actor)) return 'unknown';
  return text(actor['principal']) ?? text(actor['actor_type']) ?? 'unknown';
}

/** A table-like entity's name, qualified by its namespace unless it already is. */
function qualified(name: string, namespace: string | undefined): string {
  return namespace === undefined || namespace === '' || name.startsWith(`${namespace}.`) ? name : `${namespace}.${name}`;
}

/** `type:name` for one entity: its table, view or generic table, else its most specific id. */
function describeEntity(entity: Record<string, unknown>): string {
  const type = text(entity['entity_type']) ?? 'entity';
  const namespace = text(entity['namespace']);
  for (const field of TABLE_LIKE) {
    const name = text(entity[field]);
    if (name !== undefined) return `${type}:${qualified(name, namespace)}`;
  }
  const id = ['namespace', 'table_id', 'view_id', 'generic_table_id', 'namespace_id', 'warehouse_id', 'project_id', 'role_id', 'user_id', 'task_id', 'tag_definition_id', 'server_id']
    .map((field) => text(entity[field]))
    .find((value) => value !== undefined);
  return id === undefined ? type : `${type}:${id}`;
}

function entitiesOf(record: Record<string, unknown>): Array<Record<string, unknown>> {
  const entities = record['entities'];
  return Array.isArray(entities) ? entities.filter(isObject) : [];
}

function tablesOf(entities: ReadonlyArray<Record<string, unknown>>): string[] {
  const tables: string[] = [];
  for (const entity of entities) {
    for (const field of TABLE_LIKE) {
      const name = text(entity[field]);
      if (name !== undefined && !tables.includes(qualified(name, text(entity['namespace'])))) tables.push(qualified(name, text(entity['namespace'])));
    }
  }
  return tables;
}

function actionNames(record: Record<string, unknown>): string | undefined {
  const actions = record['actions'];
  if (!Array.isArray(actions)) return undefined;
  const names = actions.filter(isObject).map((a) => text(a['action_name'])).filter((n): n is string => n !== undefined);
  return names.length === 0 ? undefined : names.join(',');
}

/** The resource a grant record names: `resource_type:resource_id` from its context. */
function operationResource(context: unknown): string {
  if (!isObject(context)) return '';
  const type = text(context['resource_type']);
  const id = text(context['resource_id']);
  if (type === undefined) return id ?? '';
  return id === undefined ? type : `${type}:${id}`;
}

function decisionOf(record: Record<string, unknown>, recordType: string): Decision | '' {
  if (recordType === 'authorization') {
    const decision = record['decision'];
    if (decision === 'allowed') return 'ALLOW';
    if (decision === 'denied') return REFUSAL_REASONS.has(text(record['failure_reason']) ?? '') ? 'DENY' : '';
    return '';
  }
  // An admission gate that denied the caller refused the request; one that could not reach
  // its service (outcome unavailable) failed closed, which is an outage.
  if (recordType === 'operation' && record['operation'] === 'admission_decided' && record['outcome'] === 'forbidden') return 'DENY';
  return '';
}

/**
 * Lakekeeper's audit records (`event_source: "audit"`): authorization, replay and operation
 * records of any `audit_format`. Record types, operations and outcomes are open sets: an
 * unknown one is imported with what can be read from it, never refused. Other log lines
 * (the start-up banner, error_response and general logs) are not audit records and are skipped.
 */
export const lakekeeperFormat: JsonFormat = {
  name: 'lakekeeper',
  framing: 'json',
  textLines: 'skip',
  mapRecord(record, _context): Mapped {
    if (record['event_source'] !== 'audit') return { kind: 'skipped', reason: 'not an audit record' };
    const timeKey = record['time'] !== undefined ? 'time' : 'timestamp';
    // --time-zone is for Gravitino's text format only (docs/import.md, which is right: the other
    // formats write an offset); a time without one here is read as UTC, not in --time-zone.
    const ts = parseRecordTime(record[timeKey], UTC);
    if (ts === undefined) return malformed(`time must be an RFC 3339 time: ${JSON.stringify(record[timeKey])}`);
    const recordType = text(record['record_type']) ?? '';
    const entities = entitiesOf(record);
    const action = recordType === 'operation' ? (text(record['operation']) ?? actionNames(record)) : (actionNames(record) ?? text(record['operation']));
    const resource = entities.length > 0 ? entities.map(describeEntity).join(', ') : operationResource(record['context']);
    return mappedEvent({
      source: 'lakekeeper',
      userId: userOf(record['actor']),
      action: action ?? (recordType || 'unknown'),
      resource,
      decision: decisionOf(record, recordType),
      tables: tablesOf(entities),
      // Everything but the time stays, structure and all: Lakekeeper's own queries address
      // full paths (.actor.principal, .authorizations[].allowed), and so can a search.
      details: detailsJson(record, [timeKey]),
      ts,
    });
  },
};
