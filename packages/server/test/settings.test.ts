// Goal: the settings API validates, merges, persists and audits runtime settings; nothing persists on 400.
import { describe, expect, it } from 'vitest';
import { event, startTestNode, type TestNode } from './test-node.js';

const DAY = 86_400_000;

async function post(t: TestNode, body: unknown) {
  const res = await t.request('/admin/audit/settings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function get(t: TestNode) {
  const res = await t.request('/admin/audit/settings');
  return (await res.json()) as Record<string, unknown>;
}

describe('settings', () => {
  it('GET returns every runtime key, numbers and booleans as JSON numbers and booleans, defaults from configuration, plus tierStatus', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.retention.days': '30' } });
    expect(await get(t)).toEqual({
      'audit.retention.days': 30,
      'audit.read.enabled': true,
      'audit.read.sample.rate': 1,
      'audit.tier.mode': 'none',
      'audit.tier.iceberg.table': 'ice.ops.audit_events',
      'audit.tier.parquet.path': '',
      'audit.tier.connectionId': '',
      'audit.tier.retain.local.days': 7,
      'audit.redact.keys': 'password,passwd,pwd,passphrase,secret,token,credential,access-key,secret-key,session-token,api-key,private-key,authorization,cookie,amz-signature,goog-signature,sig',
      'audit.tier.maintenance.enabled': true,
      'audit.tier.maintenance.cron': '0 * * * *',
      'audit.tier.maintenance.snapshot.retain.last': 24,
      'audit.tier.maintenance.remove.orphan.files': true,
      'audit.tier.maintenance.orphan.min.age.ms': 259200000,
      'audit.tier.maintenance.target.file.size.bytes': 16777216,
      'audit.tier.maintenance.metadata.previous.versions.max': 100,
      tierStatus: expect.objectContaining({ mode: 'none', lastSuccessMs: 0, lastFailureMs: 0, lastError: null, retainLocalDays: 7, backlog: 0, deferred: 0, watermark: { ingestTs: 0, seq: 0 } }),
    });
  });

  it('POST changes a subset, merged over what is stored, answers like GET, and survives a restart', async () => {
    const t = await startTestNode();
    const first = await post(t, { 'audit.retention.days': 30 });
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({ 'audit.retention.days': 30, 'audit.read.sample.rate': 1 });
    const second = await post(t, { 'audit.read.sample.rate': '0.25', 'audit.read.enabled': true });
    expect(second.json).toMatchObject({ 'audit.retention.days': 30, 'audit.read.sample.rate': 0.25, 'audit.read.enabled': true });
    await t.node.close();
    const again = await startTestNode({ dataDir: t.dataDir });
    expect(await get(again)).toMatchObject({ 'audit.retention.days': 30, 'audit.read.sample.rate': 0.25 });
  });

  it('takes a GET answer posted back as it is (tierStatus and all) and changes nothing', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.read.sample.rate': '1.0' } });
    await post(t, { 'audit.retention.days': 30 });
    const answer = await get(t);
    const res = await post(t, answer);
    expect(res.status).toBe(200);
    const { tierStatus: _a, ...before } = answer;
    const { tierStatus: _b, ...after } = res.json;
    expect(after).toEqual(before);
    // Only the first save is a change; posting the answer back recorded nothing more.
    expect((await t.stored()).filter((e) => e.action === 'audit:UpdateSettings')).toHaveLength(1);
    // An edited answer changes just the edited key.
    const edited = await post(t, { ...answer, 'audit.retention.days': 31 });
    expect(edited.json).toMatchObject({ 'audit.retention.days': 31, 'audit.read.sample.rate': 1 });
    expect((await t.stored()).filter((e) => e.action === 'audit:UpdateSettings').map((e) => e.details)).toContain('audit.retention.days: 30 → 31');
  });

  it('stores only the keys a save changes: a GET answer posted back with one edit leaves the others following the configuration', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.retention.days': '30' } });
    const edited = await post(t, { ...(await get(t)), 'audit.read.sample.rate': 0.5 });
    expect(edited.json).toMatchObject({ 'audit.retention.days': 30, 'audit.read.sample.rate': 0.5 });
    await t.node.close();
    // The configuration changes at the restart: the key the save did not change follows it.
    const again = await startTestNode({ dataDir: t.dataDir, props: { 'auditlake.audit.retention.days': '60' } });
    expect(await get(again)).toMatchObject({ 'audit.retention.days': 60, 'audit.read.sample.rate': 0.5 });
  });

  it('a saved key given null is unset: it follows the configuration again, across restarts, and the change is recorded', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.retention.days': '30' } });
    await post(t, { 'audit.retention.days': 45, 'audit.read.sample.rate': 0.5 });
    const unset = await post(t, { 'audit.retention.days': null });
    expect(unset.status).toBe(200);
    expect(unset.json).toMatchObject({ 'audit.retention.days': 30, 'audit.read.sample.rate': 0.5 });
    const records = (await t.stored()).filter((e) => e.action === 'audit:UpdateSettings').map((e) => e.details);
    expect(records.reverse()).toEqual(['audit.retention.days: 30 → 45; audit.read.sample.rate: 1 → 0.5', 'audit.retention.days: 45 → 30 (unset: follows configuration)']);
    await t.node.close();
    const again = await startTestNode({ dataDir: t.dataDir, props: { 'auditlake.audit.retention.days': '60' } });
    expect(await get(again)).toMatchObject({ 'audit.retention.days': 60, 'audit.read.sample.rate': 0.5 });
  });

  it('unsets a saved key whose value the configuration also gives (recorded: what is stored changed), and a key not saved given null is no change', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.retention.days': '30' } });
    await post(t, { 'audit.retention.days': 45 });
    await post(t, { 'audit.retention.days': 30 }); // pinned at the configured value
    const unset = await post(t, { 'audit.retention.days': null });
    expect(unset.json).toMatchObject({ 'audit.retention.days': 30 });
    const none = await post(t, { 'audit.retention.days': null, 'audit.read.enabled': null, tierStatus: null });
    expect(none.status).toBe(200);
    const records = (await t.stored()).filter((e) => e.action === 'audit:UpdateSettings').map((e) => e.details);
    expect(records.reverse()).toEqual(['audit.retention.days: 30 → 45', 'audit.retention.days: 45 → 30', 'audit.retention.days: 30 (unset: follows configuration)']);
    await t.node.close();
    const again = await startTestNode({ dataDir: t.dataDir, props: { 'auditlake.audit.retention.days': '60' } });
    expect(await get(again)).toMatchObject({ 'audit.retention.days': 60 });
  });

  it('refuses null for an unknown key, saving nothing', async () => {
    const t = await startTestNode();
    const before = await get(t);
    const unknown = await post(t, { 'audit.retention.days': 3, 'audit.retention.dayz': null });
    expect(unknown).toMatchObject({ status: 400, json: { code: 'AUDIT_SETTINGS_INVALID', error: expect.stringMatching(/^unknown setting: audit\.retention\.dayz /) } });
    expect(await get(t)).toEqual(before);
    expect(await t.stored()).toEqual([]);
  });

  it('records each accepted change as an audit:UpdateSettings event with old → new per key', async () => {
    const t = await startTestNode();
    await post(t, { 'audit.retention.days': '45', 'audit.read.sample.rate': 0.5 });
    const events = (await t.stored()).filter((e) => e.action === 'audit:UpdateSettings');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      source: 'auditlake',
      userId: 'admin',
      decision: 'ALLOW',
      details: 'audit.retention.days: 90 → 45; audit.read.sample.rate: 1 → 0.5',
    });
    // Saving the same values again changes nothing and records nothing.
    await post(t, { 'audit.retention.days': '45' });
    expect((await t.stored()).filter((e) => e.action === 'audit:UpdateSettings')).toHaveLength(1);
  });

  const invalid: Array<[Record<string, unknown>, string]> = [
    [{ 'audit.retention.days': 0 }, 'audit.retention.days must be a positive integer: 0'],
    [{ 'audit.retention.days': 'abc' }, 'audit.retention.days must be a positive integer: abc'],
    [{ 'audit.retention.days': 1.5 }, 'audit.retention.days must be a positive integer: 1.5'],
    [{ 'audit.read.enabled': 'yes' }, 'audit.read.enabled must be true or false: yes'],
    [{ 'audit.read.sample.rate': 1.5 }, 'audit.read.sample.rate must be a number from 0.0 to 1.0: 1.5'],
    [{ 'audit.read.sample.rate': '-0.1' }, 'audit.read.sample.rate must be a number from 0.0 to 1.0: -0.1'],
    [{ 'audit.tier.retain.local.days': -1 }, 'audit.tier.retain.local.days must be a non-negative integer: -1'],
    [{ 'audit.tier.mode': 'icebreg' }, 'audit.tier.mode must be one of none, iceberg, parquet: icebreg'],
    [{ 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': '' }, 'audit.tier.iceberg.table is required when audit.tier.mode=iceberg'],
    [{ 'audit.tier.mode': 'parquet' }, 'audit.tier.parquet.path is required when audit.tier.mode=parquet'],
    [{ 'audit.retention.days': '0x10' }, 'audit.retention.days must be a positive integer: 0x10'],
    [{ 'audit.retention.days': '1e2' }, 'audit.retention.days must be a positive integer: 1e2'],
    [{ 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'ice.audit_events' }, 'audit tier target ice.audit_events is not usable: audit tier iceberg table must be catalog.schema.table: ice.audit_events'],
    [{ 'audit.retention.dayz': 3 }, 'unknown setting: audit.retention.dayz (known: audit.retention.days, audit.read.enabled, audit.read.sample.rate, audit.tier.mode, audit.tier.iceberg.table, audit.tier.parquet.path, audit.tier.connectionId, audit.tier.retain.local.days, audit.redact.keys, audit.tier.maintenance.enabled, audit.tier.maintenance.cron, audit.tier.maintenance.snapshot.retain.last, audit.tier.maintenance.remove.orphan.files, audit.tier.maintenance.orphan.min.age.ms, audit.tier.maintenance.target.file.size.bytes, audit.tier.maintenance.metadata.previous.versions.max)'],
    [{ 'audit.retention.days': { n: 3 } }, 'audit.retention.days must be a string, number or boolean (or null to unset a saved value): {"n":3}'],
    [{ 'audit.tier.maintenance.cron': '61 * * * *' }, 'audit.tier.maintenance.cron must be a cron expression of 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first: 61 * * * *'],
    [{ 'audit.tier.maintenance.cron': '0 0 31 2 *' }, 'audit.tier.maintenance.cron must be a cron expression whose day of month occurs in its months (day 31 never occurs in month 2, so it would never run): 0 0 31 2 *'],
    [{ 'audit.tier.maintenance.orphan.min.age.ms': -5 }, 'audit.tier.maintenance.orphan.min.age.ms must be a non-negative integer: -5'],
    [{ 'audit.tier.maintenance.orphan.min.age.ms': 0 }, 'audit.tier.maintenance.orphan.min.age.ms must be at least 3600000 (1 hour; younger unreferenced files may belong to a commit still being written): 0'],
    [{ 'audit.tier.maintenance.orphan.min.age.ms': 3_599_999 }, 'audit.tier.maintenance.orphan.min.age.ms must be at least 3600000 (1 hour; younger unreferenced files may belong to a commit still being written): 3599999'],
    [{ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://auditlake/../../../../tmp/x', 'audit.tier.connectionId': 'local' }, `audit.tier.parquet.path must be s3://bucket/prefix: "s3://auditlake/../../../../tmp/x": the key prefix has a '..' segment`],
    [{ 'audit.tier.parquet.path': 's3://auditlake/./audit' }, `audit.tier.parquet.path must be s3://bucket/prefix: "s3://auditlake/./audit": the key prefix has a '.' segment`],
    [{ 'audit.tier.parquet.path': 's3://auditlake//audit' }, `audit.tier.parquet.path must be s3://bucket/prefix: "s3://auditlake//audit": the key prefix must not start with '/' (write s3://bucket/prefix)`],
    [{ 'audit.tier.parquet.path': 's3://auditlake/a\u0000b' }, 'audit.tier.parquet.path must be s3://bucket/prefix: "s3://auditlake/a\\u0000b": the key prefix has a control character (U+0000)'],
    [{ 'audit.tier.parquet.path': 's3://Audit_Lake/x' }, `audit.tier.parquet.path must be s3://bucket/prefix: "s3://Audit_Lake/x": the bucket name 'Audit_Lake' may hold only lower-case letters, digits, '.' and '-', and must start and end with a letter or digit`],
    [{ 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'local.a/b.c' }, "audit tier target local.a/b.c is not usable: audit tier iceberg table must be catalog.schema.table: local.a/b.c (the schema name 'a/b' may hold only letters, digits and '_', and must not start with a digit)"],
    [{ 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'local.ops.x..y' }, 'audit tier target local.ops.x..y is not usable: audit tier iceberg table must be catalog.schema.table: local.ops.x..y'],
  ];
  for (const [body, message] of invalid) {
    it(`refuses ${JSON.stringify(body)} with 400 and the message, persisting nothing`, async () => {
      const t = await startTestNode();
      const before = await get(t);
      // A valid key alongside the invalid one must not be applied either.
      const res = await post(t, { 'audit.read.sample.rate': '0.75', ...body });
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ status: 'error', error: message, code: 'AUDIT_SETTINGS_INVALID' });
      expect(await get(t)).toEqual(before);
      expect(await t.stored()).toEqual([]);
    });
  }

  it('refuses a body that names a key twice (JSON.parse kept the last), naming it, and saves nothing; also a key spelled with escapes', async () => {
    const t = await startTestNode();
    const before = await get(t);
    const send = (text: string) => t.request('/admin/audit/settings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
    for (const text of ['{"audit.retention.days":"abc","audit.retention.days":8}', '{"audit.retention.days":5,"audit.read.enabled":true,"audit.retention.\\u0064ays":7}']) {
      const res = await send(text);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ status: 'error', error: 'the request names "audit.retention.days" twice; name each key once (nothing was saved)', code: 'AUDIT_SETTINGS_INVALID' });
    }
    expect(await get(t)).toEqual(before);
    expect(await t.stored()).toEqual([]);
    // Names alike in different objects, and in string values, are no repeat; an object's own prototype key is refused as unknown.
    const nested = await send('{"audit.redact.keys":"audit.redact.keys","audit.retention.days":9}');
    expect(nested.status).toBe(200);
    const proto = await send('{"__proto__":{"audit.retention.days":1}}');
    expect(proto.status).toBe(400);
    expect(await get(t)).toMatchObject({ 'audit.retention.days': 9 });
    // A leading byte-order mark is taken, as Fastify's own parser takes it.
    const bom = await send('\uFEFF{"audit.retention.days":10}');
    expect(bom.status).toBe(200);
    expect(await get(t)).toMatchObject({ 'audit.retention.days': 10 });
    // Not JSON at all: the parser's own refusal, as before.
    const broken = await send('{"audit.retention.days":');
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { error: string }).error).toMatch(/^request body is not valid JSON/);
  });

  it('refuses a body that is not a JSON object', async () => {
    const t = await startTestNode();
    const res = await post(t, ['audit.retention.days', 3]);
    expect(res.status).toBe(400);
    expect(res.json['error']).toBe('settings request must be a JSON object of setting keys to values');
  });

  it('serialises concurrent saves so neither loses the other', async () => {
    const t = await startTestNode();
    await Promise.all([post(t, { 'audit.retention.days': 10 }), post(t, { 'audit.read.sample.rate': 0.3 }), post(t, { 'audit.tier.retain.local.days': 3 })]);
    expect(await get(t)).toMatchObject({ 'audit.retention.days': 10, 'audit.read.sample.rate': 0.3, 'audit.tier.retain.local.days': 3 });
  });

  it('applies a lowered audit.retention.days immediately, pruning older events', async () => {
    const t = await startTestNode();
    const now = Date.now();
    await t.ingest([event({ eventId: 'old', ts: now - 40 * DAY }), event({ eventId: 'mid', ts: now - 20 * DAY }), event({ eventId: 'new', ts: now - DAY })]);
    expect((await t.stored()).map((e) => e.eventId).sort()).toEqual(['mid', 'new', 'old']);
    await post(t, { 'audit.retention.days': 30 });
    await expect.poll(async () => (await t.stored()).filter((e) => e.source === 'trino').map((e) => e.eventId).sort()).toEqual(['mid', 'new']);
    await post(t, { 'audit.retention.days': 7 });
    await expect.poll(async () => (await t.stored()).filter((e) => e.source === 'trino').map((e) => e.eventId)).toEqual(['new']);
    // The counter is raised when the pruner's pass returns, a moment after the deletions became
    // visible to reads, so it is polled too.
    await expect.poll(async () => (await (await t.request('/metrics', { token: null })).text()).match(/^auditlake_events_pruned_total (\S+)$/m)?.[1]).toBe('2');
    // Pruned events are gone from every index: the id can be looked up no more.
    expect(await t.node.store.getByEventId('old')).toBeUndefined();
  });

  it('keeps the history of its settings records in the replicated metadata, oldest first', async () => {
    const t = await startTestNode();
    const post = (body: Record<string, unknown>) => t.request('/admin/audit/settings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post({ 'audit.retention.days': 30 })).status).toBe(200);
    expect((await post({ 'audit.retention.days': 31 })).status).toBe(200);
    const records = (await t.stored()).filter((e) => e.action === 'audit:UpdateSettings').sort((a, b) => a.seq - b.seq).map((e) => e.eventId);
    expect(records).toHaveLength(2);
    expect(t.node.store.meta('settingsRecords')).toEqual(records);
    expect(t.node.store.meta('settingsRecord')).toBe(records[1]);
  });
});
