// Goal: a tier location that lies inside, or contains, another tier location — one that received tiered events, or the other
// mode's configured one — is refused at settings save with a 400 naming the key, and nothing is stored; a sibling location is
// accepted. (Nested, one location's maintenance would take the other's files for its own.)
import { describe, expect, it } from 'vitest';
import { FAST_TIERING, externalS3, postSettings, waitUntilTiered } from './tier-helpers.js';
import { event, startTestNode, type TestNode } from './test-node.js';

const ICEBERG = { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'ice.ops.audit_events' };
const TABLE_LOCATION = 's3://ext/warehouse/ops/audit_events';

async function nestingNode(extra: Record<string, string> = {}) {
  const s3 = await externalS3();
  const catalogs = {
    'auditlake.iceberg.catalogs.ice.warehouse': 's3://ext/warehouse',
    'auditlake.iceberg.catalogs.ice.connectionId': 'ext',
    // A second catalog whose warehouse lies inside a Parquet location used below.
    'auditlake.iceberg.catalogs.inner.warehouse': 's3://ext/lake/wh',
    'auditlake.iceberg.catalogs.inner.connectionId': 'ext',
  };
  return startTestNode({ props: { ...FAST_TIERING, ...s3.props('ext'), ...catalogs, ...extra } });
}

/** The stored settings (tierStatus aside: it moves by itself) and how many events the store holds. */
async function snapshot(t: TestNode): Promise<{ settings: Record<string, unknown>; events: number }> {
  const { tierStatus: _status, ...settings } = (await (await t.request('/admin/audit/settings')).json()) as Record<string, unknown>;
  return { settings, events: (await t.stored()).length };
}

async function expectRefused(t: TestNode, body: Record<string, unknown>, key: string, message: RegExp): Promise<void> {
  const before = await snapshot(t);
  const res = await postSettings(t, body);
  expect(res.status).toBe(400);
  expect(res.json).toMatchObject({ status: 'error', code: 'AUDIT_SETTINGS_INVALID' });
  expect(res.json.error?.startsWith(`${key}: `), res.json.error).toBe(true);
  expect(res.json.error).toMatch(message);
  expect(await snapshot(t)).toEqual(before);
}

describe('tier location nesting', () => {
  it('refuses a Parquet path inside, or containing, an Iceberg table that received events; accepts a sibling', async () => {
    const t = await nestingNode();
    expect((await postSettings(t, ICEBERG)).status).toBe(200);
    expect((await t.ingest([event({ eventId: 'n1' }), event({ eventId: 'n2' })])).status).toBe(200);
    await waitUntilTiered(t);
    // Away from the Iceberg target now, so only the list of locations that received events names the table.
    expect((await postSettings(t, { 'audit.tier.iceberg.table': 'ice.ops.other_events' })).status).toBe(200);

    const parquet = (path: string) => ({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': path, 'audit.tier.connectionId': 'ext' });
    await expectRefused(t, parquet(`${TABLE_LOCATION}/data/pq`), 'audit.tier.parquet.path', /Parquet location s3:\/\/ext\/warehouse\/ops\/audit_events\/data\/pq lies inside the Iceberg table ice\.ops\.audit_events \(s3:\/\/ext\/warehouse\/ops\/audit_events\)/);
    await expectRefused(t, parquet('s3://ext/warehouse'), 'audit.tier.parquet.path', /contains the Iceberg table ice\.ops\.audit_events/);
    await expectRefused(t, parquet('s3://ext'), 'audit.tier.parquet.path', /contains the Iceberg table ice\.ops\.audit_events/);
    await expectRefused(t, parquet(TABLE_LOCATION), 'audit.tier.parquet.path', /is the same location as the Iceberg table ice\.ops\.audit_events/);

    // A sibling prefix is no one else's.
    const sibling = await postSettings(t, parquet('s3://ext/parquet-audit'));
    expect(sibling.status).toBe(200);
    expect(sibling.json['audit.tier.parquet.path']).toBe('s3://ext/parquet-audit');
  });

  it("refuses a target inside, or containing, the other mode's configured location (no events needed)", async () => {
    const t = await nestingNode();
    // The configured Iceberg table (mode none) lies below s3://ext/warehouse.
    await expectRefused(t, { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://ext/warehouse', 'audit.tier.connectionId': 'ext' }, 'audit.tier.parquet.path', /contains the Iceberg table ice\.ops\.audit_events/);
    // A Parquet location is configured; a table whose catalog puts it inside that location is refused.
    expect((await postSettings(t, { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://ext/lake', 'audit.tier.connectionId': 'ext' })).status).toBe(200);
    await expectRefused(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'inner.ops.audit_events' }, 'audit.tier.iceberg.table', /Iceberg table inner\.ops\.audit_events \(s3:\/\/ext\/lake\/wh\/ops\/audit_events\) lies inside the Parquet location s3:\/\/ext\/lake/);
    // The same table in a catalog clear of it is accepted.
    expect((await postSettings(t, ICEBERG)).status).toBe(200);
  });
});
