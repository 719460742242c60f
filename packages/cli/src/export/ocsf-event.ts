import type { EventOutput } from '@auditlake/model';

/** OCSF schema version the mapping follows. */
export const OCSF_VERSION = '1.3.0';
/** API Activity, in the Application Activity category. */
export const API_ACTIVITY_CLASS_UID = 6003;
export const APPLICATION_ACTIVITY_CATEGORY_UID = 6;

/** API Activity's activity ids. */
const ACTIVITY = {
  unknown: { id: 0, name: 'Unknown' },
  create: { id: 1, name: 'Create' },
  read: { id: 2, name: 'Read' },
  update: { id: 3, name: 'Update' },
  delete: { id: 4, name: 'Delete' },
  other: { id: 99, name: 'Other' },
} as const;

/**
 * The activity an action names, from the verb in it: `data:Select`, `LOAD_TABLE`, `GetTable`
 * read; `CREATE_TABLE`, `data:Insert` create; `ALTER_…`, `GRANT_…`, `REVOKE_…`, `SET_OWNER` update;
 * `DROP_…`, `data:Delete` delete; anything else Other. Matched on word starts, any case.
 */
export function activityOf(action: string): { id: number; name: string } {
  const words = action
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter((w) => w !== '');
  const has = (...verbs: string[]) => words.some((w) => verbs.includes(w));
  if (has('drop', 'delete', 'remove', 'purge', 'truncate', 'unregister', 'cancel')) return ACTIVITY.delete;
  if (has('create', 'insert', 'add', 'register', 'declare', 'link', 'append', 'import')) return ACTIVITY.create;
  if (has('alter', 'update', 'set', 'grant', 'revoke', 'rename', 'replace', 'override', 'merge', 'upsert', 'enable', 'disable', 'pause', 'resume', 'associate', 'commit', 'write')) return ACTIVITY.update;
  if (has('select', 'read', 'load', 'get', 'list', 'show', 'view', 'describe', 'exists', 'count', 'search', 'scan', 'check', 'evaluate')) return ACTIVITY.read;
  return action === '' ? ACTIVITY.unknown : ACTIVITY.other;
}

/** API Activity's status: ALLOW Success, DENY Failure, no decision Unknown. */
function statusOf(decision: EventOutput['decision']): { status_id: number; status: string } {
  if (decision === 'ALLOW') return { status_id: 1, status: 'Success' };
  if (decision === 'DENY') return { status_id: 2, status: 'Failure' };
  return { status_id: 0, status: 'Unknown' };
}

/**
 * One auditlake event as an OCSF API Activity record. The mapping (docs/export.md):
 * time ← timestamp, actor.user.name ← userId, api.operation ← action, api.service.name ←
 * source, resources ← resource and tables, status ← decision, metadata.uid ← eventId,
 * metadata.logged_time ← ingestTs; query, details and redacted go to `unmapped`.
 */
export function toOcsf(event: EventOutput): Record<string, unknown> {
  const activity = activityOf(event.action);
  const resources: Array<Record<string, string>> = [];
  if (event.resource !== '') resources.push({ name: event.resource, type: 'resource' });
  for (const table of event.tables) resources.push({ name: table, type: 'table' });
  const unmapped: Record<string, unknown> = {};
  if (event.query !== '') unmapped['query'] = event.query;
  if (event.details !== '') unmapped['details'] = event.details;
  if (event.redacted !== undefined) unmapped['redacted'] = event.redacted;
  return {
    class_uid: API_ACTIVITY_CLASS_UID,
    class_name: 'API Activity',
    category_uid: APPLICATION_ACTIVITY_CATEGORY_UID,
    category_name: 'Application Activity',
    activity_id: activity.id,
    activity_name: activity.name,
    type_uid: API_ACTIVITY_CLASS_UID * 100 + activity.id,
    type_name: `API Activity: ${activity.name}`,
    time: event.timestamp,
    severity_id: 1,
    severity: 'Informational',
    ...statusOf(event.decision),
    actor: { user: { name: event.userId } },
    api: { operation: event.action, service: { name: event.source } },
    src_endpoint: { svc_name: event.source },
    ...(resources.length > 0 ? { resources } : {}),
    metadata: {
      version: OCSF_VERSION,
      uid: event.eventId,
      logged_time: event.ingestTs,
      product: { name: 'auditlake', vendor_name: 'auditlake' },
    },
    ...(Object.keys(unmapped).length > 0 ? { unmapped } : {}),
  };
}
