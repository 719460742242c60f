// Goal: an event maps to an OCSF API Activity record as docs/export.md says: activity from the action's verb, status from the decision, nothing dropped.
import type { EventOutput } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { activityOf, toOcsf } from '../src/export/ocsf-event.js';

const base: EventOutput = {
  eventId: 'e-1',
  source: 'lakekeeper',
  userId: 'oidc~ana',
  action: 'LoadTable',
  resource: 'warehouse/ns/orders',
  tables: ['ns.orders'],
  query: '',
  details: '',
  timestamp: 1_792_288_263_123,
  decision: 'ALLOW',
  ingestTs: 1_792_288_263_456,
};

describe('OCSF API Activity', () => {
  it('takes the activity from the verb in the action, in any naming style', () => {
    const cases: Array<[string, string]> = [
      ['data:Select', 'Read'],
      ['LOAD_TABLE', 'Read'],
      ['GetTable', 'Read'],
      ['list_namespaces', 'Read'],
      ['CREATE_TABLE', 'Create'],
      ['data:Insert', 'Create'],
      ['ALTER_TABLE', 'Update'],
      ['GRANT_PRIVILEGES_TO_ROLE', 'Update'],
      ['REVOKE_ROLES_FROM_USER', 'Update'],
      ['SET_OWNER', 'Update'],
      ['DropTable', 'Delete'],
      ['data:Delete', 'Delete'],
      ['LOGIN', 'Other'],
      ['', 'Unknown'],
    ];
    expect(cases.map(([action]) => [action, activityOf(action).name])).toEqual(cases);
  });

  it('maps every field: status from the decision, the rest under unmapped', () => {
    expect(toOcsf(base)).toEqual({
      class_uid: 6003,
      class_name: 'API Activity',
      category_uid: 6,
      category_name: 'Application Activity',
      activity_id: 2,
      activity_name: 'Read',
      type_uid: 600302,
      type_name: 'API Activity: Read',
      time: base.timestamp,
      severity_id: 1,
      severity: 'Informational',
      status_id: 1,
      status: 'Success',
      actor: { user: { name: 'oidc~ana' } },
      api: { operation: 'LoadTable', service: { name: 'lakekeeper' } },
      src_endpoint: { svc_name: 'lakekeeper' },
      resources: [
        { name: 'warehouse/ns/orders', type: 'resource' },
        { name: 'ns.orders', type: 'table' },
      ],
      metadata: { version: '1.3.0', uid: 'e-1', logged_time: base.ingestTs, product: { name: 'auditlake', vendor_name: 'auditlake' } },
    });
    const denied = toOcsf({ ...base, decision: 'DENY', query: "SELECT 'x'", details: '{"a":1}', redacted: 2, resource: '', tables: [] });
    expect(denied).toMatchObject({ status_id: 2, status: 'Failure', unmapped: { query: "SELECT 'x'", details: '{"a":1}', redacted: 2 } });
    expect(denied).not.toHaveProperty('resources');
    expect(toOcsf({ ...base, decision: '' })).toMatchObject({ status_id: 0, status: 'Unknown' });
  });
});
