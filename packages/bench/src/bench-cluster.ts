import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { startNodeProcess, startRedis, type NodeProcess, type RedisServer } from '@auditlake/testkit';
import { absoluteNowMs, sleep } from './clock.js';
import { findPid } from './cpu-monitor.js';
import { httpRequest, keepAliveAgent } from './http-client.js';
import { trackPid, untrackPid } from './process-cleanup.js';
import { redisGet } from './redis-get.js';
import { scratchDir, type ScratchDir } from './scratch-dir.js';

/** `GET /admin/cluster` (README "HTTP API"). */
export interface ClusterStatus {
  nodeId: string;
  role: 'leader' | 'standby';
  term: number;
  leader: { nodeId: string; url: string } | null;
  nodes: Array<{ nodeId: string; url: string; role: string; appliedSeq: number; lagMs: number | null }>;
}

/** One entry of a node's log as `POST /internal/v1/pull` returns it (only what the bench reads). */
export interface LogEntry {
  eventId: string;
  seq: number;
  term: number;
}

/** Server-side time per route and event counters of one node (cumulative since it started). */
export interface NodeCounters {
  routes: Record<string, { count: number; seconds: number }>;
  counters: Record<string, number>;
}

/** What happened on one node between two readings. */
export function countersDelta(before: NodeCounters, after: NodeCounters): NodeCounters {
  const routes: NodeCounters['routes'] = {};
  for (const [key, a] of Object.entries(after.routes)) {
    const b = before.routes[key] ?? { count: 0, seconds: 0 };
    if (a.count > b.count) routes[key] = { count: a.count - b.count, seconds: a.seconds - b.seconds };
  }
  const counters: NodeCounters['counters'] = {};
  for (const [key, a] of Object.entries(after.counters)) {
    const d = a - (before.counters[key] ?? 0);
    if (d !== 0) counters[key] = d;
  }
  return { routes, counters };
}

/** A leader giving up leadership, as its log says. */
export interface StepDown {
  node: string;
  term: number;
  reason: string;
  /** Wall-clock time of the log line (epoch ms). */
  atMs: number;
}

export const CLUSTER_TOKEN_KEY = 'auditlake:default:cluster-token';
const STATUS_TIMEOUT_MS = 5000;

/**
 * Three (or more) real `auditlake start --coordinator redis://…` processes on 127.0.0.1 and
 * one real `redis-server`, as an operator runs them (README "A three-node cluster"): default
 * configuration, lease TTL 3000 ms, logs at warn. Everything it starts is stopped and its data
 * removed by `close()` — and by process-cleanup if the bench itself is interrupted.
 */
export class BenchCluster implements AsyncDisposable {
  readonly adminToken = randomBytes(18).toString('hex');
  readonly ingestToken = randomBytes(18).toString('hex');
  readonly redis: RedisServer;
  readonly #dir: ScratchDir;
  readonly #nodes: Array<NodeProcess | undefined>;
  readonly #ports: number[] = [];
  readonly #agent = keepAliveAgent(16);
  #redisPid: number | undefined;
  #clusterToken: string | undefined;

  private constructor(redis: RedisServer, dir: ScratchDir, size: number) {
    this.redis = redis;
    this.#dir = dir;
    this.#nodes = Array.from({ length: size }, () => undefined);
  }

  static async start(size: number): Promise<BenchCluster> {
    const dir = await scratchDir('cluster');
    let redis: RedisServer;
    try {
      redis = await startRedis();
    } catch (err) {
      await dir[Symbol.asyncDispose]();
      throw err;
    }
    const cluster = new BenchCluster(redis, dir, size);
    try {
      // redis-server sets its process title to "redis-server 127.0.0.1:<port>".
      cluster.#redisPid = findPid(`127.0.0.1:${redis.port}`);
      if (cluster.#redisPid !== undefined) trackPid(cluster.#redisPid, 'redis-server');
      for (let i = 0; i < size; i++) await cluster.start(i);
      return cluster;
    } catch (err) {
      await cluster.close();
      throw err;
    }
  }

  get size(): number {
    return this.#nodes.length;
  }

  /** Starts node i, again on its own data dir and port if it ran before. */
  async start(i: number): Promise<NodeProcess> {
    const dataDir = join(this.#dir.path, `node${i}`);
    await mkdir(dataDir, { recursive: true });
    const port = this.#ports[i];
    const node = await startNodeProcess({
      dataDir,
      ...(port === undefined ? {} : { port }),
      args: ['--coordinator', this.redis.url, '--node-id', `node${i}`, '--log-level', 'warn'],
      env: { AUDITLAKE_ADMIN_TOKEN: this.adminToken, AUDITLAKE_INGEST_TOKEN: this.ingestToken },
      startTimeoutMs: 30_000,
    });
    if (node.child.pid !== undefined) trackPid(node.child.pid, `node${i}`);
    this.#ports[i] = node.port;
    this.#nodes[i] = node;
    return node;
  }

  /** `kill -9` node i; resolves once the process is gone. */
  async kill(i: number): Promise<void> {
    const node = this.#nodes[i];
    if (!node) return;
    this.#nodes[i] = undefined;
    await node.kill();
    if (node.child.pid !== undefined) untrackPid(node.child.pid);
  }

  running(i: number): boolean {
    const node = this.#nodes[i];
    return node !== undefined && node.child.exitCode === null && node.child.signalCode === null;
  }

  url(i: number): string {
    const node = this.#nodes[i];
    if (!node) throw new Error(`node${i} is not running`);
    return node.url;
  }

  /** The URL node i has or had (its port stays the same across restarts). */
  urlOf(i: number): string {
    const port = this.#ports[i];
    if (port === undefined) throw new Error(`node${i} never started`);
    return `http://127.0.0.1:${port}`;
  }

  /** Names and pids of the processes that make up the cluster, for per-process CPU. */
  pids(): Record<string, number> {
    const out: Record<string, number> = {};
    this.#nodes.forEach((n, i) => {
      if (n?.child.pid !== undefined) out[`node${i}`] = n.child.pid;
    });
    if (this.#redisPid !== undefined) out['redis'] = this.#redisPid;
    return out;
  }

  /** What node i printed (warn and above), for error messages. */
  output(i: number): string {
    return this.#nodes[i]?.output() ?? '';
  }

  /** Where each node's output ends now; `stepDowns(mark)` reads what came after. */
  outputMark(): number[] {
    return this.#nodes.map((n) => n?.output().length ?? 0);
  }

  /**
   * The "stepped down as leader" warnings the nodes logged since `mark` (each node's output is
   * JSON lines at warn level): a leader losing its lease under load shows up here.
   */
  stepDowns(mark: readonly number[]): StepDown[] {
    const out: StepDown[] = [];
    this.#nodes.forEach((n, i) => {
      for (const line of (n?.output() ?? '').slice(mark[i] ?? 0).split('\n')) {
        if (!line.includes('stepped down as leader')) continue;
        try {
          const entry = JSON.parse(line) as { time?: number; term?: number; reason?: string };
          out.push({ node: `node${i}`, term: entry.term ?? 0, reason: entry.reason ?? '', atMs: entry.time ?? 0 });
        } catch {
          out.push({ node: `node${i}`, term: 0, reason: line.slice(0, 200), atMs: 0 });
        }
      }
    });
    return out.sort((a, b) => a.atMs - b.atMs);
  }

  async #get(url: string, headers: Record<string, string>, timeoutMs: number): Promise<{ status: number; body: string }> {
    const res = await httpRequest(this.#agent, new URL(url), { method: 'GET', headers, timeoutMs });
    return { status: res.status, body: res.body.toString('utf8') };
  }

  /** Node i's own view, `GET /admin/cluster`: for itself, appliedSeq is its store's last seq. */
  async status(i: number, timeoutMs = STATUS_TIMEOUT_MS): Promise<ClusterStatus> {
    const res = await this.#get(`${this.url(i)}/admin/cluster`, { authorization: `Token ${this.adminToken}` }, timeoutMs);
    if (res.status !== 200) throw new Error(`node${i} /admin/cluster answered ${res.status}: ${res.body.slice(0, 300)}`);
    return JSON.parse(res.body) as ClusterStatus;
  }

  /** The last seq node i has applied (its own entry in its own /admin/cluster). */
  async appliedSeq(i: number, timeoutMs = STATUS_TIMEOUT_MS): Promise<number> {
    const status = await this.status(i, timeoutMs);
    const self = status.nodes.find((n) => n.nodeId === status.nodeId);
    if (!self) throw new Error(`node${i} does not list itself in /admin/cluster`);
    return self.appliedSeq;
  }

  /** `GET /health` role of node i ('leader' only once it may order writes), or undefined when down. */
  async role(i: number, timeoutMs = 1000): Promise<string | undefined> {
    try {
      const res = await this.#get(`${this.urlOf(i)}/health`, {}, timeoutMs);
      return res.status === 200 ? (JSON.parse(res.body) as { role: string }).role : undefined;
    } catch {
      return undefined;
    }
  }

  /** Index of the node whose /health says leader, or -1. */
  async leaderIndex(): Promise<number> {
    const roles = await Promise.all(this.#nodes.map((_, i) => (this.running(i) ? this.role(i) : Promise.resolve(undefined))));
    return roles.indexOf('leader');
  }

  /**
   * Waits until every running node agrees on the leader and has applied the same seq, at least
   * `atLeastSeq` (no replication or forwarding in progress). Resolves with the leader and that
   * seq. Equal seqs alone are not enough after a burst: a standby's outbox may still hold a
   * batch that has not reached the leader yet.
   */
  async waitForSteady(timeoutMs: number, atLeastSeq = 0): Promise<{ leader: number; seq: number; term: number }> {
    const deadline = Date.now() + timeoutMs;
    let last = 'nothing yet';
    for (;;) {
      try {
        const running = this.#nodes.map((_, i) => i).filter((i) => this.running(i));
        const leader = await this.leaderIndex();
        if (leader >= 0) {
          const statuses = await Promise.all(running.map((i) => this.status(i)));
          const leaderId = `node${leader}`;
          const seqs = statuses.map((s) => s.nodes.find((n) => n.nodeId === s.nodeId)?.appliedSeq ?? -1);
          const agreed = statuses.every((s) => (s.leader?.nodeId ?? '') === leaderId);
          const leaderStatus = statuses[running.indexOf(leader)];
          if (agreed && seqs.every((s) => s === seqs[0]) && (seqs[0] ?? 0) >= atLeastSeq && leaderStatus) return { leader, seq: seqs[0] ?? 0, term: leaderStatus.term };
          last = `leader node${leader}; nodes see leaders ${statuses.map((s) => s.leader?.nodeId ?? 'none').join(', ')}; applied seqs ${seqs.join(', ')}`;
        } else {
          last = 'no node reports role=leader';
        }
      } catch (err) {
        last = String(err);
      }
      if (Date.now() > deadline) throw new Error(`cluster not steady within ${timeoutMs} ms: ${last}`);
      await sleep(50);
    }
  }

  /** Polls until node i has applied at least `seq`; resolves with the absolute time it was seen. */
  async waitForApplied(i: number, seq: number, pollMs: number, timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const sentAt = absoluteNowMs();
      const applied = await this.appliedSeq(i);
      if (applied >= seq) return absoluteNowMs();
      if (Date.now() > deadline) throw new Error(`node${i} applied only up to seq ${applied} of ${seq} within ${timeoutMs} ms`);
      await sleep(pollMs - (absoluteNowMs() - sentAt));
    }
  }

  /**
   * Node i's HTTP server time per route so far, from its Prometheus histogram
   * `auditlake_http_request_duration_seconds` (200 answers only), plus its event counters.
   */
  async routeTimes(i: number): Promise<NodeCounters> {
    const res = await this.#get(`${this.url(i)}/metrics`, {}, STATUS_TIMEOUT_MS);
    const routes: Record<string, { count: number; seconds: number }> = {};
    const counters: Record<string, number> = {};
    for (const line of res.body.split('\n')) {
      const m = /^auditlake_http_request_duration_seconds_(sum|count)\{method="(\w+)",route="([^"]+)",status_code="200"\} (\S+)$/.exec(line);
      if (m) {
        const key = `${m[2]} ${m[3]}`;
        const entry = (routes[key] ??= { count: 0, seconds: 0 });
        if (m[1] === 'sum') entry.seconds = Number(m[4]);
        else entry.count = Number(m[4]);
        continue;
      }
      const c = /^auditlake_(events_\w+_total) (\S+)$/.exec(line);
      if (c) counters[c[1] as string] = Number(c[2]);
    }
    return { routes, counters };
  }

  async clusterToken(): Promise<string> {
    if (this.#clusterToken) return this.#clusterToken;
    const token = await redisGet(this.redis.port, CLUSTER_TOKEN_KEY);
    if (!token) throw new Error(`no cluster token in Redis under ${CLUSTER_TOKEN_KEY}`);
    this.#clusterToken = token;
    return token;
  }

  /**
   * Node i's log after `after` (whose entry has term `lastTerm`), read through the internal
   * pull endpoint in catch-up mode, which answers from the node's own store on any node.
   */
  async readLog(i: number, after: number, lastTerm: number, onEntries: (entries: LogEntry[]) => void): Promise<void> {
    const token = await this.clusterToken();
    const url = new URL('/internal/v1/pull', this.url(i));
    for (;;) {
      const body = Buffer.from(JSON.stringify({ nodeId: 'bench-reader', after, lastTerm, term: 0, limit: 10_000, waitMs: 0, metaHash: '', catchUp: true }));
      const res = await httpRequest(this.#agent, url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-auditlake-cluster-token': token },
        body,
        timeoutMs: 60_000,
      });
      if (res.status !== 200) throw new Error(`node${i} /internal/v1/pull answered ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
      // NDJSON: a header line, then each entry's stored JSON on a line of its own.
      const entries = res.body
        .toString('utf8')
        .split('\n')
        .slice(1)
        .map((line) => JSON.parse(line) as LogEntry);
      if (entries.length === 0) return;
      onEntries(entries);
      const last = entries[entries.length - 1] as LogEntry;
      after = last.seq;
      lastTerm = last.term;
    }
  }

  async close(): Promise<void> {
    this.#agent.destroy();
    for (let i = 0; i < this.#nodes.length; i++) await this.kill(i);
    await this.redis.stop();
    if (this.#redisPid !== undefined) untrackPid(this.#redisPid);
    await this.#dir[Symbol.asyncDispose]();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
