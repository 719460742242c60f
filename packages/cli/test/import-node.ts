// Shared setup for import and export tests: a real node (fastify on a loopback port, LevelDB in a temp dir) and the CLI run in-process.
import { mkdtemp, rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig, type EventOutput } from '@auditlake/model';
import { startAuditNode, type AuditNode } from '@auditlake/server';
import { onTestFinished } from 'vitest';
import { exportCommand } from '../src/export-command.js';
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
export async function runImport(node: AuditNode, args: string[], clientOverrides: Partial<NodeClientOptions> = {}, env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  const code = await importCommand(
    ['--url', node.url, '--token', INGEST_TOKEN, ...args],
    env,
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

/** `auditlake export` in this process, against `node`, with its output captured (the export too, without --out). */
export async function runExport(node: AuditNode, args: string[], clientOverrides: Partial<NodeClientOptions> = {}): Promise<RunResult> {
  const chunks: Buffer[] = [];
  let stderr = '';
  const stdout = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      chunks.push(Buffer.from(chunk));
      done();
    },
  });
  const code = await exportCommand(['--url', node.url, '--token', ADMIN_TOKEN, ...args], {}, { stdout, stderr: { write: (t: string) => (stderr += t), isTTY: false } }, clientOverrides);
  return { code, stdout: Buffer.concat(chunks).toString('utf8'), stderr };
}

/** Sends events through the ingest API, 500 a request. */
export async function ingest(node: AuditNode, events: readonly Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < events.length; i += 500) {
    const res = await fetch(`${node.url}/v1/api/audit`, {
      method: 'POST',
      headers: { authorization: `Token ${INGEST_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(events.slice(i, i + 500)),
    });
    if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
  }
}
