// Shared setup for cluster tests: real redis-server, real `auditlake start --coordinator` processes.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { startNodeProcess, startRedis, tempDir, type NodeProcess, type RedisServer } from '@auditlake/testkit';
import { expect, onTestFinished } from 'vitest';

export const ADMIN = 'adm-token';
export const INGEST = 'ing-token';
const ENV = { AUDITLAKE_ADMIN_TOKEN: ADMIN, AUDITLAKE_INGEST_TOKEN: INGEST };

export interface LoggedEvent {
  eventId: string;
  seq: number;
  term: number;
  ingestTs: number;
  timestamp: number;
}

export interface Cluster {
  redis: RedisServer;
  nodes: Array<NodeProcess | undefined>;
  dataDirs: string[];
  /** Starts node i (again) on its data dir and port. */
  start(i: number): Promise<NodeProcess>;
  node(i: number): NodeProcess;
  /** Index of the node that reports itself leader, or -1. */
  leaderIndex(): Promise<number>;
  waitForLeader(timeoutMs?: number): Promise<number>;
  /** Waits until node i knows which node leads (its /admin/cluster names one). */
  waitForLeaderKnownBy(i: number, timeoutMs?: number): Promise<void>;
  /** The whole log of node i, in seq order, read through the internal pull endpoint. */
  log(i: number): Promise<LoggedEvent[]>;
  clusterToken(): Promise<string>;
}

export interface ClusterOptions {
  size: number;
  /** Redis keeps its data across a kill -9 (append-only file), so it can restart with or without it. */
  persistentRedis?: boolean;
  /** Extra `--set key=value` per node index. */
  sets?: (i: number) => string[];
  /** The cluster secret per node index (AUDITLAKE_CLUSTER_SECRET); log() then signs its pulls with node 0's. */
  secret?: (i: number) => string | undefined;
}

/**
 * The signature header of a peer request (x-auditlake-peer-signature), made here from its
 * documented recipe (docs/replication.md, "Cluster secret"), not with the node's own code.
 */
export function signedPeerHeader(secret: string, url: string, body: string): string {
  const timeMs = Date.now();
  const nonce = randomBytes(12).toString('hex');
  const bodyHash = createHash('sha256').update(body, 'utf8').digest('hex');
  const mac = createHmac('sha256', secret).update(`auditlake-peer-request/1\n${url}\n${timeMs}\n${nonce}\n${bodyHash}`, 'utf8').digest('hex');
  return `${timeMs}.${nonce}.${mac}`;
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const redis = await startRedis({ persistent: options.persistentRedis ?? false });
  onTestFinished(() => redis[Symbol.asyncDispose]());
  const dirs = await Promise.all(Array.from({ length: options.size }, () => tempDir('auditlake-cluster-')));
  onTestFinished(async () => {
    for (const d of dirs) await d.remove();
  });
  const nodes: Array<NodeProcess | undefined> = [];
  const ports: number[] = [];
  const start = async (i: number) => {
    const sets = (options.sets?.(i) ?? []).flatMap((s) => ['--set', s]);
    const node = await startNodeProcess({
      dataDir: dirs[i]!.path,
      ...(ports[i] ? { port: ports[i] } : {}),
      args: ['--coordinator', redis.url, '--node-id', `node${i}`, '--log-level', process.env['AUDITLAKE_TEST_LOG_LEVEL'] ?? 'warn', ...sets],
      env: { ...ENV, ...(options.secret?.(i) === undefined ? {} : { AUDITLAKE_CLUSTER_SECRET: options.secret(i) }) },
    });
    ports[i] = node.port;
    nodes[i] = node;
    onTestFinished(() => node.kill());
    return node;
  };
  for (let i = 0; i < options.size; i++) await start(i);
  let token: string | undefined;
  const cluster: Cluster = {
    redis,
    nodes,
    dataDirs: dirs.map((d) => d.path),
    start,
    node: (i) => {
      const n = nodes[i];
      if (!n) throw new Error(`node ${i} is not running`);
      return n;
    },
    async leaderIndex() {
      for (let i = 0; i < nodes.length; i++) {
        const n = nodes[i];
        if (!n || n.child.exitCode !== null || n.child.signalCode !== null) continue;
        try {
          const res = await fetch(`${n.url}/health`, { signal: AbortSignal.timeout(1000) });
          if (((await res.json()) as { role: string }).role === 'leader') return i;
        } catch {
          // down or paused
        }
      }
      return -1;
    },
    async waitForLeader(timeoutMs = 15_000) {
      let index = -1;
      await expect.poll(async () => (index = await cluster.leaderIndex()), { timeout: timeoutMs, interval: 50 }).toBeGreaterThanOrEqual(0);
      return index;
    },
    async waitForLeaderKnownBy(i, timeoutMs = 15_000) {
      await expect
        .poll(
          async () => {
            const res = await fetch(`${cluster.node(i).url}/admin/cluster`, { headers: { authorization: `Token ${ADMIN}` } });
            return res.ok ? ((await res.json()) as { leader: unknown }).leader !== null : false;
          },
          { timeout: timeoutMs, interval: 50 },
        )
        .toBe(true);
    },
    async clusterToken() {
      if (token) return token;
      const client = new Redis(redis.url, { lazyConnect: true });
      await client.connect();
      token = (await client.get('auditlake:default:cluster-token')) ?? undefined;
      client.disconnect();
      if (!token) throw new Error('no cluster token in Redis');
      return token;
    },
    async log(i) {
      const tokenValue = await cluster.clusterToken();
      const out: LoggedEvent[] = [];
      let after = 0;
      let lastTerm = 0;
      for (;;) {
        const url = `${cluster.node(i).url}/internal/v1/pull`;
        const body = JSON.stringify({ nodeId: 'test-reader', after, lastTerm, term: 0, limit: 10_000, waitMs: 0, metaHash: '', catchUp: true });
        const secret = options.secret?.(0);
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-auditlake-cluster-token': tokenValue, ...(secret === undefined ? {} : { 'x-auditlake-peer-signature': signedPeerHeader(secret, url, body) }) },
          body,
        });
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
        // NDJSON: a header line, then each entry's stored JSON on a line of its own.
        const entries = (await res.text()).split('\n').slice(1).map((line) => JSON.parse(line) as LoggedEvent);
        if (entries.length === 0) return out;
        out.push(...entries);
        const last = entries[entries.length - 1]!;
        after = last.seq;
        lastTerm = last.term;
      }
    },
  };
  return cluster;
}

export function postEvents(url: string, events: unknown[], query = ''): Promise<Response> {
  return fetch(`${url}/v1/api/audit${query}`, {
    method: 'POST',
    headers: { authorization: `Token ${INGEST}`, 'content-type': 'application/json' },
    body: JSON.stringify(events),
    signal: AbortSignal.timeout(15_000),
  });
}

/**
 * Continuous ingest spread over the given nodes (round robin), recording every eventId that
 * was acknowledged with 200. Failed requests are not retried: only what was acked counts.
 */
export function ingestLoad(urls: () => string[], options: { batch?: number; prefix: string }) {
  const acked = new Set<string>();
  let stopped = false;
  let counter = 0;
  const workers = Array.from({ length: 3 }, async (_, w) => {
    while (!stopped) {
      const targets = urls();
      const url = targets[counter++ % targets.length];
      if (url === undefined) {
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      const batch = Array.from({ length: options.batch ?? 10 }, (_, j) => ({
        source: 'trino',
        userId: `user${w}`,
        action: 'data:Insert',
        tables: ['hive.sales.orders'],
        eventId: `${options.prefix}-${w}-${counter}-${j}`,
      }));
      try {
        const res = await postEvents(url, batch);
        if (res.status === 200) for (const e of batch) acked.add(e.eventId);
        else await res.text();
      } catch {
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  });
  return {
    acked,
    async stop() {
      stopped = true;
      await Promise.all(workers);
    },
  };
}

/** Asserts every node in `indexes` holds exactly the same log and every acked id once. */
export async function expectConverged(cluster: Cluster, indexes: number[], acked: Set<string>, timeoutMs = 30_000): Promise<LoggedEvent[]> {
  let logs: LoggedEvent[][] = [];
  try {
    await expect
    .poll(
      async () => {
        logs = await Promise.all(indexes.map((i) => cluster.log(i)));
        const ids = new Set(logs[0]!.map((e) => e.eventId));
        const missing = [...acked].filter((id) => !ids.has(id)).length;
        const sameEverywhere = logs.every((l) => l.length === logs[0]!.length && l.every((e, k) => e.eventId === logs[0]![k]!.eventId && e.seq === logs[0]![k]!.seq));
        return { missing, sameEverywhere };
      },
      { timeout: timeoutMs, interval: 250 },
    )
    .toEqual({ missing: 0, sameEverywhere: true });
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await diagnostics(cluster, indexes)}`, { cause: err });
  }
  const first = logs[0]!;
  // Exactly once: no eventId appears twice in the log.
  expect(new Set(first.map((e) => e.eventId)).size).toBe(first.length);
  // One order: seqs strictly increase.
  expect(first.every((e, k) => k === 0 || e.seq > first[k - 1]!.seq)).toBe(true);
  return first;
}

export async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : NaN;
}

/** What each node says about itself and what it logged last, for a failed convergence. */
async function diagnostics(cluster: Cluster, indexes: number[]): Promise<string> {
  const parts: string[] = [];
  for (const i of indexes) {
    const node = cluster.nodes[i];
    if (!node) continue;
    let view = '';
    try {
      const status = await fetch(`${node.url}/admin/cluster`, { headers: { authorization: `Token ${ADMIN}` }, signal: AbortSignal.timeout(2000) });
      const metrics = await (await fetch(`${node.url}/metrics`, { signal: AbortSignal.timeout(2000) })).text();
      const outbox = /^auditlake_outbox_events (\d+)$/m.exec(metrics)?.[1];
      view = `cluster=${await status.text()} outbox=${outbox}`;
    } catch (err) {
      view = `unreachable: ${String(err)}`;
    }
    const lines = node.output().split('\n').filter((l) => !l.includes('"reqId"'));
    parts.push(`node${i}: ${view}\n  last output:\n  ${lines.slice(-25).join('\n  ')}`);
  }
  return parts.join('\n');
}
