// Shared setup for import and export tests: a real node (fastify on a loopback port, LevelDB in a temp dir) and the CLI run in-process.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig, type EventOutput } from '@auditlake/model';
import { startAuditNode, type AuditNode } from '@auditlake/server';
import { onTestFinished } from 'vitest';
import { importCommand } from '../src/import-command.js';
import type { NodeClientOptions } from '../src/node-client.js';

export const ADMIN_TOKEN = 'admin-token-for-cli-tests';
export const INGEST_TOKEN = 'ingest-token-for-cli-tests';
export const FIXTURES = join(import.meta.dirname, 'fixtures');

/** Cleanup runs when the test finishes, unless a hook (beforeAll) passes its own register. */
type Cleanup = (fn: () => Promise<void>) => void;
const afterThisTest: Cleanup = (fn) => onTestFinished(fn);

export async function tempDir(cleanup: Cleanup = afterThisTest): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-cli-'));
  cleanup(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export async function startNode(props: Record<string, string> = {}, cleanup: Cleanup = afterThisTest): Promise<AuditNode> {
  const node = await startAuditNode({
    dataDir: await tempDir(cleanup),
    host: '127.0.0.1',
    port: 0,
    config: resolveConfig(new Map(Object.entries(props))),
    adminToken: ADMIN_TOKEN,
    ingestToken: INGEST_TOKEN,
  });
  cleanup(() => node.close());
  return node;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `auditlake import` in this process, against `node`, with its output captured. */
export async function runImport(node: AuditNode, args: string[], clientOverrides: Partial<NodeClientOptions> = {}): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  const code = await importCommand(
    ['--url', node.url, '--token', INGEST_TOKEN, ...args],
    {},
    { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t), isTTY: false } },
    clientOverrides,
  );
  return { code, stdout, stderr };
}

/** Every event of the node, newest first, through the API (as a user would read them). */
export async function allEvents(node: AuditNode, query = ''): Promise<EventOutput[]> {
  const res = await fetch(`${node.url}/admin/audit?limit=5000${query}`, { headers: { authorization: `Token ${ADMIN_TOKEN}`, accept: 'application/x-ndjson' } });
  if (res.status !== 200) throw new Error(`search answered ${res.status}: ${await res.text()}`);
  const text = await res.text();
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('{"nextCursor"'))
    .map((line) => JSON.parse(line) as EventOutput);
}
