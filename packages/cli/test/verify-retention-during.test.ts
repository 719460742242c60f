// Goal: `verify --url` passes when retention deletes records ahead of its cursor while it reads
// (an import of old history, deleted by a retention pass mid-verify): the node declares them
// deleted in its view, which the verify reads again at a gap the first view did not declare.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditNode } from '@auditlake/server';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyHistory } from '../src/verify-command.js';
import { parseVerifyOptions } from '../src/verify-options.js';
import { adminRequest, ingestAll, selectEvent, startTieringNode, waitFor } from './verify-node.js';

const ADMIN_TOKEN = 'admin-token-for-verify-retention-during';
const DAY_MS = 86_400_000;

let node: AuditNode | undefined;
let dataDir: string | undefined;
const realFetch = globalThis.fetch;

afterEach(async () => {
  globalThis.fetch = realFetch;
  await node?.close();
  node = undefined;
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

describe('verify --url while retention deletes records ahead of it', () => {
  // After a settings change (a record written after the deleted ones: a later record shows the
  // gap), or a pass alone at the end of the log (no record after them: only the head shows it).
  it.each(['after a settings change', 'at the end of the log'] as const)('passes, counting them as removed by retention: %s', async (how) => {
    dataDir = await mkdtemp(join(tmpdir(), 'auditlake-verify-retention-during-'));
    node = await startTieringNode(dataDir, { adminToken: ADMIN_TOKEN, props: { 'auditlake.audit.retention.interval.ms': how === 'after a settings change' ? '100' : '3600000' } });
    const target = node;
    // More than one records page (10,000) of recent events, then old history imported after them.
    for (let batch = 0; batch < 11; batch++) await ingestAll(target, ADMIN_TOKEN, Array.from({ length: 1_000 }, (_, i) => selectEvent(`new-${batch}-${i}`)));
    await ingestAll(target, ADMIN_TOKEN, Array.from({ length: 500 }, (_, i) => selectEvent(`old-${i}`, 20 * DAY_MS)));
    const head = target.store.chainHead.seq;
    // Retention shortened, or run, as the second records page is asked for: the old events go first.
    let deleted = false;
    globalThis.fetch = async (input, init) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (!deleted && url.includes('/admin/audit/integrity/records?afterSeq=') && !url.includes('afterSeq=0&')) {
        deleted = true;
        if (how === 'after a settings change') {
          expect((await adminRequest(target, ADMIN_TOKEN, '/admin/audit/settings', { method: 'POST', body: JSON.stringify({ 'audit.retention.days': 10 }) })).status).toBe(200);
        } else {
          await target.store.pruneBefore(Date.now() - 10 * DAY_MS, 1_000, async () => true);
          expect(target.store.chainHead.seq).toBe(head);
        }
        await waitFor('retention of the old events', async () => target.store.prunedRanges.some((range) => range.toSeq >= head - 1));
      }
      return realFetch(input, init);
    };
    const report = await verifyHistory(parseVerifyOptions(['--url', target.url, '--token', ADMIN_TOKEN, '--threads', '0'], {}));
    expect(deleted).toBe(true);
    expect(report.message).toMatch(/^verified \d+ records, seq 1\.\.\d+, \d+ checkpoints?; 500 records removed by retention$/);
    expect(report.ok).toBe(true);
  }, 120_000);
});
