// Shared setup for server tests: a real node (fastify on a loopback port, LevelDB in a temp dir).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig, type StoredEvent } from '@auditlake/model';
import { onTestFinished } from 'vitest';
import { startAuditNode, type AuditNode, type AuditNodeOptions } from '../src/index.js';

export const ADMIN_TOKEN = 'admin-secret-for-tests';
export const INGEST_TOKEN = 'ingest-secret-for-tests';

export interface TestNode {
  node: AuditNode;
  dataDir: string;
  /** fetch against the node with the admin token unless `headers.authorization` is given. */
  request(path: string, init?: RequestInit & { token?: string | null }): Promise<Response>;
  ingest(body: unknown, token?: string): Promise<{ status: number; json: Record<string, unknown> }>;
  search(query?: string): Promise<{ status: number; json: { events: StoredEvent[]; count: number; truncated: boolean; error?: string } }>;
  /** Every stored event, straight from the store (newest first). */
  stored(): Promise<StoredEvent[]>;
}

export interface TestNodeOptions {
  props?: Record<string, string>;
  dataDir?: string;
  node?: Partial<AuditNodeOptions>;
}

/**
 * Starts a node for one test; it is closed and its data removed when the test finishes. A test
 * that restarts passes the first node's `dataDir` to the next one: the directory is removed once,
 * after every node of the test has closed (vitest runs finish hooks in reverse order).
 */
export async function startTestNode(options: TestNodeOptions = {}): Promise<TestNode> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'auditlake-server-')));
  if (!options.dataDir) onTestFinished(() => rm(dataDir, { recursive: true, force: true }));
  const node = await startAuditNode({
    dataDir,
    host: '127.0.0.1',
    port: 0,
    config: resolveConfig(new Map(Object.entries(options.props ?? {}))),
    adminToken: ADMIN_TOKEN,
    ingestToken: INGEST_TOKEN,
    ...options.node,
  });
  onTestFinished(() => node.close());
  const request = (path: string, init: RequestInit & { token?: string | null } = {}) => {
    const headers = new Headers(init.headers);
    const token = init.token === undefined ? ADMIN_TOKEN : init.token;
    if (token !== null && !headers.has('authorization')) headers.set('authorization', `Token ${token}`);
    return fetch(node.url + path, { ...init, headers });
  };
  return {
    node,
    dataDir,
    request,
    async ingest(body, token = INGEST_TOKEN) {
      const res = await request('/v1/api/audit', {
        method: 'POST',
        token,
        headers: { 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    },
    async search(query = '') {
      const res = await request(`/admin/audit${query}`);
      return { status: res.status, json: (await res.json()) as never };
    },
    async stored() {
      const all: StoredEvent[] = [];
      for await (const event of node.store.search({ action: 'all' })) all.push(event);
      return all;
    },
  };
}

/** A minimal valid event for tests. */
export function event(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { source: 'trino', userId: 'alice', action: 'data:Select', resource: 'hive.sales.orders', tables: ['hive.sales.orders'], query: 'SELECT 1', ...overrides };
}
