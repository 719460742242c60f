// Goal: the leader's watermarked sweep tiers every event to day-partitioned Parquet on S3 exactly once, reports its health, never loses local data, and the viewer reads the full history back; an erasure record only the tier holds cannot itself be erased, and an event re-sent after retention deleted its local copy is recognised in the tier (stored again only while the tier cannot be read), and an erasure reaches every tiered copy of an event, whatever time each copy has.
import { createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { FAST_TIERING, downloadPrefix, duckdb, externalS3, postSettings, tierStatus, waitUntilTiered } from './tier-helpers.js';
import type { SettingChange } from '@auditlake/model';
import { tieringOffWarning } from '../src/routes/settings-route.js';
import { SETTINGS_META } from '../src/settings-service.js';
import { event, INGEST_TOKEN, startTestNode } from './test-node.js';

const DAY = 86_400_000;
const PARQUET = { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://ext/audit', 'audit.tier.connectionId': 'ext' };

async function tieringNode(extraProps: Record<string, string> = {}, logLines?: string[]) {
  const s3 = await externalS3();
  const logger = logLines ? { logger: { level: 'warn', stream: { write: (line: string) => logLines.push(line) } } } : {};
  const t = await startTestNode({ props: { ...FAST_TIERING, ...s3.props('ext'), ...extraProps }, node: logger });
  return { s3, t };
}

/**
 * A node tiering to Parquet with 1-day retention whose bucket is down, holding `count` events
 * ten days old (`old0`…): kept untiered past retention, counted as deferred.
 */
async function nodeWithDeferred(count: number, retentionIntervalMs: number) {
  const { s3, t } = await tieringNode({ 'auditlake.audit.retention.interval.ms': String(retentionIntervalMs) });
  await postSettings(t, { ...PARQUET, 'audit.retention.days': 1 });
  await s3.stop();
  const old = Date.now() - 10 * DAY;
  await t.ingest(Array.from({ length: count }, (_, i) => event({ eventId: `old${i}`, ts: old + i })));
  // Counted in the background (at most a second after the retention changed): polled.
  await expect.poll(async () => (await tierStatus(t)).deferred, { timeout: 30_000 }).toBe(count);
  return { s3, t };
}

describe('parquet tiering settings', () => {
  const refusals: Array<[Record<string, unknown>, RegExp]> = [
    [{ 'audit.tier.mode': 'icebreg' }, /^audit\.tier\.mode must be one of none, iceberg, parquet: icebreg$/],
    [{ 'audit.tier.mode': 'parquet' }, /^audit\.tier\.parquet\.path is required when audit\.tier\.mode=parquet$/],
    [{ ...PARQUET, 'audit.tier.parquet.path': 'ext/audit' }, /^audit\.tier\.parquet\.path must be s3:\/\/bucket\/prefix: "ext\/audit": it must start with s3:\/\/ \(s3:\/\/bucket\/prefix\)$/],
    [{ ...PARQUET, 'audit.tier.connectionId': '' }, /^audit\.tier\.connectionId is required when audit\.tier\.mode=parquet$/],
    [{ ...PARQUET, 'audit.tier.connectionId': 'nosuch' }, /^audit tier target s3:\/\/ext\/audit is not usable: No S3 connection config for audit tier connection 'nosuch' \(known: ext\)$/],
    // A key naming configuration is checked when saved, tiering on or off: a later enable must not be the first to find it unknown.
    [{ 'audit.tier.connectionId': 'nosuch' }, /^audit\.tier\.connectionId "nosuch" names no configured S3 connection \(known: ext\); configure auditlake\.s3\.connections\.nosuch\.\* or name a known one — nothing was saved$/],
    [{ 'audit.tier.parquet.path': 's3://ext/audit', 'audit.tier.connectionId': 'Ext' }, /^audit\.tier\.connectionId "Ext" names no configured S3 connection \(known: ext\)/],
    [{ 'audit.tier.mode': 'none', 'audit.tier.connectionId': 'nosuch' }, /^audit\.tier\.connectionId "nosuch" names no configured S3 connection/],
    [{ 'audit.tier.iceberg.table': 'nosuchcat.x.audit_events' }, /^audit\.tier\.iceberg\.table "nosuchcat\.x\.audit_events" names catalog 'nosuchcat', which is not configured \(known: none\); configure auditlake\.iceberg\.catalogs\.nosuchcat\.\* or name a known one — nothing was saved$/],
    [{ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://ext/audit', 'audit.tier.connectionId': 'ext', 'audit.tier.iceberg.table': 'nosuchcat.x.audit_events' }, /^audit\.tier\.iceberg\.table "nosuchcat\.x\.audit_events" names catalog 'nosuchcat'/],
    [{ ...PARQUET, 'audit.tier.parquet.path': 's3://missing-bucket/audit' }, /^audit tier target s3:\/\/missing-bucket\/audit is not usable: bucket missing-bucket cannot be reached through connection 'ext': /],
    [{ 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'nosuchcat.x.audit_events' }, /^audit tier target nosuchcat\.x\.audit_events is not usable: No catalog config for audit tier catalog 'nosuchcat'$/],
  ];
  for (const [body, message] of refusals) {
    it(`refuses ${JSON.stringify(body)} with 400 and persists nothing`, async () => {
      const { t } = await tieringNode();
      // The stored settings (tierStatus aside: its next attempt time moves on by itself).
      const stored = async () => {
        const { tierStatus: _status, ...settings } = (await (await t.request('/admin/audit/settings')).json()) as Record<string, unknown>;
        return settings;
      };
      const before = await stored();
      const res = await postSettings(t, body);
      expect(res.status).toBe(400);
      expect(res.json.error).toMatch(message);
      expect(await stored()).toEqual(before);
      expect(await t.stored()).toEqual([]);
    });
  }

  it('saves the tier target whole: a node configured otherwise runs the target the save checked, and starts', async () => {
    // The path and connection come from this node's configuration; the save names only the mode.
    const { s3, t } = await tieringNode({ 'auditlake.audit.tier.parquet.path': 's3://ext/audit', 'auditlake.audit.tier.connectionId': 'ext' });
    const saved = await postSettings(t, { 'audit.tier.mode': 'parquet' });
    expect(saved.status).toBe(200);
    const records = (await t.stored()).filter((e) => e.action === 'audit:UpdateSettings').map((e) => e.details);
    expect(records).toEqual(['audit.tier.mode: none → parquet; audit.tier.iceberg.table: ice.ops.audit_events (saved with the tier target); audit.tier.parquet.path: s3://ext/audit (saved with the tier target); audit.tier.connectionId: ext (saved with the tier target)']);
    await t.node.close();
    // Restarted with a configuration that names no path (a standby configured otherwise): before
    // the target was saved whole, it refused to start ("path is required when mode=parquet").
    const again = await startTestNode({ dataDir: t.dataDir, props: { ...FAST_TIERING, ...s3.props('ext') } });
    expect((await postSettings(again, {})).json).toMatchObject({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://ext/audit', 'audit.tier.connectionId': 'ext' });
    await again.ingest([event({ eventId: 'after-restart' })]);
    await waitUntilTiered(again);
    const dir = await downloadPrefix(s3.props('ext'), 'ext', 'ext', 'audit/');
    expect(await duckdb(`SELECT count(*)::INTEGER AS n FROM read_parquet('${dir}/audit/**/*.parquet') WHERE event_id = 'after-restart'`)).toEqual([{ n: 1 }]);
  });

  it('a target key given null unsets the whole target, recorded per key; beside a new value of another target key it is refused, saving nothing', async () => {
    const { t } = await tieringNode();
    expect((await postSettings(t, { ...PARQUET, 'audit.read.sample.rate': 0.5 })).status).toBe(200);
    const stored = (await t.stored()).length;
    const mixed = await postSettings(t, { 'audit.tier.mode': null, 'audit.tier.parquet.path': 's3://ext/elsewhere' });
    expect(mixed.status).toBe(400);
    expect(mixed.json.error).toBe(
      'audit.tier.mode is given null, which unsets the whole tier target (audit.tier.mode, audit.tier.iceberg.table, audit.tier.parquet.path, audit.tier.connectionId: saved together), while audit.tier.parquet.path is given a new value in the same request: unset the target, or give its keys values — nothing was saved',
    );
    expect((await t.stored()).length).toBe(stored);
    // The path alone given null (the configuration gives none, which the saved mode would need)
    // unsets the mode with it; another target key given its value in force is no change.
    const unset = await postSettings(t, { 'audit.tier.parquet.path': null, 'audit.tier.connectionId': 'ext' });
    expect(unset.status).toBe(200);
    expect(unset.json).toMatchObject({ 'audit.tier.mode': 'none', 'audit.tier.parquet.path': '', 'audit.tier.connectionId': '', 'audit.read.sample.rate': 0.5 });
    const records = (await t.stored()).filter((e) => e.action === 'audit:UpdateSettings').map((e) => e.details);
    expect(records[0]).toBe(
      'audit.tier.mode: parquet → none (unset: follows configuration); audit.tier.parquet.path: s3://ext/audit → (empty) (unset: follows configuration); audit.tier.connectionId: ext → (empty) (unset: follows configuration); audit.tier.iceberg.table: ice.ops.audit_events (unset: follows configuration)',
    );
  });

  it('a node whose configuration does not fit a partly saved target (saved before targets were saved whole) refuses to start, saying what to do', async () => {
    const { s3, t } = await tieringNode({ 'auditlake.audit.tier.parquet.path': 's3://ext/audit', 'auditlake.audit.tier.connectionId': 'ext' });
    await t.node.store.putMeta({ [SETTINGS_META]: { 'audit.tier.mode': 'parquet' } });
    await t.node.close();
    await expect(startTestNode({ dataDir: t.dataDir, props: { ...FAST_TIERING, ...s3.props('ext') } })).rejects.toThrow(
      "the saved runtime settings do not fit this node's auditlake.audit.* configuration: audit.tier.parquet.path is required when audit.tier.mode=parquet (saved at runtime, and run by every node: audit.tier.mode; every other key follows this node's configuration). Give this node the configuration the node that saved them has, or save the tier target again on the leader (a save of any of its keys stores all four)",
    );
  });

  it('refuses a target whose S3 endpoint is down, naming it', async () => {
    const { s3, t } = await tieringNode();
    await s3.stop();
    const res = await postSettings(t, PARQUET);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(/^audit tier target s3:\/\/ext\/audit is not usable: bucket ext cannot be reached through connection 'ext': /);
  });

  it('takes changes of the tier keys that do not name the target while its bucket is down (a target change is still checked); turned off, tiering reports no failure', async () => {
    const { s3, t } = await tieringNode();
    expect((await postSettings(t, PARQUET)).status).toBe(200);
    await s3.stop();
    await t.ingest([event({ eventId: 'during-outage' })]);
    await expect.poll(async () => (await tierStatus(t)).consecutiveFailures, { timeout: 10_000 }).toBeGreaterThan(0);
    // Lengthening local retention because the bucket is down, or changing maintenance, is no target change.
    for (const body of [{ 'audit.tier.retain.local.days': 30 }, { 'audit.tier.maintenance.cron': '15 * * * *' }, { 'audit.tier.maintenance.enabled': false }, { 'audit.tier.maintenance.orphan.min.age.ms': 7_200_000 }]) {
      const res = await postSettings(t, body);
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      expect(res.json).toMatchObject(body);
    }
    const moved = await postSettings(t, { 'audit.tier.parquet.path': 's3://ext/elsewhere' });
    expect(moved.status).toBe(400);
    expect(moved.json.error).toMatch(/^audit tier target s3:\/\/ext\/elsewhere is not usable: bucket ext cannot be reached/);
    // Off, nothing is tiered and so nothing fails: the failure from before is not shown as current.
    expect((await postSettings(t, { 'audit.tier.mode': 'none' })).status).toBe(200);
    await expect.poll(async () => (await tierStatus(t)).lastError, { timeout: 10_000 }).toBeNull();
    expect(await tierStatus(t)).toMatchObject({ mode: 'none', consecutiveFailures: 0 });
    expect((await tierStatus(t)).lastFailureMs).toBeGreaterThan(0);
  });

  it('accepts a known connection while tiering is off, and other tier keys beside a default table whose catalog is not configured', async () => {
    const { t } = await tieringNode();
    expect((await postSettings(t, { 'audit.tier.connectionId': 'ext' })).status).toBe(200);
    expect((await postSettings(t, { 'audit.tier.retain.local.days': 3 })).status).toBe(200);
    expect((await postSettings(t, { 'audit.tier.connectionId': '' })).status).toBe(200);
  });

  it('accepts a valid target, merged over stored keys', async () => {
    const { t } = await tieringNode();
    expect((await postSettings(t, { 'audit.tier.parquet.path': 's3://ext/audit', 'audit.tier.connectionId': 'ext' })).status).toBe(200);
    const res = await postSettings(t, { 'audit.tier.mode': 'parquet' });
    expect(res.status).toBe(200);
    expect(res.json.tierStatus.mode).toBe('parquet');
  });
});

describe('parquet tiering sweep', () => {
  it('tiers every event once into event_date partitions that DuckDB reads back with the right values', async () => {
    const { s3, t } = await tieringNode();
    const now = Date.now();
    const events = Array.from({ length: 300 }, (_, i) =>
      event({ eventId: `e${i}`, ts: now - (i % 3) * DAY - i, decision: i % 10 === 0 ? 'DENY' : 'ALLOW', userId: `user${i % 7}`, tables: ['hive.a.t1', 'hive.b.t2'] }),
    );
    await t.ingest(events);
    expect((await postSettings(t, PARQUET)).status).toBe(200);
    const status = await waitUntilTiered(t);
    expect(status).toMatchObject({ mode: 'parquet', lastError: null, backlog: 0, deferred: 0 });
    expect(status.lastSuccessMs).toBeGreaterThan(0);
    // The last batch: how many events, how many bytes written, how long it took.
    expect(status.lastBatch!.count).toBeGreaterThan(0);
    expect(status.lastBatch!.bytes).toBeGreaterThan(0);
    expect(status.lastBatch!.ms).toBeGreaterThanOrEqual(0);
    expect(status.nextAttemptMs).toBeGreaterThan(0);
    const dir = await downloadPrefix(s3.props('ext'), 'ext', 'ext', 'audit/');
    const rows = await duckdb(
      `SELECT event_id, user_id, decision, ts, tables, ingest_ts, event_date::VARCHAR AS event_date, strftime(event_time, '%Y-%m-%d') AS day FROM read_parquet('${dir}/audit/event_date=*/*.parquet', hive_partitioning = true) WHERE source = 'trino' ORDER BY event_id`,
    );
    const tiered = t.node.store;
    expect(rows).toHaveLength(300);
    expect(new Set(rows.map((r) => r['event_id'])).size).toBe(300);
    for (const row of rows) {
      const stored = await tiered.getByEventId(String(row['event_id']));
      expect(row).toMatchObject({ user_id: stored!.userId, decision: stored!.decision, ts: String(stored!.timestamp), tables: 'hive.a.t1,hive.b.t2', ingest_ts: String(stored!.ingestTs) });
      // The hive partition is the event's UTC day.
      expect(row['event_date']).toBe(new Date(stored!.timestamp).toISOString().slice(0, 10));
      expect(row['day']).toBe(row['event_date']);
    }
    const perDecision = await duckdb(`SELECT source, decision, count(*)::INTEGER AS n FROM read_parquet('${dir}/audit/*/*.parquet') GROUP BY ALL ORDER BY ALL`);
    // The settings change that turned tiering on is an audit event too, and is tiered with the rest.
    expect(perDecision).toEqual([
      { source: 'auditlake', decision: 'ALLOW', n: 1 },
      { source: 'trino', decision: 'ALLOW', n: 270 },
      { source: 'trino', decision: 'DENY', n: 30 },
    ]);
  });

  it('tiers an event with an old ts that arrives after newer events were tiered', async () => {
    const { s3, t } = await tieringNode();
    await t.ingest([event({ eventId: 'new1' }), event({ eventId: 'new2' })]);
    await postSettings(t, PARQUET);
    await waitUntilTiered(t);
    await t.ingest([event({ eventId: 'late', ts: Date.now() - 20 * DAY })]);
    await waitUntilTiered(t);
    const dir = await downloadPrefix(s3.props('ext'), 'ext', 'ext', 'audit/');
    const rows = await duckdb(`SELECT event_id, event_date::VARCHAR AS d FROM read_parquet('${dir}/audit/*/*.parquet', hive_partitioning = true) WHERE source = 'trino' ORDER BY event_id`);
    expect(rows.map((r) => r['event_id'])).toEqual(['late', 'new1', 'new2']);
    expect(rows[0]!['d']).toBe(new Date(Date.now() - 20 * DAY).toISOString().slice(0, 10));
  });

  it('never splits a group of events that share an ingest millisecond across batches', async () => {
    const { t } = await tieringNode({ 'auditlake.audit.tier.batch.size': '3' });
    // Each request is one group commit: its events share one ingestTs. Groups of 2, 5, 1, 4.
    for (const [n, size] of [[0, 2], [1, 5], [2, 1], [3, 4]] as const) {
      await t.ingest(Array.from({ length: size }, (_, i) => event({ eventId: `g${n}-${i}` })));
    }
    await postSettings(t, PARQUET);
    await waitUntilTiered(t);
    const all = await t.node.store.readBySeq(0, 100);
    // Reconstruct batches from the commit markers' seq ranges.
    const { readParquetLog, parseS3Location } = await import('@auditlake/lake');
    const location = parseS3Location('s3://ext/audit')!;
    const { markers: committed } = await readParquetLog(t.node.tiering.connections.bucket('ext', 'ext'), location, undefined, { fromCheckpoint: false });
    expect(committed.length).toBeGreaterThan(1);
    const batchOf = new Map<number, number>();
    committed.forEach((m, b) => {
      for (let seq = m.firstSeq; seq <= m.watermark.seq; seq++) batchOf.set(seq, b);
    });
    const batchesByIngestTs = new Map<number, Set<number>>();
    for (const e of all) {
      const set = batchesByIngestTs.get(e.ingestTs) ?? new Set<number>();
      set.add(batchOf.get(e.seq)!);
      batchesByIngestTs.set(e.ingestTs, set);
    }
    expect([...batchesByIngestTs.values()].every((s) => s.size === 1)).toBe(true);
    // No batch exceeds the limit unless it is a single group.
    for (const m of committed) {
      const size = m.watermark.seq - m.firstSeq + 1;
      const groups = new Set(all.filter((e) => e.seq >= m.firstSeq && e.seq <= m.watermark.seq).map((e) => e.ingestTs));
      expect(size <= 3 || groups.size === 1).toBe(true);
    }
  });

  it('leaves events ingested inside the settle window for a later sweep', async () => {
    const { t } = await tieringNode({ 'auditlake.audit.tier.ingest.settle.ms': '3000' });
    await postSettings(t, PARQUET);
    await t.ingest([event({ eventId: 'fresh' })]);
    await new Promise((r) => setTimeout(r, 800));
    const waiting = await tierStatus(t);
    // The settings event and the fresh one wait; sweeps ran and found nothing settled.
    expect(waiting.watermark.seq).toBe(0);
    expect(waiting.backlog).toBe(2);
    expect(waiting.lastSuccessMs).toBeGreaterThan(0);
    await waitUntilTiered(t);
  });

  it('S3 down: lastError and backoff, nothing pruned, records keep collecting; S3 back: everything tiered once', async () => {
    const logLines: string[] = [];
    const { s3, t } = await tieringNode({ 'auditlake.audit.retention.interval.ms': '100' }, logLines);
    await postSettings(t, { ...PARQUET, 'audit.tier.retain.local.days': 0 });
    await t.ingest([event({ eventId: 'before' })]);
    await waitUntilTiered(t);
    await s3.stop();
    const old = Date.now() - 30 * DAY;
    await t.ingest(Array.from({ length: 20 }, (_, i) => event({ eventId: `during${i}`, ts: old + i })));
    let failing = await tierStatus(t);
    await expect.poll(async () => (failing = await tierStatus(t)).lastError, { timeout: 10_000 }).not.toBeNull();
    expect(failing.lastFailureMs).toBeGreaterThan(0);
    expect(failing.nextAttemptMs).toBeGreaterThan(failing.lastFailureMs);
    // Backoff doubles from backoff.initial.ms (200) up to backoff.max.ms (800).
    await expect.poll(async () => (failing = await tierStatus(t)).lastError !== null && (failing as unknown as { consecutiveFailures: number }).consecutiveFailures >= 4, { timeout: 15_000 }).toBe(true);
    const failures = (failing as unknown as { consecutiveFailures: number }).consecutiveFailures;
    const gap = failing.nextAttemptMs - failing.lastFailureMs;
    expect(Math.abs(gap - Math.min(800, 200 * 2 ** (failures - 1)))).toBeLessThan(100);
    expect(logLines.some((l) => /"msg":"Audit tiering sweep failed \(retry in \d+s\); LevelDB keeps collecting: /.test(l))).toBe(true);
    // Untiered events are never deleted, however old (retain.local.days = 0 notwithstanding).
    await new Promise((r) => setTimeout(r, 500));
    const local = (await t.stored()).map((e) => e.eventId);
    for (let i = 0; i < 20; i++) expect(local).toContain(`during${i}`);
    await s3.start();
    const healthy = await waitUntilTiered(t);
    expect(healthy.lastError).toBeNull();
    const dir = await downloadPrefix(s3.props('ext'), 'ext', 'ext', 'audit/');
    const counts = await duckdb(`SELECT count(*)::INTEGER AS n, count(DISTINCT event_id)::INTEGER AS d FROM read_parquet('${dir}/audit/*/*.parquet')`);
    expect(counts).toEqual([{ n: t.node.store.position.lastSeq, d: t.node.store.position.lastSeq }]);
  });

  it('with tiering on, the absolute cap waits for tiering: old untiered events are kept and counted as deferred', async () => {
    const { s3, t } = await nodeWithDeferred(12, 100);
    await new Promise((r) => setTimeout(r, 500)); // several prune rounds
    expect((await t.stored()).filter((e) => e.eventId.startsWith('old'))).toHaveLength(12);
    await s3.start();
    await waitUntilTiered(t);
    // Tiered now, and past the cap: deleted locally, still in the viewer's history.
    await expect.poll(async () => (await t.stored()).filter((e) => e.eventId.startsWith('old')).length).toBe(0);
    await expect.poll(async () => (await tierStatus(t)).deferred, { timeout: 30_000 }).toBe(0);
    const { json } = await t.search('?q=select&limit=100');
    expect(json.events.filter((e) => e.eventId.startsWith('old'))).toHaveLength(12);
  });

  it('turning tiering off while records are deferred answers a warning naming how many retention now deletes, and it deletes them', async () => {
    const { t } = await nodeWithDeferred(7, 100);
    const off = await postSettings(t, { 'audit.tier.mode': 'none' });
    expect(off.status).toBe(200);
    expect(off.json.warning).toBe(
      "tiering is off now, so the 7 records held only because they were never tiered (tierStatus.deferred, older than audit.retention.days) are deleted at retention's next run and kept nowhere else (setting audit.tier.mode back keeps those not deleted yet)",
    );
    await expect.poll(async () => (await t.stored()).filter((e) => e.eventId.startsWith('old')).length).toBe(0);
    // Nothing deferred, nothing to warn of: a later save with tiering off answers no warning.
    // (Only the save that turned tiering off warns, whatever was saved beside it: below.)
    const again = await postSettings(t, { 'audit.retention.days': 2 });
    expect(again.status).toBe(200);
    expect(again.json.warning).toBeUndefined();
  });

  it('warns only the save that turned tiering off, not a concurrent save of another key', async () => {
    const { t } = await nodeWithDeferred(3, 60_000);
    const [off, other] = await Promise.all([postSettings(t, { 'audit.tier.mode': 'none' }), postSettings(t, { 'audit.read.sample.rate': 0.5 })]);
    expect([off.status, other.status]).toEqual([200, 200]);
    expect(off.json.warning).toMatch(/^tiering is off now, so the 3 records held only because they were never tiered/);
    expect(other.json.warning).toBeUndefined();
    // Which save runs first is up to the server: the rule itself, for a save queued behind the one that turned tiering off.
    const before = t.node.settings.effective;
    const after = { ...before, tierMode: 'none' as const };
    const saved = (changes: SettingChange[], was = before) => ({ settings: t.node.settings.current, changes, before: was });
    expect(tieringOffWarning(saved([{ key: 'audit.read.sample.rate', from: '1', to: '0.5' }], after), 3)).toBeUndefined();
    expect(tieringOffWarning(saved([{ key: 'audit.tier.mode', from: 'parquet', to: 'none' }], { ...before, tierMode: 'parquet' }), 3)).toMatch(/^tiering is off now, so the 3 records/);
    expect(tieringOffWarning(saved([{ key: 'audit.tier.mode', from: 'parquet', to: 'none' }], { ...before, tierMode: 'parquet' }), 0)).toBeUndefined();
  });

  it('retain.local.days=0: the local store keeps only untiered events, and the viewer still returns everything', async () => {
    const { t } = await tieringNode({ 'auditlake.audit.retention.interval.ms': '100' });
    const now = Date.now();
    await t.ingest(Array.from({ length: 50 }, (_, i) => event({ eventId: `h${String(i).padStart(2, '0')}`, ts: now - i * 3_600_000, decision: i % 5 === 0 ? 'DENY' : 'ALLOW' })));
    await postSettings(t, { ...PARQUET, 'audit.tier.retain.local.days': 0 });
    await waitUntilTiered(t);
    await expect.poll(async () => (await t.stored()).length, { timeout: 10_000 }).toBe(0);
    const { json } = await t.search('?limit=1000');
    expect(json.count).toBe(51); // 50 events and the settings change, all from S3 now
    expect(json.events.filter((e) => e.eventId.startsWith('h')).map((e) => e.eventId)).toEqual(Array.from({ length: 50 }, (_, i) => `h${String(i).padStart(2, '0')}`));
    // Tiered copies carry decision (the reference's missing column, delivered).
    expect(json.events.find((e) => e.eventId === 'h00')!.decision).toBe('DENY');
    const filtered = await t.search(`?user=alice&from=${now - 10 * 3_600_000}&to=${now}&limit=5`);
    expect(filtered.json.events.map((e) => e.eventId)).toEqual(['h00', 'h01', 'h02', 'h03', 'h04']);
    expect(filtered.json.truncated).toBe(true);
  });

  it('a prune run with the clock ahead (deleting tiered events the corrected clock keeps) hides none of them from search', async () => {
    const { t } = await tieringNode();
    const now = Date.now();
    const ids = Array.from({ length: 20 }, (_, i) => `ahead${String(i).padStart(2, '0')}`);
    await t.ingest(ids.map((eventId, i) => event({ eventId, ts: now - (i + 1) * 60_000 })));
    await postSettings(t, PARQUET);
    const { watermark } = await waitUntilTiered(t);
    // What the pruner does when its clock stands days ahead: deletes tiered events that the
    // retention window, by the corrected clock, keeps locally.
    // Late events, older than those, arrive after the tiered ones and stay local.
    await t.ingest(Array.from({ length: 10 }, (_, i) => event({ eventId: `late${i}`, ts: now - 2 * 3_600_000 - i * 60_000 })));
    await t.node.store.pruneBefore(now, 1_000, async () => true, watermark.seq);
    expect((await t.stored()).filter((e) => e.eventId.startsWith('ahead'))).toEqual([]);
    // A page the local events alone fill: the newest five are the tiered ones, not the late ones.
    const { json } = await t.search(`?from=${now - 3 * 3_600_000}&to=${now}&limit=5`);
    expect(json.events.map((e) => e.eventId)).toEqual(ids.slice(0, 5));
  });

  it('pages with the cursor while events move to S3 and leave the local store: each matching event once, decision filtered in S3 too', async () => {
    const { t } = await tieringNode({ 'auditlake.audit.retention.interval.ms': '100' });
    const now = Date.now();
    // Pairs share an event time; one request shares an ingest time: the cursor's tie-breaks matter.
    await t.ingest(Array.from({ length: 60 }, (_, i) => event({ eventId: `m${String((i * 37) % 60).padStart(2, '0')}`, ts: now - Math.floor(i / 2) * 3_600_000, decision: i % 4 === 0 ? 'DENY' : 'ALLOW' })));
    type Page = { events: Array<{ eventId: string; decision: string }>; truncated: boolean; nextCursor?: string };
    const expected = ((await t.search('?decision=ALLOW&limit=1000')).json as unknown as Page).events.map((e) => e.eventId);
    expect(expected).toHaveLength(45);
    const seen: string[] = [];
    let cursor = '';
    const nextPage = async () => {
      const { status, json } = (await t.search(`?decision=ALLOW&limit=6${cursor}`)) as unknown as { status: number; json: Page };
      expect(status).toBe(200);
      seen.push(...json.events.map((e) => e.eventId));
      cursor = json.nextCursor ? `&cursor=${json.nextCursor}` : '';
      return json.truncated;
    };
    await nextPage();
    await nextPage();
    // Tiering starts mid-way; every tiered event then leaves the local store.
    expect((await postSettings(t, { ...PARQUET, 'audit.tier.retain.local.days': 0 })).status).toBe(200);
    await nextPage();
    await waitUntilTiered(t);
    await expect.poll(async () => (await t.stored()).filter((e) => e.eventId.startsWith('m')).length, { timeout: 10_000 }).toBe(0);
    await t.ingest([event({ eventId: 'newer', decision: 'ALLOW' })]);
    for (let pages = 0; await nextPage(); pages++) expect(pages).toBeLessThan(20);
    expect(seen).toEqual(expected);
    // The decision filter reads the tiered copies' decision column.
    const denied = (await t.search('?decision=DENY&limit=1000')).json as unknown as Page;
    expect(denied.events.map((e) => e.eventId).sort()).toEqual(Array.from({ length: 15 }, (_, k) => `m${String((k * 4 * 37) % 60).padStart(2, '0')}`).sort());
  });

  it('names an unreadable tier in tierNote and still answers from the rest', async () => {
    const { s3, t } = await tieringNode({ 'auditlake.audit.retention.interval.ms': '100' });
    await t.ingest([event({ eventId: 'a', ts: Date.now() - 3 * DAY })]);
    await postSettings(t, { ...PARQUET, 'audit.tier.retain.local.days': 1 });
    await waitUntilTiered(t);
    await expect.poll(async () => (await t.stored()).some((e) => e.eventId === 'a'), { timeout: 10_000 }).toBe(false);
    await t.ingest([event({ eventId: 'b' })]);
    await s3.stop();
    const res = await t.request('/admin/audit');
    const json = (await res.json()) as { events: Array<{ eventId: string }>; tierNote?: string };
    expect(json.events.map((e) => e.eventId)).toContain('b');
    expect(json.events.map((e) => e.eventId)).not.toContain('a');
    expect(json.tierNote).toMatch(/^tiered audit partly unavailable: s3:\/\/ext\/audit: /);
  });

  it('keeps an erasure record locally while an earlier target is down, and applies it there once it is back', async () => {
    // The node knows two endpoints; `old` is the first target.
    const s3 = await externalS3();
    const old = await externalS3('old');
    const node = await startTestNode({ props: { ...FAST_TIERING, ...s3.props('ext'), ...old.props('old'), 'auditlake.audit.retention.interval.ms': '100' } });
    await node.ingest(Array.from({ length: 5 }, (_, i) => event({ eventId: `o${i}`, ts: Date.now() - 2 * DAY, query: `SELECT secret_${i}` })));
    await postSettings(node, { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://old/audit', 'audit.tier.connectionId': 'old', 'audit.tier.retain.local.days': 5 });
    await waitUntilTiered(node);
    await postSettings(node, PARQUET);
    await node.ingest([event({ eventId: 'n0', ts: Date.now() - 2 * DAY })]);
    await waitUntilTiered(node);

    // The first target goes down; o1 is erased (still local) and its record tiered to the current target.
    await old.stop();
    const res = await node.request('/admin/audit/erase', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventIds: ['o1'], fields: ['query'] }) });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { erasureSeqs: number[]; warning?: string };
    const [erasureSeq] = answer.erasureSeqs;
    // Erased here all the same; the answer says the tier could not be searched for other copies.
    expect(answer.warning).toContain('the tier could not be read');
    await waitUntilTiered(node);

    // Local retention at 0 days deletes every tiered event before the erasure record, never the record.
    await postSettings(node, { 'audit.tier.retain.local.days': 0 });
    await expect.poll(async () => (await node.stored()).filter((e) => /^[on]\d$/.test(e.eventId)).length, { timeout: 10_000 }).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 500)); // several retention runs (every 100 ms)
    expect((await node.stored()).some((e) => e.seq === erasureSeq)).toBe(true);
    // The operator sees why: tierStatus names the record retention keeps.
    expect((await tierStatus(node)).erasureHoldSeq).toBe(erasureSeq);

    // Back up: the next pass applies it there (DuckDB reads the marker), then retention deletes the record.
    await old.start();
    await expect.poll(async () => (await node.stored()).some((e) => e.seq === erasureSeq), { timeout: 20_000 }).toBe(false);
    await expect.poll(async () => (await tierStatus(node)).erasureHoldSeq, { timeout: 10_000 }).toBeNull();
    const dir = await downloadPrefix(old.props('old'), 'old', 'old', 'audit/');
    const rows = await duckdb(`SELECT event_id, query FROM read_parquet('${dir}/audit/**/*.parquet') WHERE event_id = 'o1'`);
    expect(rows).toEqual([{ event_id: 'o1', query: '[erased by auditlake]' }]);
  });

  it('an erasure holds in every answer at once: a tier copy the sweep has not rewritten yet is neither found by an erased value nor shown with it', async () => {
    // No sweep runs by itself: each is run by hand, so the tier still holds the values when searched.
    const { s3, t } = await tieringNode({ 'auditlake.audit.tier.interval.ms': '3600000', 'auditlake.audit.retention.interval.ms': '100' });
    const now = Date.now();
    const secret = { userId: 'erin-secret', query: 'SELECT ssn FROM people', tables: ['hr.people_ssn'] };
    // old1 will be held by the tier only (retention deletes it locally); new1 by both.
    await t.ingest([event({ eventId: 'old1', ts: now - 2 * DAY, ...secret }), event({ eventId: 'new1', ts: now - 60_000, ...secret }), event({ eventId: 'plain', ts: now - 30_000 })]);
    await postSettings(t, { ...PARQUET, 'audit.tier.retain.local.days': 1 });
    await t.node.tiering.sweeper.sweep();
    await expect.poll(async () => (await t.stored()).some((e) => e.eventId === 'old1'), { timeout: 10_000 }).toBe(false);
    for (const eventId of ['old1', 'new1']) {
      const res = await t.request('/admin/audit/erase', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventIds: [eventId], fields: ['userId', 'query', 'tables'] }) });
      expect(res.status).toBe(200);
    }
    const tierValues = async () => {
      const dir = await downloadPrefix(s3.props('ext'), 'ext', 'ext', 'audit/');
      return duckdb(`SELECT event_id, user_id, query FROM read_parquet('${dir}/audit/**/*.parquet') WHERE event_id IN ('old1', 'new1') ORDER BY event_id`);
    };
    const answers = async () => {
      const found = [];
      for (const filter of ['user=erin-secret', 'q=ssn', 'q=erin', 'table=people_ssn', 'q=people_ssn']) found.push(...(await t.search(`?${filter}&limit=10`)).json.events.map((e) => `${filter}: ${e.eventId}`));
      const all = (await t.search('?limit=10')).json.events.filter((e) => e.eventId !== 'plain' && e.source !== 'auditlake');
      const stats = await (await t.request('/admin/audit/stats')).text();
      return { found, all: all.map((e) => [e.eventId, e.userId, e.query, e.tables]), statsNamesUser: stats.includes('erin-secret') };
    };
    const erased = ['[erased by auditlake]', '[erased by auditlake]', ['[erased by auditlake]']];
    const expected = { found: [], all: [['new1', ...erased], ['old1', ...erased]], statsNamesUser: false };
    // The tier still holds both copies whole (so what follows is the search's doing, not the sweep's)…
    expect(await tierValues()).toEqual([
      { event_id: 'new1', user_id: 'erin-secret', query: 'SELECT ssn FROM people' },
      { event_id: 'old1', user_id: 'erin-secret', query: 'SELECT ssn FROM people' },
    ]);
    // …and no answer finds them by an erased value or shows one.
    expect(await answers()).toEqual(expected);
    // Once the sweep has rewritten them, the same answers.
    await t.node.tiering.sweeper.sweep();
    expect((await tierValues()).map((row) => row.user_id)).toEqual(['[erased by auditlake]', '[erased by auditlake]']);
    expect(await answers()).toEqual(expected);
  });

  it('refuses to erase an erasure record that only the tier holds now, naming it, and erases nothing', async () => {
    const { t } = await tieringNode({ 'auditlake.audit.retention.interval.ms': '100' });
    const erase = (body: unknown) => t.request('/admin/audit/erase', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await t.ingest([event({ eventId: 'q1', query: 'SELECT secret' }), event({ eventId: 'q2' })]);
    await postSettings(t, { ...PARQUET, 'audit.tier.retain.local.days': 0 });
    const res = await erase({ eventIds: ['q1'], fields: ['query'] });
    expect(res.status).toBe(200);
    const [erasureSeq] = ((await res.json()) as { erasureSeqs: number[] }).erasureSeqs;
    const erasureId = (await t.stored()).find((e) => e.seq === erasureSeq)!.eventId;
    // Applied to the tier, the erasure record leaves the local store with everything else.
    await waitUntilTiered(t);
    await expect.poll(async () => (await t.stored()).filter((e) => e.source === 'trino' || e.seq === erasureSeq).length, { timeout: 20_000 }).toBe(0);

    const refused = await erase({ eventIds: [erasureId, 'q2'], fields: ['details', 'query'] });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      status: 'error',
      code: 'AUDIT_SELF_RECORD_NOT_ERASABLE',
      error: `event ${erasureId} (audit:EraseFields) is one of auditlake's own records (source auditlake: settings changes, refused access, tier adoptions, maintenance runs, erasures, checkpoints, key registrations), which cannot be erased; nothing was erased`,
    });
    // Nothing was recorded, so the tier keeps q1 erased and q2 whole.
    await waitUntilTiered(t);
    const { json } = await t.search('?limit=100');
    expect(json.events.filter((e) => e.action === 'audit:EraseFields' && e.decision !== 'DENY')).toHaveLength(1);
    expect(Object.fromEntries(json.events.filter((e) => e.source === 'trino').map((e) => [e.eventId, e.query]))).toEqual({ q1: '[erased by auditlake]', q2: 'SELECT 1' });
  });

  it('answers an event re-sent after retention deleted its local copy as a duplicate of the tiered copy; while the tier cannot be read it stores it (counted), and an erasure reaches both copies', async () => {
    const logLines: string[] = [];
    const { s3, t } = await tieringNode({ 'auditlake.audit.retention.interval.ms': '100', 'auditlake.ingest.resend.lookup.timeout.ms': '2000' }, logLines);
    const dup = event({ eventId: 'dup1', userId: 'erin-secret', ts: Date.now() - 2 * DAY });
    const dup2 = event({ eventId: 'dup2', ts: Date.now() - 2 * DAY });
    await t.ingest([dup, dup2, event({ eventId: 'keep1' })]);
    await postSettings(t, { ...PARQUET, 'audit.tier.retain.local.days': 0 });
    await waitUntilTiered(t);
    const pruned = async () => expect.poll(async () => (await t.stored()).some((e) => e.eventId === 'dup1' || e.eventId === 'dup2'), { timeout: 10_000 }).toBe(false);
    await pruned();
    // Re-sent (a replayed spool): the node no longer holds it, the tier does.
    expect(await t.ingest([dup])).toEqual({ status: 200, json: { status: 'ok', ingested: 1, duplicates: 1 } });
    // Other content under its id: refused as a conflict, the tiered event kept.
    const squatted = await t.ingest([{ ...dup, query: 'DROP TABLE hive.a.t1' }]);
    expect(squatted.json).toMatchObject({ ingested: 1, conflicts: 1, conflictEventIds: ['dup1'] });
    // Sent again with a later time than anything retention deleted: the node kept the id, so it is
    // looked for at the original's time and refused against that copy, not stored as a new event.
    const later = await t.ingest([{ ...dup, ts: Date.now() }]);
    expect(later.json).toMatchObject({ ingested: 1, conflicts: 1, conflictEventIds: ['dup1'] });
    expect((await t.stored()).some((e) => e.eventId === 'dup1')).toBe(false);
    // Every event deleted here (dup1, dup2, keep1 and the node's own settings record) was tiered: each id is kept, the filter filled.
    // (Read until the two agree: retention may delete a record of the node's own between the reads.)
    const keptAndPruned = async () => {
      const ledger = (await (await t.request('/admin/audit/ledger')).json()) as { days: Array<{ pruned: number }> };
      const kept = Number(/^auditlake_pruned_ids_kept (\d+)$/m.exec(await (await t.request('/metrics')).text())?.[1]);
      return { kept, pruned: ledger.days.reduce((sum, day) => sum + day.pruned, 0) };
    };
    await expect.poll(async () => { const { kept, pruned } = await keptAndPruned(); return kept === pruned && kept >= 4; }).toBe(true);
    const gauges = await (await t.request('/metrics')).text();
    expect(gauges).toMatch(/^auditlake_pruned_ids_filling 0$/m);
    expect(gauges).toMatch(/^auditlake_pruned_ids_filter_full 0$/m);
    expect(Number(/^auditlake_pruned_ids_filter_bytes (\d+)$/m.exec(gauges)?.[1])).toBeGreaterThan(0);
    const copies = async () => {
      const dir = await downloadPrefix(s3.props('ext'), 'ext', 'ext', 'audit/');
      return duckdb(`SELECT user_id FROM read_parquet('${dir}/audit/**/*.parquet') WHERE event_id = 'dup1' ORDER BY seq`);
    };
    await waitUntilTiered(t);
    expect(await copies()).toEqual([{ user_id: 'erin-secret' }]);
    // The bucket unreachable, worst case: a port that takes connections and never answers. Ingest
    // goes on (the log keeps collecting): each re-send is stored as new after at most the lookup's
    // timeout, counted, and logged (once in a while) — the one way left to tier it twice.
    await s3.stop();
    const held = new Set<Socket>();
    const silent = createServer((socket) => void held.add(socket));
    await new Promise<void>((resolve) => silent.listen(s3.port, '127.0.0.1', resolve));
    try {
      const started = Date.now();
      expect(await t.ingest([dup])).toEqual({ status: 200, json: { status: 'ok', ingested: 1 } });
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(await t.ingest([dup2])).toEqual({ status: 200, json: { status: 'ok', ingested: 1 } });
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
    expect((await t.stored()).filter((e) => e.eventId === 'dup1' || e.eventId === 'dup2')).toHaveLength(2);
    expect(await (await t.request('/metrics')).text()).toMatch(/^auditlake_events_resend_unchecked_total 2$/m);
    const warnings = logLines.filter((l) => l.includes('could not be looked for in the tier'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('did not answer within 2000 ms');
    expect(warnings[0]).toContain('at most every 10 s');
    expect(warnings[0]).toContain('dup1');
    await s3.start();
    await waitUntilTiered(t);
    await pruned();
    expect(await copies()).toEqual([{ user_id: 'erin-secret' }, { user_id: 'erin-secret' }]);

    const res = await t.request('/admin/audit/erase', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventIds: ['dup1'], fields: ['userId'] }) });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ erased: 2 });
    await expect.poll(copies, { timeout: 20_000 }).toEqual([{ user_id: '[erased by auditlake]' }, { user_id: '[erased by auditlake]' }]);
    expect((await t.search('?user=erin-secret&limit=10')).json.events).toEqual([]);
    // Erased in the tier, it is still recognised when re-sent (an erased field counts as equal).
    expect((await t.ingest([dup])).json).toMatchObject({ ingested: 1, duplicates: 1 });
  });

  it('recognises a re-send in the locations it can read while an older target cannot be read: only the events none of them holds are stored as new (counted)', async () => {
    const logLines: string[] = [];
    const old = await externalS3('ext');
    const current = await externalS3('ext2');
    const t = await startTestNode({
      props: { ...FAST_TIERING, ...old.props('ext'), ...current.props('ext2'), 'auditlake.audit.retention.interval.ms': '100', 'auditlake.ingest.resend.lookup.timeout.ms': '20000' },
      node: { logger: { level: 'warn', stream: { write: (line: string) => logLines.push(line) } } },
    });
    const inOld = event({ eventId: 'old-target', ts: Date.now() - 2 * DAY });
    const inCurrent = event({ eventId: 'current-target', ts: Date.now() - 2 * DAY });
    const gone = (eventId: string) => expect.poll(async () => (await t.stored()).some((e) => e.eventId === eventId), { timeout: 10_000 }).toBe(false);
    // One event tiered to the first target, one to the second; retention deletes both locally.
    await t.ingest([inOld]);
    await postSettings(t, { ...PARQUET, 'audit.tier.retain.local.days': 0 });
    await waitUntilTiered(t);
    await gone('old-target');
    await postSettings(t, { 'audit.tier.parquet.path': 's3://ext2/audit', 'audit.tier.connectionId': 'ext2' });
    await t.ingest([inCurrent]);
    await waitUntilTiered(t);
    await gone('current-target');
    // The first target's endpoint is gone (refused connections): that location cannot be read.
    await old.stop();
    expect(await t.ingest([inCurrent, inOld])).toEqual({ status: 200, json: { status: 'ok', ingested: 2, duplicates: 1 } });
    expect((await t.stored()).map((e) => e.eventId).filter((id) => id === 'old-target' || id === 'current-target')).toEqual(['old-target']);
    expect(await (await t.request('/metrics')).text()).toMatch(/^auditlake_events_resend_unchecked_total 1$/m);
    const warnings = logLines.filter((l) => l.includes('could not be looked for in the tier'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('s3://ext/audit');
    expect(warnings[0]).toContain('old-target');
    expect(warnings[0]).not.toContain('"current-target"');
  });

  it('bounds the tier lookups re-sends make: with every turn taken and its sender\'s share of the queue full a request is refused with 429 and nothing of it stored, while another sender\'s still waits its turn; the waiting ones are stored as before', async () => {
    // One lookup at a time, 16 waiting; a timeout long enough that every request below is still waiting when the last arrives.
    const { s3, t } = await tieringNode({ 'auditlake.audit.retention.interval.ms': '100', 'auditlake.ingest.resend.lookup.concurrency': '1', 'auditlake.ingest.resend.lookup.timeout.ms': '8000' });
    await t.ingest([event({ eventId: 'old1', ts: Date.now() - 2 * DAY })]);
    await postSettings(t, { ...PARQUET, 'audit.tier.retain.local.days': 0 });
    await waitUntilTiered(t);
    await expect.poll(async () => (await t.stored()).some((e) => e.eventId === 'old1'), { timeout: 10_000 }).toBe(false);
    // A bucket that takes connections and never answers: every lookup runs until the S3 client gives up.
    await s3.stop();
    const held = new Set<Socket>();
    const silent = createServer((socket) => void held.add(socket));
    await new Promise<void>((resolve) => silent.listen(s3.port, '127.0.0.1', resolve));
    try {
      // Old-timed events under new ids (a flood, or a large replayed spool): each request needs a lookup.
      const post = (i: number) =>
        t.request('/v1/api/audit', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify([event({ eventId: `flood${i}`, ts: Date.now() - 3 * DAY })]) });
      const first = post(0);
      // The first holds the one turn before the rest arrive (its lookup is reading the silent bucket).
      await new Promise((resolve) => setTimeout(resolve, 500));
      const flood = Array.from({ length: 19 }, (_, i) => post(i + 1));
      // Another principal's re-send (the ingest token's; the flood is the admin token's) arrives behind the flood and still gets a place.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const other = t.request('/v1/api/audit', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify([event({ eventId: 'spool1', ts: Date.now() - 3 * DAY })]), token: INGEST_TOKEN });
      const answers = await Promise.all([first, ...flood]);
      const refused = answers.flatMap((res, i) => (res.status === 429 ? [i] : []));
      // The flood's sender took its one turn and 4 places (a quarter of 16); its other 15 were refused at once.
      expect(refused).toHaveLength(15);
      for (const i of refused) {
        const res = answers[i] as Response;
        expect(res.headers.get('retry-after')).toBe('1');
        const body = (await res.json()) as { code: string; error: string };
        expect(body.code).toBe('AUDIT_LIMIT_EXCEEDED');
        expect(body.error).toMatch(/^4 tier lookups of "admin" for events that may re-send ones retention deleted are waiting, as many as one sender may \(a quarter of the queue; auditlake\.ingest\.resend\.lookup\.concurrency\); nothing of this request was stored, retry it$/);
      }
      for (const [i, res] of answers.entries()) if (!refused.includes(i)) expect(res.status).toBe(200);
      expect((await other).status).toBe(200);
      const stored = new Set((await t.stored()).map((e) => e.eventId));
      for (let i = 0; i < 20; i++) expect(stored.has(`flood${i}`)).toBe(!refused.includes(i));
      expect(stored.has('spool1')).toBe(true);
      // The ones that waited out their time were stored as new, as when the tier cannot be read.
      expect(await (await t.request('/metrics')).text()).toMatch(/^auditlake_events_resend_unchecked_total 6$/m);
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('erases every tiered copy of an event sent without ts and re-sent after retention deleted it (stored again while the tier could not be read: the copies have different times), and stores it no more when re-sent again', async () => {
    const { s3, t } = await tieringNode({ 'auditlake.audit.retention.interval.ms': '100' });
    await postSettings(t, { ...PARQUET, 'audit.tier.retain.local.days': 0 });
    const dup = event({ eventId: 'nots1', userId: 'nora-secret' });
    delete dup.ts;
    const tieredAndPruned = async () => {
      await waitUntilTiered(t);
      await expect.poll(async () => (await t.stored()).some((e) => e.eventId === 'nots1'), { timeout: 10_000 }).toBe(false);
    };
    expect((await t.ingest([dup, event({ eventId: 'other1' })])).status).toBe(200);
    await tieredAndPruned();
    await new Promise((resolve) => setTimeout(resolve, 50));
    // The same request retried: the node kept the id retention deleted, so the tier's copy is
    // found at the original's time and the retry is a duplicate, though the server gives it another time.
    expect(await t.ingest([dup])).toEqual({ status: 200, json: { status: 'ok', ingested: 1, duplicates: 1 } });
    // Retried while the bucket refuses connections: the tier cannot be read, so it is stored again
    // (counted), with the server's time now — the one way left to tier a second copy.
    await s3.stop();
    try {
      expect(await t.ingest([dup])).toEqual({ status: 200, json: { status: 'ok', ingested: 1 } });
    } finally {
      await s3.start();
    }
    expect(await (await t.request('/metrics')).text()).toMatch(/^auditlake_events_resend_unchecked_total 1$/m);
    await tieredAndPruned();
    const copies = async () => {
      const dir = await downloadPrefix(s3.props('ext'), 'ext', 'ext', 'audit/');
      return duckdb(`SELECT user_id, ts FROM read_parquet('${dir}/audit/**/*.parquet') WHERE event_id = 'nots1' ORDER BY seq`);
    };
    const before = (await copies()) as Array<{ user_id: string; ts: unknown }>;
    expect(before.map((c) => c.user_id)).toEqual(['nora-secret', 'nora-secret']);
    // Two files whose time ranges do not overlap: the second copy is not where the first one is.
    expect(before[0]!.ts).not.toEqual(before[1]!.ts);

    const res = await t.request('/admin/audit/erase', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventIds: ['nots1'], fields: ['userId'] }) });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ erased: 2 });
    await expect.poll(async () => ((await copies()) as Array<{ user_id: string }>).map((c) => c.user_id), { timeout: 20_000 }).toEqual(['[erased by auditlake]', '[erased by auditlake]']);
    expect((await t.search('?user=nora-secret&limit=10')).json.events).toEqual([]);
    // Retried once more, still without ts: an erased id is never stored again, so the values do not come back.
    expect(await t.ingest([dup])).toEqual({ status: 200, json: { status: 'ok', ingested: 1, duplicates: 1 } });
    expect((await t.stored()).some((e) => e.eventId === 'nots1')).toBe(false);
    await waitUntilTiered(t);
    expect(((await copies()) as Array<{ user_id: string }>).map((c) => c.user_id)).toEqual(['[erased by auditlake]', '[erased by auditlake]']);
    expect((await t.search('?user=nora-secret&limit=10')).json.events).toEqual([]);
  });

  it('remembers every location that received events: switching path or mode hides nothing', async () => {
    const { t } = await tieringNode({ 'auditlake.audit.retention.interval.ms': '100' });
    await t.ingest([event({ eventId: 'first-home', ts: Date.now() - 5 * DAY })]);
    await postSettings(t, { ...PARQUET, 'audit.tier.retain.local.days': 1 });
    await waitUntilTiered(t);
    await postSettings(t, { 'audit.tier.parquet.path': 's3://ext/elsewhere' });
    await t.ingest([event({ eventId: 'second-home', ts: Date.now() - 5 * DAY })]);
    await waitUntilTiered(t);
    // Both are tiered and older than retain.local.days, so local cleanup removes them.
    await expect.poll(async () => (await t.stored()).filter((e) => e.eventId.endsWith('-home')).length, { timeout: 10_000 }).toBe(0);
    await postSettings(t, { 'audit.tier.mode': 'none' });
    const { json } = await t.search('?q=select');
    expect(json.events.map((e) => e.eventId).sort()).toEqual(['first-home', 'second-home']);
  });
});
