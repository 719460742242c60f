// Goal: nothing the store or the lake does to a history on its own makes `auditlake verify` cry
// wolf. Per tier mode (Parquet, Iceberg): events are tiered in small batches with checkpoints,
// retention deletes the tiered ones from the node, then a maintenance run compacts the small files
// (and, for Iceberg, expires the older snapshots); more events are tiered after it. The history
// then verifies online (the node, whose pruned ranges carry the chain across what retention
// deleted), offline from the bucket alone, and as one — every record, every checkpoint.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditNode, EmbeddedS3 } from '@auditlake/server';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyHistory } from '../src/verify-command.js';
import { parseVerifyOptions } from '../src/verify-options.js';
import { adminRequest, ingestAll, parquetTier, startTieringNode, waitFor as waitUntil } from './verify-node.js';

const ADMIN_TOKEN = 'admin-token-for-verify-maintenance';
const DAY_MS = 86_400_000;

interface Mode {
  mode: 'parquet' | 'iceberg';
  settings: Record<string, string>;
  /** The maintenance registration's name for the target. */
  table: string;
  /** The verify flag naming the tier, and its location. */
  flag: '--path' | '--table';
}

const MODES: Mode[] = [
  { mode: 'parquet', settings: parquetTier('s3://auditlake/tier'), table: 's3://auditlake/tier', flag: '--path' },
  { mode: 'iceberg', settings: { 'auditlake.audit.tier.mode': 'iceberg', 'auditlake.audit.tier.iceberg.table': 'local.audit.events' }, table: 'local.audit.events', flag: '--table' },
];

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

function event(id: string, ts: number): Record<string, unknown> {
  return { eventId: id, userId: 'ana', source: 'trino', action: 'data:Select', resource: `hive.sales.${id}`, decision: 'ALLOW', tables: [`hive.sales.${id}`], query: `SELECT '${id}'`, ts };
}

/** Until the tier holds every record the node has ordered so far. */
async function waitUntilTiered(): Promise<void> {
  const target = node as AuditNode;
  const head = target.store.chainHead.seq;
  await waitFor(`tiering up to seq ${head}`, async () => (await target.tiering.watermark()).seq >= head);
}

async function postSettings(body: Record<string, unknown>): Promise<void> {
  const res = await request('/admin/audit/settings', { method: 'POST', body: JSON.stringify(body) });
  expect(res.status).toBe(200);
}

describe.each(MODES)('verify after retention and maintenance, $mode tier', (mode) => {
  it('passes online, offline and as one, counting every record and checkpoint', async () => {
    dataDir = await mkdtemp(join(tmpdir(), `auditlake-verify-maint-${mode.mode}-`));
    node = await startTieringNode(dataDir, {
      adminToken: ADMIN_TOKEN,
      props: {
        ...mode.settings,
        // Small batches: many small files for compaction to merge.
        'auditlake.audit.tier.batch.size': '6',
      },
    });
    const target = node;
    const old = Date.now() - 3 * DAY_MS;
    await target.integrity.registerKey();
    // Three rounds of old events, each closed by a checkpoint, tiered in small commits.
    for (let round = 0; round < 3; round++) {
      for (let part = 0; part < 2; part++) {
        await ingest(Array.from({ length: 6 }, (_, i) => event(`old-${round}-${part}-${i}`, old + round * 100 + part * 10 + i)));
        await waitUntilTiered();
      }
      expect(await target.integrity.checkpointNow()).toBeDefined();
    }
    await waitUntilTiered();

    // Retention: the node keeps one day locally; the tiered old events go from it.
    const prunedBefore = target.store.prunedRanges.length;
    expect(prunedBefore).toBe(0);
    await postSettings({ 'audit.tier.retain.local.days': 1, 'audit.tier.maintenance.snapshot.retain.last': 1 });
    await waitFor('retention to delete the tiered old events', async () => (await target.store.getByEventId('old-2-1-5')) === undefined && (await target.store.getByEventId('old-0-0-0')) === undefined);
    const pruned = target.store.prunedRanges.reduce((n, range) => n + range.toSeq - range.fromSeq + 1, 0);
    expect(pruned).toBe(36);

    // Maintenance: compaction of the small files, snapshot expiry (Iceberg), orphan cleanup.
    const res = await request('/admin/audit/maintenance/run', { method: 'POST', body: JSON.stringify({ table: mode.table }) });
    expect(res.status).toBe(200);
    const run = (await res.json()) as Record<string, unknown>;
    expect(run).toMatchObject({ ok: true, error: null });
    expect(run['filesRewritten']).toBeGreaterThanOrEqual(2);
    if (mode.mode === 'iceberg') expect(run['snapshotsExpired']).toBeGreaterThanOrEqual(1);

    // More history after maintenance, with a checkpoint, tiered on top of the compacted files.
    await ingest(Array.from({ length: 4 }, (_, i) => event(`new-${i}`, Date.now() - i)));
    expect(await target.integrity.checkpointNow()).toBeDefined();
    await waitUntilTiered();

    const head = target.store.chainHead.seq;
    const registration = ((await (await request('/admin/audit/maintenance')).json()) as { registrations: Array<{ table: string; location: string }> }).registrations.find((r) => r.table === mode.table);
    const location = mode.mode === 'parquet' ? mode.table : (registration?.location as string);
    expect(location).toMatch(/^s3:\/\/auditlake\//);
    const embedded = target.embeddedS3 as EmbeddedS3;
    const bucketArgs = [mode.flag, location, '--endpoint', embedded.connectionUrl, '--access-key-id', embedded.credentials.accessKeyId, '--secret-access-key', embedded.credentials.secretAccessKey];
    const nodeArgs = ['--url', target.url, '--token', ADMIN_TOKEN];

    const offline = await verifyHistory(parseVerifyOptions(bucketArgs, {}));
    expect(offline.message).toMatch(new RegExp(`^verified ${head} records, seq 1\\.\\.${head}, 4 checkpoints`));
    expect(offline.ok).toBe(true);
    const online = await verifyHistory(parseVerifyOptions(nodeArgs, {}));
    expect(online.message).toMatch(new RegExp(`^verified ${head - pruned} records, seq 1\\.\\.${head}, 4 checkpoints; ${pruned} records removed by retention`));
    expect(online.ok).toBe(true);
    // As one: the pruned records verify from the tier, the rest from both copies.
    const both = await verifyHistory(parseVerifyOptions([...bucketArgs, ...nodeArgs], {}));
    expect(both.message).toMatch(new RegExp(`^verified ${head} records, seq 1\\.\\.${head}, 4 checkpoints`));
    expect(both.ok).toBe(true);
  });
});
