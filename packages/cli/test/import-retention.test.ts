// Goal: `auditlake import` warns once, with a count and the oldest time, when it sends history older than the node's retention (which the node will prune), and still imports it.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pastRetentionWarning } from '../src/import-command.js';
import { ADMIN_TOKEN, runImport, startNode, tempDir } from './import-node.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** LHO records at the given times, one per line. */
async function lhoFile(dir: string, times: readonly number[]): Promise<string> {
  const file = join(dir, 'clo-audit.log.1');
  await writeFile(file, times.map((t, i) => JSON.stringify({ timestamp: t, userName: `u${i}`, action: 'VIEW_TASK', outcome: 'SUCCESS', taskId: `task-${i}` }) + '\n').join(''));
  return file;
}

/** Every request the import makes, by method and path. */
function recording(): { requests: string[]; fetch: typeof fetch } {
  const requests: string[] = [];
  return {
    requests,
    fetch: async (input, init) => {
      const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      requests.push(`${init?.method ?? 'GET'} ${url.pathname}`);
      return fetch(input, init);
    },
  };
}

describe('import: history older than the node keeps', () => {
  it('warns once with the count and the oldest time, and imports every event all the same', async () => {
    const node = await startNode({ 'auditlake.audit.retention.days': '30' });
    const dir = await tempDir();
    // Days old, far from the 30-day line either way: the test does not depend on when it runs.
    const now = Date.now();
    const oldest = now - 400 * DAY_MS;
    const file = await lhoFile(dir, [now - DAY_MS, oldest + 5, now - 2 * DAY_MS, now - 90 * DAY_MS, oldest]);
    // A second file of two batches: still one warning, for both files.
    const other = join(dir, 'more');
    await mkdir(other);
    await lhoFile(other, Array.from({ length: 700 }, (_, i) => now - 100 * DAY_MS + i));
    const { requests, fetch } = recording();
    const run = await runImport(node, ['--format', 'lho', file, other], { fetch }, { AUDITLAKE_ADMIN_TOKEN: ADMIN_TOKEN });
    expect(run).toMatchObject({ code: 0, stdout: 'imported 705, duplicates 0, refused 0\n' });
    expect(requests.filter((r) => r === 'POST /v1/api/audit')).toHaveLength(3);
    const warnings = run.stderr.split('\n').filter((line) => line.includes('warning'));
    expect(warnings).toEqual([
      `auditlake import: warning: 703 imported events are older than the node's retention (audit.retention.days 30; the oldest ${new Date(oldest).toISOString()}): ` +
        'the node deletes them at its next retention pass; to keep such events, raise audit.retention.days (POST /admin/audit/settings) before importing them',
    ]);
    expect(requests.filter((r) => r === 'GET /admin/audit/settings')).toHaveLength(1);
  });

  it('says nothing when every event is within the retention', async () => {
    const node = await startNode({ 'auditlake.audit.retention.days': '30' });
    const dir = await tempDir();
    const file = await lhoFile(dir, [Date.now() - DAY_MS, Date.now() - 20 * DAY_MS]);
    const run = await runImport(node, ['--format', 'lho', file], {}, { AUDITLAKE_ADMIN_TOKEN: ADMIN_TOKEN });
    expect(run).toEqual({ code: 0, stdout: 'imported 2, duplicates 0, refused 0\n', stderr: '' });
  });

  it('does not ask for the settings without an admin token (a refused request would be recorded as a denial)', async () => {
    const node = await startNode({ 'auditlake.audit.retention.days': '30' });
    const dir = await tempDir();
    const file = await lhoFile(dir, [Date.now() - 400 * DAY_MS]);
    const { requests, fetch } = recording();
    const run = await runImport(node, ['--format', 'lho', file], { fetch });
    expect(run).toEqual({ code: 0, stdout: 'imported 1, duplicates 0, refused 0\n', stderr: '' });
    expect(requests).toEqual(['POST /v1/api/audit']);
  });

  it('says where the events stay when the node tiers', () => {
    expect(pastRetentionWarning({ days: 7, tierMode: 'iceberg' }, { events: 2, oldestMs: Date.UTC(2024, 0, 1) })).toBe(
      "auditlake import: warning: 2 imported events are older than the node's retention (audit.retention.days 7; the oldest 2024-01-01T00:00:00.000Z): " +
        'the node keeps them only in its tier (audit.tier.mode iceberg), deleting them from its own disk once tiered; to keep such events, raise audit.retention.days (POST /admin/audit/settings) before importing them\n',
    );
  });
});
