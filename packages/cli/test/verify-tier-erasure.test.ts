// Goal: an erasure reaches the Iceberg tier. Records tiered, compacted (so older snapshots and
// replaced files hold the values too) and then removed from the node by retention are named
// by POST /admin/audit/erase next to a record still local; the sweep rewrites the tier's files
// that hold them. Afterwards verify passes offline from the bucket alone and online, reporting
// the erased fields; DuckDB and icebird read the marker and every event once; and no object in
// the bucket's directory holds an erased value in any byte.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants as zlibConstants, inflateRawSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { icebergRead } from 'icebird';
import { erasureDoneKey, ERASURES_APPLIED_THROUGH_PROPERTY, loadIcebergTable, parseS3Location, PURGE_FILES_PROPERTY, resolveIcebergTable, type ObjectStore, type S3Location, type TierSource } from '@auditlake/lake';
import { resolveConfig } from '@auditlake/model';
import { startAuditNode, type AuditNode, type EmbeddedS3 } from '@auditlake/server';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { verifyHistory } from '../src/verify-command.js';
import { parseVerifyOptions } from '../src/verify-options.js';
import { adminRequest, ingestAll, parquetTier, startTieringNode, waitFor as waitUntil } from './verify-node.js';
import { routeAwsS3To } from '@auditlake/lake/testing';

const ADMIN_TOKEN = 'admin-token-for-tier-erasure';
const DAY_MS = 86_400_000;
const TABLE = 'local.audit.events';
const MARKER = '[erased by auditlake]';
const PARQUET_PATH = 's3://auditlake/tier';

let node: AuditNode | undefined;
let dataDir: string | undefined;

const request = (path: string, init: RequestInit = {}) => adminRequest(node as AuditNode, ADMIN_TOKEN, path, init);
const ingest = (events: Array<Record<string, unknown>>) => ingestAll(node as AuditNode, ADMIN_TOKEN, events);
const waitFor = (what: string, condition: () => Promise<boolean>) => waitUntil(what, condition, 120_000);

afterEach(async () => {
  await node?.close();
  node = undefined;
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

/**
 * A value unique to an event and field, looked for in the bucket's bytes after the erasure:
 * random-looking hex, so the tier's page compression keeps it as a literal (a repeated prefix
 * would be stored as a back-reference, and a search of the raw bytes could not find it).
 */
function token(id: string, field: string): string {
  return createHash('sha256').update(`${field}:${id}`).digest('hex').slice(0, 24);
}

/** An event whose query and user carry values unique to it. */
function event(id: string, ts: number): Record<string, unknown> {
  return { eventId: id, userId: token(id, 'user'), source: 'trino', action: 'data:Select', resource: `hive.sales.${id}`, decision: 'ALLOW', tables: [`hive.sales.${id}`], query: token(id, 'query'), ts };
}

async function waitUntilTiered(): Promise<void> {
  const target = node as AuditNode;
  const head = target.store.chainHead.seq;
  await waitFor(`tiering up to seq ${head}`, async () => (await target.tiering.watermark()).seq >= head);
}

/** Every file under `dir`, recursively. */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else out.push(path);
  }
  return out;
}

const GZIP_MAGIC = Buffer.from([0x1f, 0x8b, 0x08]);

/**
 * The bytes of a file as stored and, after them, every GZIP stream found in it inflated (the
 * tier's Parquet pages are GZIP-compressed: a value in them is not in the raw bytes as text).
 */
function searchableBytes(raw: Buffer): Buffer {
  const parts = [raw];
  for (let at = raw.indexOf(GZIP_MAGIC); at >= 0; at = raw.indexOf(GZIP_MAGIC, at + 1)) {
    try {
      // The deflate stream after the 10-byte GZIP header (Node's gunzip refuses bytes after a member).
      parts.push(inflateRawSync(raw.subarray(at + 10), { finishFlush: zlibConstants.Z_SYNC_FLUSH }));
    } catch {
      // Not a stream that starts here (the magic bytes by chance): nothing to add.
    }
  }
  return Buffer.concat(parts);
}

/** The files under `dir` whose bytes (raw, or inflated from GZIP pages) hold `text` (UTF-8). */
async function filesHolding(dir: string, text: string): Promise<string[]> {
  // Without its first bytes: a string column's encoding may share a prefix with the value before.
  const needle = Buffer.from(text.slice(4), 'utf8');
  const holding: string[] = [];
  for (const path of await filesUnder(dir)) if (searchableBytes(await readFile(path)).includes(needle)) holding.push(path);
  return holding;
}

/**
 * The rows DuckDB reads from a tier's live files (copied out of the embedded endpoint), by
 * event_id: event_id, user_id and query.
 */
async function duckdbRows(source: TierSource, objects: ObjectStore): Promise<Array<Record<string, unknown>>> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-tier-erasure-files-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const paths: string[] = [];
  for (const [index, file] of (await source.listFiles()).entries()) {
    const path = join(dir, `${index}.parquet`);
    await writeFile(path, await objects.get(file.key));
    paths.push(path);
  }
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  onTestFinished(() => {
    connection.closeSync();
    instance.closeSync();
  });
  return (await connection.runAndReadAll(`SELECT event_id, user_id, query, erased, salt FROM read_parquet([${paths.map((p) => `'${p}'`).join(',')}]) ORDER BY event_id`)).getRowObjectsJson();
}

interface Mode {
  mode: 'parquet' | 'iceberg';
  settings: Record<string, string>;
  /** The maintenance registration's name for the target, and the verify flag naming it. */
  table: string;
  flag: '--path' | '--table';
}

const MODES: Mode[] = [
  { mode: 'iceberg', settings: { 'auditlake.audit.tier.mode': 'iceberg', 'auditlake.audit.tier.iceberg.table': TABLE }, table: TABLE, flag: '--table' },
  { mode: 'parquet', settings: parquetTier(PARQUET_PATH), table: PARQUET_PATH, flag: '--path' },
];

/** A second target of each mode, for the rename below. */
const RENAMED: Record<Mode['mode'], { setting: string; value: string }> = {
  iceberg: { setting: 'audit.tier.iceberg.table', value: 'local.audit.renamed' },
  parquet: { setting: 'audit.tier.parquet.path', value: 's3://auditlake/renamed' },
};

describe.each(MODES)('erasure of tiered records, $mode tier', (mode) => {
  it('rewrites the tier: verify passes and counts the erased fields, readers see the marker, no object keeps the value', async () => {
    dataDir = await mkdtemp(join(tmpdir(), `auditlake-tier-erasure-${mode.mode}-`));
    node = await startTieringNode(dataDir, {
      adminToken: ADMIN_TOKEN,
      props: {
        ...mode.settings,
        'auditlake.audit.tier.batch.size': '5',
      },
    });
    const target = node;
    const old = Date.now() - 3 * DAY_MS;
    await target.integrity.registerKey();
    for (let part = 0; part < 4; part++) {
      await ingest(Array.from({ length: 5 }, (_, i) => event(`old-${part}-${i}`, old + part * 10 + i)));
      await waitUntilTiered();
    }
    expect(await target.integrity.checkpointNow()).toBeDefined();
    await waitUntilTiered();
    // Compaction: the small files are replaced, and older snapshots (Iceberg) or the replaced
    // files in their grace period (Parquet) still hold the values the erasure must not leave behind.
    const res = await request('/admin/audit/maintenance/run', { method: 'POST', body: JSON.stringify({ table: mode.table }) });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Record<string, unknown>)['filesRewritten']).toBeGreaterThanOrEqual(2);
    // Retention removes the tiered old events from the node.
    expect((await request('/admin/audit/settings', { method: 'POST', body: JSON.stringify({ 'audit.tier.retain.local.days': 1 }) })).status).toBe(200);
    await waitFor('retention to delete the tiered old events', async () => (await target.store.getByEventId('old-1-2')) === undefined && (await target.store.getByEventId('old-3-4')) === undefined);
    await ingest([event('new-0', Date.now()), event('new-1', Date.now() - 1)]);
    await waitUntilTiered();

    // An unknown eventId is refused, named, and nothing is erased.
    const headBefore = target.store.chainHead.seq;
    const refused = await request('/admin/audit/erase', { method: 'POST', body: JSON.stringify({ eventIds: ['old-1-2', 'no-such-event'], fields: ['query'] }) });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toBe("event not in this node's log nor in the tier: no-such-event; nothing was erased");
    expect(target.store.chainHead.seq).toBe(headBefore);

    // A tiered-only record (pruned here) and a local one (also tiered).
    const erase = await request('/admin/audit/erase', { method: 'POST', body: JSON.stringify({ eventIds: ['old-1-2', 'new-0'], fields: ['query', 'userId'] }) });
    expect(erase.status).toBe(200);
    const erasure = (await erase.json()) as { erased: number; erasureSeqs: number[] };
    expect(erasure.erased).toBe(2);
    const erasureSeq = erasure.erasureSeqs.at(-1) as number;
    expect((await target.store.getByEventId('new-0'))?.query).toBe(MARKER);

    const embedded = target.embeddedS3 as EmbeddedS3;
    const objects = target.tiering.connections.bucket('local', 'auditlake');
    const table = resolveIcebergTable(TABLE, new Map([['local', { name: 'local', warehouse: 's3://auditlake/warehouse', connectionId: 'local' }]]));
    if (mode.mode === 'iceberg') {
      await waitFor('the erasure to reach the tier and its purge to finish', async () => {
        const loaded = await loadIcebergTable(objects, table);
        const props = loaded?.metadata.properties ?? {};
        return Number(props[ERASURES_APPLIED_THROUGH_PROPERTY] ?? 0) >= erasureSeq && props[PURGE_FILES_PROPERTY] === undefined;
      });
      const loaded = await loadIcebergTable(objects, table);
      const current = loaded?.metadata.snapshots.find((s) => s['snapshot-id'] === loaded.metadata['current-snapshot-id']);
      expect(loaded?.metadata.snapshots.some((s) => s.summary['operation'] === 'overwrite')).toBe(true);
      expect(current?.summary['auditlake.tiering.watermark']).toBeDefined();
    } else {
      const location = parseS3Location(PARQUET_PATH) as S3Location;
      await waitFor('the erasure to reach the tier', async () => (await objects.list(`${location.prefix}/`)).includes(erasureDoneKey(location, erasureSeq)));
    }

    // verify, offline from the bucket alone and online.
    const head = target.store.chainHead.seq;
    const bucketArgs = [mode.flag, mode.mode === 'iceberg' ? table.location : PARQUET_PATH, '--endpoint', embedded.connectionUrl, '--access-key-id', embedded.credentials.accessKeyId, '--secret-access-key', embedded.credentials.secretAccessKey];
    const offline = await verifyHistory(parseVerifyOptions(bucketArgs, {}));
    expect(offline.message).toMatch(new RegExp(`^verified ${head} records, seq 1\\.\\.${head}, 1 checkpoints?.*4 fields erased`));
    expect(offline.ok).toBe(true);
    const online = await verifyHistory(parseVerifyOptions(['--url', target.url, '--token', ADMIN_TOKEN], {}));
    expect(online.message).toMatch(/2 fields erased/);
    expect(online.ok).toBe(true);

    // DuckDB over the files readers read (the current snapshot's; the live Parquet files): every event once, the marker for the erased.
    const [source] = await target.tiering.tierSources();
    const rows = await duckdbRows(source as TierSource, objects);
    expect(rows.length).toBe(head);
    expect(new Set(rows.map((r) => r['event_id'])).size).toBe(head);
    for (const id of ['old-1-2', 'new-0']) expect(rows.find((r) => r['event_id'] === id)).toMatchObject({ user_id: MARKER, query: MARKER });
    expect(rows.find((r) => r['event_id'] === 'old-1-3')).toMatchObject({ user_id: token('old-1-3', 'user'), query: token('old-1-3', 'query') });
    // The tier keeps no way to confirm a guess of an erased value: its key K is gone, the salts of
    // the erased fields too, and a kept hash is neither the value's plain hash nor a salted one
    // under any salt kept. A record not erased keeps its key.
    expect(rows.find((r) => r['event_id'] === 'old-1-3')?.['salt']).toMatch(/^[A-Za-z0-9_-]{22}$/);
    for (const id of ['old-1-2', 'new-0']) {
      const row = rows.find((r) => r['event_id'] === id) as Record<string, unknown>;
      const salts = (row['salt'] as string).split('.');
      expect(salts.map((salt) => salt.length)).toEqual([0, 16, 16, 0, 16]);
      const kept = Object.values(JSON.parse(row['erased'] as string) as Record<string, string>);
      expect(kept).toHaveLength(2);
      for (const field of ['user', 'query']) {
        const guess = token(id, field);
        // Each kept salt as its text (the form hashed) and as the bytes it encodes.
        const keptSalts = salts.filter((s) => s !== '');
        const candidates = [
          createHash('sha256').update(guess).digest('hex'),
          ...keptSalts.map((s) => createHash('sha256').update(s).update(guess).digest('hex')),
          ...keptSalts.map((s) => createHash('sha256').update(Buffer.from(s, 'base64url')).update(guess).digest('hex')),
        ];
        for (const candidate of candidates) expect(kept).not.toContain(candidate);
      }
    }

    if (mode.mode === 'iceberg') {
      // icebird, through the table's metadata, pointed at the embedded endpoint.
      const restore = routeAwsS3To(embedded.connectionUrl, embedded.credentials);
      onTestFinished(restore);
      const iceRows = (await icebergRead({ tableUrl: table.location })) as Array<Record<string, unknown>>;
      restore();
      expect(iceRows.length).toBe(head);
      expect(new Set(iceRows.map((r) => r['event_id'])).size).toBe(head);
      for (const id of ['old-1-2', 'new-0']) expect(iceRows.find((r) => r['event_id'] === id)).toMatchObject({ user_id: MARKER, query: MARKER });
    }

    // No byte of any object in the bucket's directory holds an erased value; a kept one is there
    // (read with the node closed, so no object is being written meanwhile).
    await target.close();
    node = undefined;
    const s3Dir = join(dataDir, 's3');
    for (const id of ['old-1-2', 'new-0']) for (const field of ['user', 'query']) expect(await filesHolding(s3Dir, token(id, field))).toEqual([]);
    // The search finds values that are kept.
    for (const id of ['old-1-3', 'new-1']) for (const field of ['user', 'query']) expect((await filesHolding(s3Dir, token(id, field))).length).toBeGreaterThan(0);
  });

  it('reaches a target the tier was renamed away from: its rows are rewritten, readers see the marker, no object there keeps the value', async () => {
    dataDir = await mkdtemp(join(tmpdir(), `auditlake-tier-erasure-renamed-${mode.mode}-`));
    node = await startAuditNode({
      dataDir,
      host: '127.0.0.1',
      port: 0,
      embeddedS3Port: 0,
      adminToken: ADMIN_TOKEN,
      logger: false,
      config: resolveConfig(new Map(Object.entries({ ...mode.settings, 'auditlake.audit.tier.interval.ms': '100', 'auditlake.audit.tier.ingest.settle.ms': '0', 'auditlake.audit.tier.batch.size': '5' }))),
    });
    const target = node;
    const now = Date.now();
    await ingest(Array.from({ length: 5 }, (_, i) => event(`first-${i}`, now - 10 + i)));
    await waitUntilTiered();
    // The operator points tiering elsewhere; the first target keeps its rows and is still read.
    const renamed = RENAMED[mode.mode];
    expect((await request('/admin/audit/settings', { method: 'POST', body: JSON.stringify({ [renamed.setting]: renamed.value }) })).status).toBe(200);
    await ingest(Array.from({ length: 5 }, (_, i) => event(`second-${i}`, now + i)));
    await waitUntilTiered();
    expect((await target.tiering.tierSources()).length).toBe(2);

    const erase = await request('/admin/audit/erase', { method: 'POST', body: JSON.stringify({ eventIds: ['first-2'], fields: ['query', 'userId'] }) });
    expect(erase.status).toBe(200);
    const erasureSeq = ((await erase.json()) as { erasureSeqs: number[] }).erasureSeqs.at(-1) as number;

    const objects = target.tiering.connections.bucket('local', 'auditlake');
    const first = resolveIcebergTable(TABLE, new Map([['local', { name: 'local', warehouse: 's3://auditlake/warehouse', connectionId: 'local' }]]));
    const firstParquet = parseS3Location(PARQUET_PATH) as S3Location;
    if (mode.mode === 'iceberg') {
      await waitFor('the erasure to reach the first table and its purge to finish', async () => {
        const props = (await loadIcebergTable(objects, first))?.metadata.properties ?? {};
        return Number(props[ERASURES_APPLIED_THROUGH_PROPERTY] ?? 0) >= erasureSeq && props[PURGE_FILES_PROPERTY] === undefined;
      });
    } else {
      await waitFor('the erasure to reach the first location', async () => (await objects.list(`${firstParquet.prefix}/`)).includes(erasureDoneKey(firstParquet, erasureSeq)));
    }

    // DuckDB over the first target's live files: its five rows once each, the marker for the erased one.
    const source = (await target.tiering.tierSources()).find((s) => s.name === (mode.mode === 'iceberg' ? TABLE : PARQUET_PATH)) as TierSource;
    expect(source).toBeDefined();
    const rows = await duckdbRows(source, objects);
    expect(rows.map((r) => r['event_id'])).toEqual(['first-0', 'first-1', 'first-2', 'first-3', 'first-4']);
    expect(rows.find((r) => r['event_id'] === 'first-2')).toMatchObject({ user_id: MARKER, query: MARKER });
    expect(rows.find((r) => r['event_id'] === 'first-3')).toMatchObject({ user_id: token('first-3', 'user'), query: token('first-3', 'query') });

    // verify from the bucket alone: the first target holds the erased fields, the second the
    // erasure record, so only both together are the history; the first alone reads as altered
    // (an erased field with no erasure record in what was read). With the node's log too.
    await waitUntilTiered();
    const embedded = target.embeddedS3 as EmbeddedS3;
    const credentials = ['--endpoint', embedded.connectionUrl, '--access-key-id', embedded.credentials.accessKeyId, '--secret-access-key', embedded.credentials.secretAccessKey];
    const catalogs = new Map([['local', { name: 'local', warehouse: 's3://auditlake/warehouse', connectionId: 'local' }]]);
    const [one, two] = mode.mode === 'iceberg' ? [first.location, resolveIcebergTable(renamed.value, catalogs).location] : [PARQUET_PATH, renamed.value];
    const both = await verifyHistory(parseVerifyOptions([mode.flag, one, mode.flag, two, ...credentials], {}));
    expect(both.message).toMatch(new RegExp(`^verified ${target.store.chainHead.seq} records, seq 1\\.\\.${target.store.chainHead.seq}\\b.*2 fields erased`));
    expect(both.ok).toBe(true);
    const alone = await verifyHistory(parseVerifyOptions([mode.flag, one, ...credentials], {}));
    expect(alone.message).toMatch(/erased without an erasure record/);
    expect(alone.ok).toBe(false);
    const withLog = await verifyHistory(parseVerifyOptions(['--url', target.url, '--token', ADMIN_TOKEN, mode.flag, one, mode.flag, two, ...credentials], {}));
    expect(withLog.message).toMatch(/2 fields erased/);
    expect(withLog.ok).toBe(true);

    // No object under the first target's directory keeps the erased values; a kept one is there.
    await target.close();
    node = undefined;
    const firstDir = join(dataDir, 's3', 'auditlake', mode.mode === 'iceberg' ? (parseS3Location(first.location) as S3Location).prefix : firstParquet.prefix);
    for (const field of ['user', 'query']) expect(await filesHolding(firstDir, token('first-2', field))).toEqual([]);
    expect((await filesHolding(firstDir, token('first-3', 'query'))).length).toBeGreaterThan(0);
  });
});
