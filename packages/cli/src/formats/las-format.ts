import type { Decision } from '@auditlake/model';
import { parseRecordTime, UTC } from '../record-time.js';
import { detailsJson, isObject, malformed, mappedEvent, text, type JsonFormat, type Mapped } from './record-format.js';

/** The log event types LAS names, used by its `identifier` field. */
export const LAS_IDENTIFIER_TYPES = ['catalog', 'database', 'table', 'permission', 'view', 'function', 'other'] as const;
type IdentifierType = (typeof LAS_IDENTIFIER_TYPES)[number];

/** Event names per type, from LAS's list of supported log events; every name not listed is `other`. */
const EVENT_TYPES: Record<Exclude<IdentifierType, 'other'>, string> = {
  catalog: 'CreateCatalog AlterCatalog GetCatalog GetCatalogs DropCatalog',
  database: 'CreateDatabase GetDatabase DropDatabase GetDatabases GetAllDatabases AlterDatabase GetMetastoreDbUuid',
  table:
    'CreateTable CreateTableWithEnvironmentContext DropTable DropTableWithEnvironmentContext GetTable GetTables GetAllTables ' +
    'GetTableObjectsByName GetTableNamesByFilter AlterTable AlterTableWithEnvironmentContext UpdateTableColumnStatistics ' +
    'GetTableColumnStatistics GetTableStatisticsReq DeleteTableColumnStatistics AlterTableWithCascade CreateTableWithConstraints ' +
    'TruncateTable GetTablesByType GetTableMeta GetTableReq GetTableObjectsByNameReq AllocateTableWriteIds ListTableNames ListTableNameAndUris',
  permission:
    'CreateRole DropRole GetRoleNames GrantRole RevokeRole ListRoles GrantRevokeRole GetPrincipalsInRole GetRoleGrantsForPrincipal ' +
    'GetPrivilegeSet ListPrivileges GrantPrivileges RevokePrivileges GrantRevokePrivileges RefreshPrivileges',
  view: 'GetMaterializedViewsForRewriting',
  function: 'CreateFunction DropFunction AlterFunction GetFunctions GetFunction GetAllFunctions ListFunctionNames ListFunctionNameAndUris',
};

const TYPE_OF_EVENT = new Map<string, IdentifierType>(
  Object.entries(EVENT_TYPES).flatMap(([type, names]) => names.split(' ').map((name) => [name, type as IdentifierType] as const)),
);

function isIdentifierType(value: string): value is IdentifierType {
  return (LAS_IDENTIFIER_TYPES as readonly string[]).includes(value);
}

/**
 * The record's event type. LAS documents `identifier` both as the operated object's name
 * (`my_db.my_table`) and as the event type (`table`); a type word is taken as written, and for
 * an object name the type follows from the event name.
 */
export function identifierType(identifier: string, eventName: string): IdentifierType {
  return isIdentifierType(identifier) ? identifier : (TYPE_OF_EVENT.get(eventName) ?? 'other');
}

/** HTTP-style outcome: 2xx allowed, 401/403 refused; other codes (errors, internal codes) no decision. */
function decisionOf(response: unknown): Decision | '' {
  if (!isObject(response)) return '';
  const code = Number(text(response['statusCode']));
  if (code >= 200 && code < 300) return 'ALLOW';
  if (code === 401 || code === 403) return 'DENY';
  return '';
}

/**
 * Volcano Engine LAS catalog audit records as delivered to its log service and exported as
 * JSON (one per line or pretty-printed). `details` gets `identifier_type`, the one derived
 * field, so a search can select records by LAS's event type.
 */
export const lasFormat: JsonFormat = {
  name: 'las',
  framing: 'json',
  textLines: 'malformed',
  mapRecord(record, _context): Mapped {
    const eventName = text(record['event_name']);
    if (eventName === undefined || eventName === '') return malformed('event_name is missing');
    const user = text(record['user_id']);
    if (user === undefined || user === '') return malformed('user_id is missing');
    // --time-zone is for Gravitino's text format only (docs/import.md, which is right: the other
    // formats write an offset); a time without one here is read as UTC, not in --time-zone.
    const ts = parseRecordTime(record['event_time'], UTC);
    if (ts === undefined) return malformed(`event_time must be an ISO 8601 time: ${JSON.stringify(record['event_time'])}`);
    const identifier = text(record['identifier']) ?? '';
    const type = identifierType(identifier, eventName);
    const namesObject = identifier !== '' && !isIdentifierType(identifier);
    return mappedEvent({
      source: 'las',
      userId: user,
      action: eventName,
      resource: identifier,
      decision: decisionOf(record['response']),
      tables: type === 'table' && namesObject ? [identifier] : [],
      details: detailsJson(record, ['event_time', 'user_id', 'event_name', 'identifier'], { identifier_type: type }),
      ts,
    });
  },
};
