// Goal: with tiering to Iceberg the table is registered for maintenance (cron, settings, next run), a run on demand compacts and expires and is itself an audit event, a renamed target is registered beside the old one, and maintenance settings are validated (a bad cron, days of month that never occur too, is a 400 naming it, nothing saved) and self-audited; a stored cron that never runs does not stop the node from starting.
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { SETTINGS_META } from '../src/settings-service.js';
import { MAINTENANCE_ENCODER_NICENESS } from '../src/tiering-service.js';
import { FAST_TIERING, externalS3, postSettings, waitUntilTiered } from './tier-helpers.js';
import { event, startTestNode } from './test-node.js';

const TABLE = 'ice.ops.audit_events';

async function maintenanceNode(extra: Record<string, string> = {}, dataDir?: string) {
  const s3 = await externalS3();
  const props = {
    ...FAST_TIERING,
    ...s3.props('ext'),
    'auditlake.iceberg.catalogs.ice.warehouse': 's3://ext/warehouse',
    'auditlake.iceberg.catalogs.ice.connectionId': 'ext',
    'auditlake.audit.tier.batch.size': '10',
    ...extra,
  };
  return { s3, props, t: await startTestNode({ props, ...(dataDir === undefined ? {} : { dataDir }) }) };
}

interface Registration {
  table: string;
  cron: string;
  nextRunMs: number | null;
  settings: Record<string, unknown>;
  runs: Array<Record<string, unknown>>;
}

describe('table maintenance', () => {
  it('registers the Iceberg target, runs on demand, and records each run as an audit event', async () => {
    const { t } = await maintenanceNode();
    expect(((await (await t.request('/admin/audit/maintenance')).json()) as { registrations: Registration[] }).registrations).toEqual([]);
    expect((await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': TABLE, 'audit.tier.maintenance.snapshot.retain.last': 2 })).status).toBe(200);
    const now = Date.now();
    for (let b = 0; b < 3; b++) await t.ingest(Array.from({ length: 10 }, (_, i) => event({ eventId: `m${b}-${i}`, ts: now - i })));
    await waitUntilTiered(t);

    const listed = ((await (await t.request('/admin/audit/maintenance')).json()) as { registrations: Registration[] }).registrations;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ table: TABLE, cron: '0 * * * *', settings: { snapshotRetainLast: 2, removeOrphanFiles: true } });
    expect(listed[0]!.nextRunMs).toBeGreaterThan(Date.now());

    const res = await t.request('/admin/audit/maintenance/run', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ table: TABLE }) });
    expect(res.status).toBe(200);
    const run = (await res.json()) as Record<string, unknown>;
    expect(run).toMatchObject({ table: TABLE, ok: true, error: null });
    expect(run['filesRewritten']).toBeGreaterThanOrEqual(2);
    expect(run['snapshotsExpired']).toBeGreaterThanOrEqual(1);
    for (const key of ['startedMs', 'finishedMs', 'filesAdded', 'filesDeleted', 'orphansDeleted', 'bytesBefore', 'bytesAfter']) expect(typeof run[key]).toBe('number');

    const after = ((await (await t.request('/admin/audit/maintenance')).json()) as { registrations: Registration[] }).registrations;
    expect(after[0]!.runs[0]).toMatchObject({ ok: true, startedMs: run['startedMs'] });
    const audit = (await (await t.request('/admin/audit?q=TableMaintenance')).json()) as { events: Array<Record<string, unknown>> };
    expect(audit.events.some((e) => e['action'] === 'audit:TableMaintenance' && e['resource'] === TABLE && String(e['details']).startsWith('ok;'))).toBe(true);

    const unknown = await t.request('/admin/audit/maintenance/run', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ table: 'ice.ops.nope' }) });
    expect(unknown.status).toBe(400);
    // A value nested too deep to print is refused like any other (it once made the refusal a 500).
    const depth = 1_000_000;
    const deep = await t.request('/admin/audit/maintenance/run', { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"table":${'['.repeat(depth)}${']'.repeat(depth)}}` });
    expect(deep.status).toBe(400);
    expect(await deep.json()).toMatchObject({ code: 'AUDIT_BAD_REQUEST', error: 'table must be a string: an array nested too deep to quote' });
  });

  it('a run record and its audit event say how many compaction passes ran and how many small files the last left (auditlake.audit.tier.maintenance.compaction.time.budget.ms configured)', async () => {
    const { t } = await maintenanceNode({ 'auditlake.audit.tier.maintenance.compaction.time.budget.ms': '60000' });
    expect((await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': TABLE })).status).toBe(200);
    const now = Date.now();
    for (let b = 0; b < 3; b++) await t.ingest(Array.from({ length: 10 }, (_, i) => event({ eventId: `p${b}-${i}`, ts: now - i })));
    await waitUntilTiered(t);
    const res = await t.request('/admin/audit/maintenance/run', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ table: TABLE }) });
    // A few small files fit in one pass: none left.
    expect(await res.json()).toMatchObject({ ok: true, compactionPasses: 1, smallFilesLeft: 0 });
    const [registration] = ((await (await t.request('/admin/audit/maintenance')).json()) as { registrations: Registration[] }).registrations;
    expect(registration!.runs[0]).toMatchObject({ compactionPasses: 1, smallFilesLeft: 0 });
    await expect
      .poll(async () => {
        const audit = (await (await t.request('/admin/audit?q=TableMaintenance')).json()) as { events: Array<Record<string, unknown>> };
        return audit.events.map((e) => String(e['details'])).find((details) => details.startsWith('ok;'));
      })
      .toMatch(/compactionPasses=1, smallFilesLeft=0/);
  });

  it('runs on its cron: with a cron of every two seconds the leader lists the next even second and records runs triggered by cron', async () => {
    const { t } = await maintenanceNode();
    expect((await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': TABLE, 'audit.tier.maintenance.cron': '*/2 * * * * *' })).status).toBe(200);
    const registrations = async () => ((await (await t.request('/admin/audit/maintenance')).json()) as { registrations: Registration[] }).registrations;
    const [first] = await registrations();
    expect(first).toMatchObject({ table: TABLE, cron: '*/2 * * * * *' });
    expect(first!.nextRunMs).toEqual(expect.any(Number));
    expect(first!.nextRunMs! % 2000).toBe(0);
    await expect.poll(async () => (await registrations())[0]!.runs.filter((run) => run['trigger'] === 'cron').length, { timeout: 60_000 }).toBeGreaterThanOrEqual(2);
    const runs = (await registrations())[0]!.runs;
    for (const run of runs) expect(run).toMatchObject({ trigger: 'cron', ok: true });
  });

  it('compacts in a thread MAINTENANCE_ENCODER_NICENESS nicer than the node, and only that thread runs nicer', async () => {
    const { t } = await maintenanceNode();
    expect((await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': TABLE })).status).toBe(200);
    const now = Date.now();
    for (let b = 0; b < 3; b++) await t.ingest(Array.from({ length: 10 }, (_, i) => event({ eventId: `n${b}-${i}`, ts: now - i })));
    await waitUntilTiered(t);
    const res = await t.request('/admin/audit/maintenance/run', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ table: TABLE }) });
    expect(((await res.json()) as Record<string, unknown>)['filesRewritten']).toBeGreaterThanOrEqual(2);
    // Each thread's nice value (field 19 of its stat, Linux). The maintenance encoder's worker
    // stays for its idle time (30 s) after the run; the sweep's keeps the node's priority.
    const base = getPriority();
    const niced = readdirSync('/proc/self/task')
      .map((tid) => readFileSync(`/proc/self/task/${tid}/stat`, 'utf8'))
      .map((stat) => Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]))
      .filter((nice) => nice !== base);
    expect(niced).toEqual([Math.min(19, base + MAINTENANCE_ENCODER_NICENESS)]);
  });

  it('a scheduled run while the sweep is more than two batches behind leaves compaction for later and says why in its record and audit event; a run asked for never defers', async () => {
    const { s3, t } = await maintenanceNode();
    // Every second (six fields: seconds first).
    expect((await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': TABLE, 'audit.tier.maintenance.cron': '* * * * * *' })).status).toBe(200);
    const now = Date.now();
    for (let b = 0; b < 3; b++) await t.ingest(Array.from({ length: 10 }, (_, i) => event({ eventId: `d${b}-${i}`, ts: now - i })));
    await waitUntilTiered(t);
    // The bucket unreachable: sweeps fail, and what arrives now waits.
    await s3.stop();
    await t.ingest(Array.from({ length: 21 }, (_, i) => event({ eventId: `late-${i}`, ts: now - i })));
    let deferred: Record<string, unknown> | undefined;
    await expect
      .poll(
        async () => {
          const [registration] = ((await (await t.request('/admin/audit/maintenance')).json()) as { registrations: Registration[] }).registrations;
          deferred = registration?.runs.find((run) => run['trigger'] === 'cron' && run['compactionDeferred'] !== null);
          return deferred !== undefined;
        },
        { timeout: 20_000, interval: 200 },
      )
      .toBe(true);
    // The 21 events, and the records of the runs since the bucket went away.
    const reason = String(deferred?.['compactionDeferred']);
    expect(reason).toMatch(/^the tier is \d+ events behind \(more than 2 batches\)$/);
    expect(Number(/\d+/.exec(reason)?.[0])).toBeGreaterThanOrEqual(21);
    expect(deferred).toMatchObject({ filesRewritten: 0 });
    const audit = (await (await t.request(`/admin/audit?q=${encodeURIComponent(`compactionDeferred=${reason}`)}`)).json()) as { events: Array<Record<string, unknown>> };
    expect(audit.events.some((e) => e['action'] === 'audit:TableMaintenance' && e['userId'] === 'cron')).toBe(true);
    // A run asked for never defers (one is asked for at once, the tier still behind).
    const asked = await t.request('/admin/audit/maintenance/run', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ table: TABLE }) });
    expect(await asked.json()).toMatchObject({ compactionDeferred: null });
    await s3.start();
    await waitUntilTiered(t);
  });

  it('registers a Parquet target and compacts its day on demand', async () => {
    const { t } = await maintenanceNode();
    expect((await postSettings(t, { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://ext/audit', 'audit.tier.connectionId': 'ext' })).status).toBe(200);
    const now = Date.now();
    for (let b = 0; b < 3; b++) await t.ingest(Array.from({ length: 10 }, (_, i) => event({ eventId: `p${b}-${i}`, ts: now - i })));
    await waitUntilTiered(t);
    const listed = ((await (await t.request('/admin/audit/maintenance')).json()) as { registrations: Array<Registration & { mode: string; location: string }> }).registrations;
    expect(listed.map((r) => [r.table, r.mode, r.location])).toEqual([['s3://ext/audit', 'parquet', 's3://ext/audit']]);
    const res = await t.request('/admin/audit/maintenance/run', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ table: 's3://ext/audit' }) });
    expect(res.status).toBe(200);
    const run = (await res.json()) as Record<string, unknown>;
    // Three commit markers: far fewer than a pack (1,000), so none is packed yet; the record says so.
    expect(run).toMatchObject({ table: 's3://ext/audit', ok: true, error: null, snapshotsExpired: 0, markersPacked: 0, packedMarkersDeleted: 0 });
    expect(run['filesRewritten']).toBeGreaterThanOrEqual(2);
    expect(run['filesAdded']).toBeGreaterThanOrEqual(1);
  });

  it('registers a renamed target beside the table that received events', async () => {
    const { t } = await maintenanceNode();
    await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': TABLE });
    await t.ingest([event({ eventId: 'r1' })]);
    await waitUntilTiered(t);
    await postSettings(t, { 'audit.tier.iceberg.table': 'ice.ops.audit_v2' });
    await expect
      .poll(async () => ((await (await t.request('/admin/audit/maintenance')).json()) as { registrations: Registration[] }).registrations.map((r) => r.table).sort())
      .toEqual(['ice.ops.audit_events', 'ice.ops.audit_v2']);
    // A new cron re-registers both.
    await postSettings(t, { 'audit.tier.maintenance.cron': '*/5 * * * *' });
    await expect.poll(async () => ((await (await t.request('/admin/audit/maintenance')).json()) as { registrations: Registration[] }).registrations.map((r) => r.cron)).toEqual(['*/5 * * * *', '*/5 * * * *']);
    // Disabled: no registrations.
    await postSettings(t, { 'audit.tier.maintenance.enabled': false });
    await expect.poll(async () => ((await (await t.request('/admin/audit/maintenance')).json()) as { registrations: Registration[] }).registrations).toEqual([]);
  });

  it('refuses a bad cron with a 400 naming it and saves nothing; a good change is self-audited', async () => {
    const { t } = await maintenanceNode();
    const bad = await postSettings(t, { 'audit.tier.maintenance.cron': 'every hour' });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/^audit\.tier\.maintenance\.cron must be a cron expression/);
    expect((await (await t.request('/admin/audit/settings')).json()) as Record<string, string>).toMatchObject({ 'audit.tier.maintenance.cron': '0 * * * *' });
    expect(await t.stored()).toEqual([]);
    expect((await postSettings(t, { 'audit.tier.maintenance.snapshot.retain.last': 0 })).status).toBe(400);
    expect((await postSettings(t, { 'audit.tier.maintenance.snapshot.retain.last': 5 })).status).toBe(200);
    const audit = (await (await t.request('/admin/audit?q=UpdateSettings')).json()) as { events: Array<Record<string, unknown>> };
    expect(audit.events.map((e) => e['details'])).toContain('audit.tier.maintenance.snapshot.retain.last: 24 → 5');
  });

  it('refuses a cron that would never run (a day of month that never occurs) with a 400 naming it, saving nothing', async () => {
    const { t } = await maintenanceNode();
    for (const cron of ['0 0 31 2 *', '0 0 30 2 *', '0 0 31 4 *', '0 0 31 4,6,9,11 *']) {
      const bad = await postSettings(t, { 'audit.tier.maintenance.cron': cron });
      expect(bad.status).toBe(400);
      expect(bad.json).toMatchObject({ code: 'AUDIT_SETTINGS_INVALID', error: expect.stringMatching(new RegExp(`^audit\\.tier\\.maintenance\\.cron must be a cron expression .*: ${cron.replace(/\*/g, '\\*')}$`)) as unknown });
    }
    expect((await (await t.request('/admin/audit/settings')).json()) as Record<string, string>).toMatchObject({ 'audit.tier.maintenance.cron': '0 * * * *' });
    expect(await t.stored()).toEqual([]);
  });

  it('starts on a stored cron that never runs (saved by an older version): warns, registers nothing, until a good cron is saved', async () => {
    const root = await mkdtemp(join(tmpdir(), 'auditlake-maintenance-'));
    onTestFinished(() => rm(root, { recursive: true, force: true }));
    const dataDir = join(root, 'data');
    const { t, props } = await maintenanceNode({}, dataDir);
    expect((await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': TABLE })).status).toBe(200);
    await expect.poll(async () => ((await (await t.request('/admin/audit/maintenance')).json()) as { registrations: Registration[] }).registrations.length).toBe(1);
    // What an older version, which took this cron, left in the data dir.
    const stored = await t.node.store.getMeta<Record<string, string>>(SETTINGS_META);
    await t.node.store.putMeta({ [SETTINGS_META]: { ...stored, 'audit.tier.maintenance.cron': '0 0 31 2 *' } });
    await t.node.close();

    const lines: string[] = [];
    const again = await startTestNode({ dataDir, props, node: { logger: { level: 'warn', stream: { write: (line: string) => lines.push(line) } } } });
    expect((await (await again.request('/admin/audit/settings')).json()) as Record<string, unknown>).toMatchObject({ 'audit.tier.mode': 'iceberg', 'audit.tier.maintenance.cron': '0 0 31 2 *' });
    expect(((await (await again.request('/admin/audit/maintenance')).json()) as { registrations: Registration[] }).registrations).toEqual([]);
    expect(lines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toContainEqual(
      `table maintenance is not registered: table maintenance cannot register ${TABLE}: audit.tier.maintenance.cron must be a cron expression whose day of month occurs in its months (day 31 never occurs in month 2, so it would never run): 0 0 31 2 *; set another cron`,
    );
    // Fixing the setting registers the table again.
    expect((await postSettings(again, { 'audit.tier.maintenance.cron': '0 3 * * *' })).status).toBe(200);
    await expect.poll(async () => ((await (await again.request('/admin/audit/maintenance')).json()) as { registrations: Registration[] }).registrations.map((r) => [r.table, r.cron])).toEqual([[TABLE, '0 3 * * *']]);
  });
});
