// Goal: iceberg mode commits each sweep to an Iceberg v2 table (day(event_time)) that icebird and DuckDB read back exactly, the viewer merges it, and bad targets are refused with the reference's messages.
import { createServer } from 'node:http';
import { icebergRead } from 'icebird';
import { countingSource, type CountingSource } from '@auditlake/format';
import { mergedSearch } from '@auditlake/query';
import { IcebergTierSource, S3Connections } from '@auditlake/lake';
import { resolveConfig } from '@auditlake/model';
import { describe, expect, it, onTestFinished } from 'vitest';
import { signedFetch } from '@auditlake/s3-endpoint';
import { EXTERNAL_S3_CREDENTIALS, FAST_TIERING, downloadPrefix, duckdb, externalS3, postSettings, waitUntilTiered, type ExternalS3 } from './tier-helpers.js';
import { event, startTestNode } from './test-node.js';
import { routeAwsS3To } from '@auditlake/lake/testing';

const DAY = 86_400_000;
const TABLE = 'ice.ops.audit_events';

function catalogProps(s3: ExternalS3): Record<string, string> {
  return { ...s3.props('ext'), 'auditlake.iceberg.catalogs.ice.warehouse': 's3://ext/warehouse', 'auditlake.iceberg.catalogs.ice.connectionId': 'ext' };
}

async function icebergNode(extra: Record<string, string> = {}) {
  const s3 = await externalS3();
  const t = await startTestNode({ props: { ...FAST_TIERING, ...catalogProps(s3), ...extra } });
  return { s3, t };
}

/**
 * icebird (a reader we did not write) resolves s3:// paths to AWS hostnames and cannot sign;
 * the test points those requests at the local S3 endpoint instead, signed (SigV4) with the
 * endpoint's key, and changes nothing else.
 */
function routeS3To(s3: ExternalS3): void {
  onTestFinished(routeAwsS3To(s3.endpoint, EXTERNAL_S3_CREDENTIALS));
}

describe('iceberg tiering settings', () => {
  it('refuses an unknown catalog, a malformed target and an unreachable warehouse with the reference messages', async () => {
    const { s3, t } = await icebergNode();
    const cases: Array<[Record<string, unknown>, string | RegExp]> = [
      [{ 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'ice.audit_events' }, 'audit tier target ice.audit_events is not usable: audit tier iceberg table must be catalog.schema.table: ice.audit_events'],
      [{ 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'nosuchcat.x.audit_events' }, "audit tier target nosuchcat.x.audit_events is not usable: No catalog config for audit tier catalog 'nosuchcat'"],
      [{ 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': '' }, 'audit.tier.iceberg.table is required when audit.tier.mode=iceberg'],
    ];
    for (const [body, message] of cases) {
      const res = await postSettings(t, body);
      expect(res.status).toBe(400);
      expect(res.json.error).toBe(message);
    }
    await s3.stop();
    const unreachable = await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': TABLE });
    expect(unreachable.status).toBe(400);
    expect(unreachable.json.error).toMatch(/^audit tier target ice\.ops\.audit_events is not usable: warehouse s3:\/\/ext\/warehouse cannot be reached: /);
    expect((await (await t.request('/admin/audit/settings')).json()) as Record<string, string>).toMatchObject({ 'audit.tier.mode': 'none' });
    expect(await t.stored()).toEqual([]);
  });

  it('says in words why a warehouse on an endpoint that is not S3 is refused, never with a raw SDK parse error', async () => {
    // A web server where the S3 endpoint should be: it answers HEAD of the bucket, and any
    // write with an HTML error page (403), well-formed or not.
    let page = '<html><body><h1>Forbidden by the proxy</h1></body></html>';
    const web = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.method === 'HEAD') {
          const path = (req.url ?? '').split('?')[0];
          res.writeHead(path === '/web' || path === '/web/' ? 200 : 404).end();
          return;
        }
        res.writeHead(403, { 'content-type': 'text/html' }).end(page);
      });
    });
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => web.close(() => resolve())));
    const port = (web.address() as { port: number }).port;
    const t = await startTestNode({
      props: {
        'auditlake.s3.connections.web.endpoint': `http://127.0.0.1:${port}`,
        'auditlake.s3.connections.web.accessKeyId': 'AKIDWEB',
        'auditlake.s3.connections.web.secretAccessKey': 'web-secret',
        'auditlake.iceberg.catalogs.www.warehouse': 's3://web/wh',
        'auditlake.iceberg.catalogs.www.connectionId': 'web',
      },
    });
    const forbidden = await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'www.ops.audit_events' });
    expect(forbidden.status).toBe(400);
    expect(forbidden.json.error).toBe(
      "audit tier target www.ops.audit_events is not usable: warehouse s3://web/wh cannot be reached: PUT s3://web/wh/ops/ failed: the endpoint answered HTTP 403 without an S3 error code (access denied: check the connection's accessKeyId and secretAccessKey, and that they may use this bucket)",
    );
    page = '<html><body><h1>Forbidden</h1></body></html';
    const garbled = await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'www.ops.audit_events' });
    expect(garbled.status).toBe(400);
    expect(garbled.json.error).toBe(
      "audit tier target www.ops.audit_events is not usable: warehouse s3://web/wh cannot be reached: PUT s3://web/wh/ops/ failed: the endpoint answered HTTP 403 with a body that is not an S3 XML response: is the connection's endpoint an S3 service, and its forcePathStyle right?",
    );
    expect((await (await t.request('/admin/audit/settings')).json()) as Record<string, string>).toMatchObject({ 'audit.tier.mode': 'none' });
    expect(await t.stored()).toEqual([]);
  });

  it('accepts a valid target and creates its namespace as part of the check', async () => {
    const { s3, t } = await icebergNode();
    const res = await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': TABLE });
    expect(res.status).toBe(200);
    const connections = new S3Connections(resolveConfig(new Map(Object.entries(s3.props('ext')))).s3Connections);
    onTestFinished(() => connections.close());
    expect(await connections.bucket('ext', 'ext').list('warehouse/')).toEqual(['warehouse/ops/']);
  });
});

describe('iceberg tiering sweep', () => {
  it('commits sweeps over several days that icebird reads back exactly, and DuckDB agrees per day and decision', async () => {
    const { s3, t } = await icebergNode({ 'auditlake.audit.tier.batch.size': '40' });
    await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': TABLE });
    const now = Date.now();
    for (let b = 0; b < 4; b++) {
      await t.ingest(Array.from({ length: 30 }, (_, i) => event({ eventId: `b${b}-${i}`, ts: now - ((b * 30 + i) % 5) * DAY - i, decision: i % 4 === 0 ? 'DENY' : 'ALLOW', userId: `u${i % 3}`, query: `SELECT ${i} FROM hive.sales.t${b}` })));
    }
    await waitUntilTiered(t);
    const all = (await t.node.store.readBySeq(0, 1000)).sort((a, b) => a.eventId.localeCompare(b.eventId));
    expect(all).toHaveLength(121);

    routeS3To(s3);
    const rows = (await icebergRead({ tableUrl: 's3://ext/warehouse/ops/audit_events' })) as Array<Record<string, unknown>>;
    expect(rows).toHaveLength(121);
    const byId = new Map(rows.map((r) => [String(r['event_id']), r]));
    for (const e of all) {
      const row = byId.get(e.eventId);
      expect(row).toBeDefined();
      expect(row).toMatchObject({
        source: e.source,
        user_id: e.userId,
        action: e.action,
        resource: e.resource,
        tables: e.tables.join(','),
        query: e.query,
        details: e.details,
        decision: e.decision,
      });
      expect(Number(row!['ts'])).toBe(e.timestamp);
      expect(Number(row!['ingest_ts'])).toBe(e.ingestTs);
      expect((row!['event_time'] as Date).getTime()).toBe(e.timestamp);
    }

    const dir = await downloadPrefix(s3.props('ext'), 'ext', 'ext', 'warehouse/ops/audit_events/');
    const perDay = await duckdb(`SELECT strftime(event_time, '%Y-%m-%d') AS day, decision, count(*)::INTEGER AS n FROM read_parquet('${dir}/warehouse/ops/audit_events/data/*/*.parquet') GROUP BY ALL ORDER BY ALL`);
    const expected = new Map<string, number>();
    for (const e of all) {
      const key = `${new Date(e.timestamp).toISOString().slice(0, 10)}|${e.decision}`;
      expected.set(key, (expected.get(key) ?? 0) + 1);
    }
    expect(perDay.map((r) => [`${String(r['day'])}|${String(r['decision'])}`, r['n']])).toEqual([...expected.entries()].sort(([a], [b]) => a.localeCompare(b)));
    // One commit per sweep: several versions, the hint at the newest, the watermark in the summary.
    const signed = signedFetch({ credentials: EXTERNAL_S3_CREDENTIALS });
    const version = Number(await (await signed(`${s3.endpoint}/ext/warehouse/ops/audit_events/metadata/version-hint.text`)).text());
    expect(version).toBeGreaterThan(3);
    const current = (await (await signed(`${s3.endpoint}/ext/warehouse/ops/audit_events/metadata/v${version}.metadata.json`)).json()) as { snapshots: Array<{ summary: Record<string, string> }> };
    expect(current.snapshots.at(-1)!.summary['auditlake.tiering.watermark']).toBe(String(t.node.store.position.lastSeq));
  });

  it('reading the table back prunes by the manifests: a one-day window opens only that day\'s files and fetches a fraction of the bytes', async () => {
    const { s3, t } = await icebergNode({ 'auditlake.audit.tier.batch.size': '5000' });
    await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': TABLE });
    const base = Date.UTC(2026, 9, 1);
    for (let d = 0; d < 6; d++) {
      await t.ingest(Array.from({ length: 400 }, (_, i) => event({ eventId: `d${d}-${i}`, ts: base + d * DAY + i * 1000, query: `SELECT ${'c'.repeat(100)}${d}${i}` })));
    }
    await waitUntilTiered(t);
    const connections = new S3Connections(resolveConfig(new Map(Object.entries(s3.props('ext')))).s3Connections);
    onTestFinished(() => connections.close());
    const source = new IcebergTierSource(connections, { identifier: TABLE, location: 's3://ext/warehouse/ops/audit_events', connectionId: 'ext' });
    const opened: CountingSource[] = [];
    const counted = { name: source.name, listFiles: () => source.listFiles(), open: async (file: Parameters<typeof source.open>[0]) => {
      const c = countingSource(await source.open(file));
      opened.push(c);
      return c;
    } };
    const files = await source.listFiles();
    const totalBytes = (await Promise.all(files.map(async (f) => (await source.open(f)).byteLength))).reduce((a, b) => a + b, 0);
    const day2 = files.filter((f) => f.tsMax >= base + 2 * DAY && f.tsMin <= base + 3 * DAY - 1);
    const result = await mergedSearch({ local: (async function* () {})(), tiers: [counted], filter: { action: 'all', fromMs: base + 2 * DAY, toMs: base + 3 * DAY - 1, limit: 200 }, localCompleteFromMs: undefined });
    expect(result.events).toHaveLength(200);
    expect(result.events.every((e) => e.eventId.startsWith('d2-'))).toBe(true);
    expect(result.filesRead).toBe(day2.length);
    expect(files.length).toBeGreaterThan(day2.length);
    expect(opened.reduce((s, c) => s + c.fetchedBytes, 0)).toBeLessThan(totalBytes / 3);
  });

  it('the viewer reads the table back when local copies are gone, and names an unreadable table in tierNote', async () => {
    const { s3, t } = await icebergNode({ 'auditlake.audit.retention.interval.ms': '100' });
    const now = Date.now();
    await t.ingest(Array.from({ length: 20 }, (_, i) => event({ eventId: `v${String(i).padStart(2, '0')}`, ts: now - i * 6 * 3_600_000, decision: i % 2 ? 'ALLOW' : 'DENY' })));
    await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': TABLE, 'audit.tier.retain.local.days': 0 });
    await waitUntilTiered(t);
    await expect.poll(async () => (await t.stored()).length).toBe(0);
    const { json } = await t.search(`?from=${now - 2 * DAY}&to=${now}&limit=100`);
    expect(json.events.filter((e) => e.eventId.startsWith('v')).map((e) => e.eventId)).toEqual(['v00', 'v01', 'v02', 'v03', 'v04', 'v05', 'v06', 'v07', 'v08']);
    expect(json.events.find((e) => e.eventId === 'v00')!.decision).toBe('DENY');
    // Corrupt the current metadata: the table is skipped and named, the rest still answers.
    const connections = new S3Connections(resolveConfig(new Map(Object.entries(s3.props('ext')))).s3Connections);
    onTestFinished(() => connections.close());
    const objects = connections.bucket('ext', 'ext');
    const hint = new TextDecoder().decode(await objects.get('warehouse/ops/audit_events/metadata/version-hint.text'));
    await objects.put(`warehouse/ops/audit_events/metadata/v${hint}.metadata.json`, '{not json', 'application/json');
    await t.ingest([event({ eventId: 'local-only' })]);
    const broken = await t.search('?limit=100');
    expect(broken.json.events.map((e) => e.eventId)).toContain('local-only');
    expect((broken.json as unknown as { tierNote: string }).tierNote).toMatch(/^tiered audit partly unavailable: ice\.ops\.audit_events: /);
  });

  it("closing the node stops the reader's free-text worker threads", async () => {
    const { t } = await icebergNode({ 'auditlake.audit.retention.interval.ms': '100' });
    await t.ingest(Array.from({ length: 5 }, (_, i) => event({ eventId: `w${i}`, query: `SELECT ${i} FROM needle_table` })));
    await postSettings(t, { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': TABLE, 'audit.tier.retain.local.days': 0 });
    await waitUntilTiered(t);
    // Only the tiered table can answer now (the settings change is the one local event left).
    await expect.poll(async () => (await t.stored()).filter((e) => e.eventId.startsWith('w')).length).toBe(0);
    expect((await t.search('?q=needle_table&limit=100')).json.count).toBe(5);
    const [source] = await t.node.tiering.tierSources();
    expect((source as IcebergTierSource).textProbes.threads).toBeGreaterThan(0);
    await t.node.close();
    expect((source as IcebergTierSource).textProbes.threads).toBe(0);
  });
});
