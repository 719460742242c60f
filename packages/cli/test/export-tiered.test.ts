// Goal: `auditlake export` covers the whole history, also the part that has left the node for S3, and refuses to write a file when part of the history cannot be read.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventOutput } from '@auditlake/model';
import type { AuditNode } from '@auditlake/server';
import { startS3Endpoint, type S3Endpoint } from '@auditlake/s3-endpoint';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ADMIN_TOKEN, ingest, runExport, startNode, tempDir } from './import-node.js';

const DAY_MS = 86_400_000;

const S3_CREDENTIALS = { accessKeyId: 'ALEXPORTTEST00000001', secretAccessKey: 'export-test-secret-0123456789abcdefghi' };

/** A node tiering to an S3 endpoint (signed, file-backed) every 100 ms, keeping nothing older than a day on its disk. */
async function tieringNode(): Promise<{ node: AuditNode; s3: S3Endpoint }> {
  const directory = await mkdtemp(join(tmpdir(), 'auditlake-cli-s3-'));
  onTestFinished(() => rm(directory, { recursive: true, force: true }));
  const s3 = await startS3Endpoint({ directory, host: '127.0.0.1', port: 0, buckets: ['ext'], credentials: S3_CREDENTIALS });
  onTestFinished(() => s3.close());
  const node = await startNode({
    'auditlake.audit.tier.interval.ms': '100',
    'auditlake.audit.tier.ingest.settle.ms': '0',
    'auditlake.audit.retention.interval.ms': '100',
    'auditlake.s3.connections.ext.endpoint': s3.url,
    'auditlake.s3.connections.ext.region': 'us-east-1',
    'auditlake.s3.connections.ext.accessKeyId': S3_CREDENTIALS.accessKeyId,
    'auditlake.s3.connections.ext.secretAccessKey': S3_CREDENTIALS.secretAccessKey,
    'auditlake.s3.connections.ext.forcePathStyle': 'true',
  });
  const res = await fetch(`${node.url}/admin/audit/settings`, {
    method: 'POST',
    headers: { authorization: `Token ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://ext/audit', 'audit.tier.connectionId': 'ext', 'audit.tier.retain.local.days': 1 }),
  });
  expect(res.status).toBe(200);
  return { node, s3 };
}

async function localIds(node: AuditNode): Promise<string[]> {
  const ids: string[] = [];
  for await (const event of node.store.search({ action: 'all' })) ids.push(event.eventId);
  return ids;
}

describe('auditlake export over tiered history', () => {
  it('writes the events that live only in S3 and those still on disk, each once, newest first', async () => {
    const { node } = await tieringNode();
    const now = Date.now();
    const old = Array.from({ length: 300 }, (_, i) => ({ eventId: `old-${String(i).padStart(3, '0')}`, source: 'trino', userId: `u${i % 5}`, action: 'data:Select', ts: now - 5 * DAY_MS - i * 1000, decision: i % 2 ? 'ALLOW' : 'DENY' }));
    await ingest(node, old);
    // Tiered, then gone from the disk: only S3 holds them.
    await expect.poll(async () => (await localIds(node)).filter((id) => id.startsWith('old-')).length, { timeout: 60_000, interval: 100 }).toBe(0);
    const recent = Array.from({ length: 120 }, (_, i) => ({ eventId: `new-${String(i).padStart(3, '0')}`, source: 'spark', userId: 'ana', action: 'ALTER_TABLE', ts: now - i * 1000 }));
    await ingest(node, recent);

    const dir = await tempDir();
    const out = join(dir, 'all.ndjson');
    const run = await runExport(node, ['--format', 'ndjson', '--page-size', '64', '--out', out]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const got = (await readFile(out, 'utf8'))
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as EventOutput);
    const ids = got.map((e) => e.eventId).filter((id) => !id.startsWith('auditlake') && (id.startsWith('old-') || id.startsWith('new-')));
    expect(ids).toEqual([...recent.map((e) => e.eventId), ...old.map((e) => e.eventId)]);
    expect(new Set(got.map((e) => e.eventId)).size).toBe(got.length);
    // A tiered copy carries what was stored.
    expect(got.find((e) => e.eventId === 'old-000')).toMatchObject({ userId: 'u0', decision: 'DENY', timestamp: old[0]!.ts });
    // The same as the search API, paged by hand: nothing more, nothing less.
    const viaSearch: EventOutput[] = [];
    let cursor = '';
    for (;;) {
      const page = (await (await fetch(`${node.url}/admin/audit?limit=500${cursor}`, { headers: { authorization: `Token ${ADMIN_TOKEN}` } })).json()) as { events: EventOutput[]; nextCursor?: string };
      viaSearch.push(...page.events);
      if (page.nextCursor === undefined) break;
      cursor = `&cursor=${page.nextCursor}`;
    }
    expect(got).toEqual(viaSearch);
  });

  it('fails with exit 1 and leaves no file when S3 cannot be read (the file would miss events)', async () => {
    const { node, s3 } = await tieringNode();
    await ingest(node, [{ eventId: 'in-s3', source: 'trino', userId: 'ana', action: 'data:Select', ts: Date.now() - 3 * DAY_MS }]);
    await expect.poll(async () => (await localIds(node)).includes('in-s3'), { timeout: 60_000, interval: 100 }).toBe(false);
    await s3.close();
    const dir = await tempDir();
    const run = await runExport(node, ['--format', 'parquet', '--out', join(dir, 'all.parquet')]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('could not read all of the history (tiered audit partly unavailable: s3://ext/audit');
    expect(run.stderr).toContain(`nothing was written to ${join(dir, 'all.parquet')}`);
    expect(await readdir(dir)).toEqual([]);
  });
});
