// Goal: a request auditlake refuses is recorded under the action it asked for (an ingest token
// posting an erasure or a settings change: decision DENY, the refusal's words as details), and
// such a record is no erasure and no settings change. Before, verify read the refused erase as
// an erasure whose details did not parse and failed on an untouched history — online and from
// the tier — so one request with an ingest token broke the proof for good (an admin cannot
// erase auditlake's own records). A real node tiering to its embedded S3 endpoint.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditNode } from '@auditlake/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyHistory } from '../src/verify-command.js';
import { parseVerifyOptions } from '../src/verify-options.js';
import { adminRequest, ingestAll, offlineVerifyOptions, parquetTier, startTieringNode, waitFor } from './verify-node.js';

const ADMIN_TOKEN = 'admin-token-for-refused-requests';
const INGEST_TOKEN = 'ingest-token-for-refused-requests';
const TIER_PATH = 's3://auditlake/refused';

let dataDir: string;
let node: AuditNode;

function event(i: number): Record<string, unknown> {
  return { eventId: `ev-${i}`, userId: `user-${i}`, source: 'trino', action: 'data:Select', resource: `hive.sales.t${i}`, decision: 'ALLOW', tables: [`hive.sales.t${i}`], query: `SELECT ${i}`, ts: 1_700_000_000_000 + i * 1000 };
}

/** auditlake's own DENY records of `action`. */
async function refusalsOf(action: string): Promise<Array<{ action: string; decision: string; details: string }>> {
  const res = await adminRequest(node, ADMIN_TOKEN, '/admin/audit?engine=auditlake&decision=DENY');
  expect(res.status).toBe(200);
  return ((await res.json()) as { events: Array<{ action: string; decision: string; details: string }> }).events.filter((e) => e.action === action);
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'auditlake-verify-refused-'));
  node = await startTieringNode(dataDir, {
    adminToken: ADMIN_TOKEN,
    ingestToken: INGEST_TOKEN,
    props: {
      ...parquetTier(TIER_PATH),
      'auditlake.audit.tier.maintenance.enabled': 'false',
    },
  });
  await ingestAll(node, ADMIN_TOKEN, [event(1), event(2), event(3)]);
  // The ingest token asks for what only an admin may do: both are refused and recorded.
  const erase = await adminRequest(node, INGEST_TOKEN, '/admin/audit/erase', { method: 'POST', body: JSON.stringify({ eventIds: ['ev-1'], fields: ['query'] }) });
  expect(erase.status).toBe(403);
  const settings = await adminRequest(node, INGEST_TOKEN, '/admin/audit/settings', { method: 'POST', body: JSON.stringify({ 'audit.retention.days': 3 }) });
  expect(settings.status).toBe(403);
  await waitFor('both refusals recorded', async () => (await refusalsOf('audit:EraseFields')).length === 1 && (await refusalsOf('audit:UpdateSettings')).length === 1);
  // A real erasure after them, which verify counts.
  const erased = await adminRequest(node, ADMIN_TOKEN, '/admin/audit/erase', { method: 'POST', body: JSON.stringify({ eventIds: ['ev-2'], fields: ['query'] }) });
  expect(erased.status).toBe(200);
  expect(await node.integrity.checkpointNow()).toBeDefined();
  const head = node.store.chainHead.seq;
  await waitFor('the whole log tiered', async () => (await node.tiering.watermark()).seq === head);
}, 120_000);

afterAll(async () => {
  await node?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('records of refused requests', () => {
  it('are stored as refusals: the settings are unchanged and nothing was erased', async () => {
    expect(await refusalsOf('audit:EraseFields')).toEqual([expect.objectContaining({ decision: 'DENY', details: expect.stringMatching(/403/) as unknown })]);
    const settings = (await (await adminRequest(node, ADMIN_TOKEN, '/admin/audit/settings')).json()) as Record<string, unknown>;
    expect(settings['audit.retention.days']).not.toBe(3);
    expect((await node.store.getByEventId('ev-1'))?.query).toBe('SELECT 1');
    expect((await node.store.getByEventId('ev-2'))?.query).not.toBe('SELECT 2');
  });

  it('leave the history verifiable online, from the tier, and both as one, with the one real erasure counted', async () => {
    const online = await verifyHistory(parseVerifyOptions(['--url', node.url, '--token', ADMIN_TOKEN], {}));
    expect(online.message).toMatch(/^verified \d+ records, .*1 fields? erased/);
    expect(online.ok).toBe(true);
    const offline = await verifyHistory(offlineVerifyOptions(node, ['--path', TIER_PATH]));
    expect(offline.message).toMatch(/^verified \d+ records, .*1 fields? erased/);
    expect(offline.ok).toBe(true);
    const both = await verifyHistory(offlineVerifyOptions(node, ['--path', TIER_PATH], ['--url', node.url, '--token', ADMIN_TOKEN]));
    expect(both.ok).toBe(true);
  });
});
