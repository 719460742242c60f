// Goal: a tier that changes under a running `auditlake verify` — an erasure rewrites a file and
// deletes it at once, between verify's listing and its fetch — is read again from a new listing
// and verifies; a file still listed but gone for good (deleted from the bucket) fails verify
// naming it, after as many attempts. A real node tiering to its embedded S3 endpoint.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ObjectStore, S3Connections } from '@auditlake/lake';
import type { AuditNode, EmbeddedS3 } from '@auditlake/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TIER_CHANGED_ATTEMPTS, verifyHistory } from '../src/verify-command.js';
import { startCountingProxy } from './counting-proxy.js';
import { adminRequest, embeddedS3Connections, ingestAll, offlineVerifyOptions, parquetTier, startTieringNode, waitFor } from './verify-node.js';

const ADMIN_TOKEN = 'admin-token-for-tier-changed';
const PREFIX = 'changing';
const TIER_PATH = `s3://auditlake/${PREFIX}`;
const DAY_MS = 86_400_000;

let dataDir: string;
let node: AuditNode;
let connections: S3Connections;
let objects: ObjectStore;

const parquetKeys = async () => (await objects.list(`${PREFIX}/`)).filter((key) => key.endsWith('.parquet')).sort();

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'auditlake-verify-tier-changed-'));
  node = await startTieringNode(dataDir, {
    adminToken: ADMIN_TOKEN,
    props: {
      ...parquetTier(TIER_PATH),
      'auditlake.audit.tier.maintenance.enabled': 'false',
    },
  });
  connections = embeddedS3Connections(node);
  objects = connections.bucket('t', 'auditlake');
  await node.integrity.registerKey();
  // Three days, so several files: one erasure rewrites one of them.
  const base = Date.now() - 3 * DAY_MS;
  await ingestAll(
    node,
    ADMIN_TOKEN,
    Array.from({ length: 30 }, (_, i) => ({ eventId: `ev-${i}`, userId: `user-${i}`, source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: `SELECT ${i}`, ts: base + (i % 3) * DAY_MS + i })),
  );
  expect(await node.integrity.checkpointNow()).toBeDefined();
  const head = node.store.chainHead.seq;
  await waitFor('the whole log tiered', async () => (await node.tiering.watermark()).seq === head);
}, 120_000);

afterAll(async () => {
  connections?.close();
  await node?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('a tier that changes while verify reads it', () => {
  it('an erasure that rewrites and deletes a listed file before verify fetches it: verify reads the tier again and passes, counting the erasure', async () => {
    const before = await parquetKeys();
    const markersBefore = await objects.list(`${PREFIX}/_auditlake/commits/`);
    const erase = async () => {
      const erased = await adminRequest(node, ADMIN_TOKEN, '/admin/audit/erase', { method: 'POST', body: JSON.stringify({ eventIds: ['ev-4'], fields: ['query'] }) });
      expect(erased.status).toBe(200);
      // The sweep applies the erasure to the tier: the file that held ev-4 is rewritten and deleted at once.
      await waitFor('the erased file gone', async () => (await Promise.all(before.map((key) => objects.exists(key)))).includes(false));
    };
    // Verify's first GET of a data file (after its listing) waits for the erasure, and so does every one after it.
    let erasing: Promise<void> | undefined;
    const proxy = await startCountingProxy((node.embeddedS3 as EmbeddedS3).connectionUrl, ({ method, path }) => (method === 'GET' && path.endsWith('.parquet') ? (erasing ??= erase()) : undefined));
    try {
      const report = await verifyHistory(offlineVerifyOptions(node, ['--path', TIER_PATH], ['--url', node.url, '--token', ADMIN_TOKEN, '--threads', '0'], proxy.endpoint));
      expect(report.message).toMatch(/^verified \d+ records, .*1 fields? erased/);
      expect(report.ok).toBe(true);
      // The first reading asked for the removed file; the tier was read again from a new listing.
      const removed = [];
      for (const key of before) if (!(await objects.exists(key))) removed.push(key);
      expect(removed).toHaveLength(1);
      expect(proxy.getsOf(removed[0] as string).size).toBe(1);
      expect(markersBefore.length).toBeGreaterThan(0);
      for (const key of markersBefore) expect(proxy.getsOf(key).get(`auditlake/${key}`)).toBe(2);
    } finally {
      await proxy.close();
    }
  });

  it('a file still listed but gone from the bucket fails verify naming it, after reading the tier again in vain', async () => {
    const [victim] = await parquetKeys();
    const saved = await objects.get(victim as string);
    await objects.delete(victim as string);
    try {
      await expect(verifyHistory(offlineVerifyOptions(node, ['--path', TIER_PATH]))).rejects.toThrow(`tier file ${victim} is listed by the tier's commits but was gone from the bucket each of the ${TIER_CHANGED_ATTEMPTS} times verify read the tier: its records are missing`);
    } finally {
      await objects.put(victim as string, saved);
    }
    expect(TIER_CHANGED_ATTEMPTS).toBeGreaterThan(1);
  });
});

