import { randomBytes } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createEventGenerator, mulberry32, startNodeProcess, type GeneratedEvent, type NodeProcess } from '@auditlake/testkit';
import type pg from 'pg';
import { processCpuSeconds, waitForQuietMachine, type QuietWait } from './cpu-monitor.js';
import { httpRequest, keepAliveAgent } from './http-client.js';
import { latencyStats, type LatencyStats } from './latency-stats.js';
import { startPostgres, type PostgresServer } from './postgres-server.js';
import { scratchDir, type ScratchDir } from './scratch-dir.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const REQUEST_TIMEOUT_MS = 10 * 60 * 1000;
/** Appears in no generated event, so a `q` search for it must rule out every event. */
export const Q_NO_MATCH = 'no-such-text-7f3a9c';
/** The share of events the "rare" `q` needle should match. */
const Q_RARE_SHARE = 0.001;

export interface VersusOptions {
  /** The PostgreSQL binaries directory. */
  postgresBin: string;
  seed: number;
  events: number;
  days: number;
  batchSize: number;
  concurrency: number;
  rounds: number;
  /** Requests per search figure and system (q searches use qRepetitions). */
  requests: number;
  /** Unmeasured requests of each kind per system before they are measured (the first `requests` of them are reported as the cold figures). */
  warmupRequests: number;
  qRepetitions: number;
  limit: number;
}

/** One system's figures, the issue's rows. */
export interface SystemFigures {
  ingestRoundsEventsPerSecond: number[];
  ingestBestEventsPerSecond: number;
  ingestMedianEventsPerSecond: number;
  /** Server CPU (every server process) per stored event, best round. */
  serverCpuUsPerEvent: number;
  dayWindow: LatencyStats;
  user7Days: LatencyStats;
  /** The first `requests` of the warm-up: a server that has just taken the load (absent in results stored before it was measured). */
  dayWindowCold?: LatencyStats;
  user7DaysCold?: LatencyStats;
  qNoMatch: LatencyStats;
  qRare: LatencyStats | undefined;
  diskBytes: number;
}

export interface VersusResult {
  events: number;
  days: number;
  postgresVersion: string;
  auditlake: SystemFigures;
  postgres: SystemFigures;
  /** PostgreSQL with a pg_trgm GIN index over the searched text. */
  postgresTrigram: { qNoMatch: LatencyStats; qRare: LatencyStats; diskBytes: number; indexBuildMs: number };
  qRareNeedle: string;
  qRareMatches: number;
  /** The wait for a quiet machine between the last ingest round and the searches (absent in results stored before it). */
  searchQuietWait?: QuietWait;
  /** The wait for a quiet machine before each ingest round, in the order run (absent in results stored before it). */
  ingestQuietWaits?: QuietWait[];
}

/** Busy cores of the whole machine below which both systems count as at rest. */
export const QUIET_BUSY_CORES = 0.1;
export const QUIET_WINDOW_MS = 2_000;
const QUIET_TIMEOUT_MS = 5 * 60_000;

/** The generated events of the run, in batches, the same for both systems in every round. */
function* batches(options: VersusOptions, endTs: number): Generator<GeneratedEvent[]> {
  const generator = createEventGenerator({ seed: options.seed, startTs: endTs - options.days * DAY_MS, spanMs: options.days * DAY_MS, count: options.events, eventIds: true });
  for (let sent = 0; sent < options.events; sent += options.batchSize) yield generator.batch(Math.min(options.batchSize, options.events - sent));
}

/** Sends every batch with `concurrency` in flight; resolves with the elapsed time. */
async function sendBatches(options: VersusOptions, endTs: number, send: (batch: GeneratedEvent[]) => Promise<void>): Promise<number> {
  const source = batches(options, endTs);
  const started = performance.now();
  const worker = async () => {
    for (let next = source.next(); !next.done; next = source.next()) await send(next.value);
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return performance.now() - started;
}

async function dirBytes(path: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(path, { withFileTypes: true })) {
    const full = join(path, entry.name);
    total += entry.isDirectory() ? await dirBytes(full) : (await stat(full)).size;
  }
  return total;
}

/** auditlake as deployed: a real `auditlake start` process with default settings, over HTTP. */
class AuditlakeSide {
  readonly token = randomBytes(18).toString('hex');
  readonly agent = keepAliveAgent(16);
  dir: ScratchDir | undefined;
  node: NodeProcess | undefined;

  async start(): Promise<void> {
    await this.stop();
    this.dir = await scratchDir('versus-auditlake');
    this.node = await startNodeProcess({ dataDir: this.dir.path, env: { AUDITLAKE_ADMIN_TOKEN: this.token, AUDITLAKE_INGEST_TOKEN: this.token } });
  }

  async ingest(batch: GeneratedEvent[]): Promise<void> {
    const res = await httpRequest(this.agent, new URL('/v1/api/audit', this.#node().url), {
      method: 'POST',
      headers: { authorization: `Token ${this.token}`, 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify(batch)),
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
    if (res.status !== 200) throw new Error(`auditlake ingest answered ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
  }

  async search(params: Record<string, string>): Promise<number> {
    const url = new URL('/admin/audit', this.#node().url);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    const res = await httpRequest(this.agent, url, { method: 'GET', headers: { authorization: `Token ${this.token}` }, timeoutMs: REQUEST_TIMEOUT_MS });
    if (res.status !== 200) throw new Error(`auditlake search answered ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
    return (JSON.parse(res.body.toString('utf8')) as { count: number }).count;
  }

  cpuSeconds(): number {
    return processCpuSeconds(this.#node().child.pid as number) ?? Number.NaN;
  }

  diskBytes(): Promise<number> {
    return dirBytes((this.dir as ScratchDir).path);
  }

  #node(): NodeProcess {
    if (!this.node) throw new Error('auditlake is not started');
    return this.node;
  }

  async stop(): Promise<void> {
    await this.node?.stop();
    this.node = undefined;
    await this.dir?.[Symbol.asyncDispose]();
    this.dir = undefined;
  }
}

/** The text `q` searches in PostgreSQL: the same fields as auditlake's, one per line, lower-cased. */
const PG_TEXT = "lower(user_id || E'\\n' || action || E'\\n' || resource || E'\\n' || tables_text || E'\\n' || query || E'\\n' || details)";

/**
 * PostgreSQL as a user would set it up for this: one table, a primary key on event_id, indexes
 * on ts and (user_id, ts); a batch is one INSERT … ON CONFLICT DO NOTHING.
 */
class PostgresSide {
  readonly server: PostgresServer;
  readonly pool: pg.Pool;

  constructor(server: PostgresServer, connections: number) {
    this.server = server;
    this.pool = server.pool(connections);
  }

  async reset(): Promise<void> {
    await this.pool.query('DROP TABLE IF EXISTS audit_events');
    await this.pool.query(`CREATE TABLE audit_events (
      event_id text PRIMARY KEY,
      ts bigint NOT NULL,
      ingest_ts bigint NOT NULL DEFAULT (extract(epoch from clock_timestamp()) * 1000)::bigint,
      user_id text NOT NULL,
      source text NOT NULL,
      action text NOT NULL,
      resource text NOT NULL,
      decision text NOT NULL,
      tables text[] NOT NULL,
      tables_text text NOT NULL,
      query text NOT NULL,
      details text NOT NULL)`);
    await this.pool.query('CREATE INDEX audit_events_ts ON audit_events (ts)');
    await this.pool.query('CREATE INDEX audit_events_user_ts ON audit_events (user_id, ts)');
  }

  async ingest(batch: GeneratedEvent[]): Promise<void> {
    const values: unknown[] = [];
    const rows: string[] = [];
    for (const e of batch) {
      const n = values.length;
      rows.push(`($${n + 1},$${n + 2},$${n + 3},$${n + 4},$${n + 5},$${n + 6},$${n + 7},$${n + 8},$${n + 9},$${n + 10},$${n + 11})`);
      values.push(e.eventId, e.ts, e.userId, e.source, e.action, e.resource, e.decision, e.tables, e.tables.join('\n'), e.query, e.details);
    }
    await this.pool.query(
      `INSERT INTO audit_events (event_id, ts, user_id, source, action, resource, decision, tables, tables_text, query, details) VALUES ${rows.join(',')} ON CONFLICT DO NOTHING`,
      values,
    );
  }

  async search(where: string, params: unknown[], limit: number): Promise<number> {
    const result = await this.pool.query(`SELECT * FROM audit_events WHERE ${where} ORDER BY ts DESC LIMIT ${limit}`, params);
    return result.rowCount ?? 0;
  }

  async diskBytes(): Promise<number> {
    const result = await this.pool.query<{ bytes: string }>("SELECT pg_total_relation_size('audit_events') AS bytes");
    return Number(result.rows[0]?.bytes);
  }

  async createTrigramIndex(): Promise<number> {
    const started = performance.now();
    await this.pool.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
    await this.pool.query(`CREATE INDEX audit_events_text_trgm ON audit_events USING gin ((${PG_TEXT}) gin_trgm_ops)`);
    await this.pool.query('ANALYZE audit_events');
    return performance.now() - started;
  }
}

function likePattern(needle: string): string {
  return `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
}

/**
 * auditlake against PostgreSQL on the same generated events: `rounds` alternating ingest rounds
 * (each into a fresh store and a fresh table), then the searches alternating request by request
 * on the last round's data, and the disk each uses.
 */
export async function runVersusPostgresBench(options: VersusOptions, log: (message: string) => void): Promise<VersusResult> {
  const endTs = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const startTs = endTs - options.days * DAY_MS;
  const server = await startPostgres(options.postgresBin);
  const ours = new AuditlakeSide();
  const theirs = new PostgresSide(server, options.concurrency);
  try {
    log(`  ${server.version} on 127.0.0.1:${server.port} (fsync=on, synchronous_commit=on)`);
    const rates = { auditlake: [] as number[], postgres: [] as number[] };
    const cpu = { auditlake: [] as number[], postgres: [] as number[] };
    // Each round starts on a machine at rest: a round run right after the other system's took
    // the CPU that system's background work after a load still used (PostgreSQL's checkpoint
    // and autovacuum of a million rows, LevelDB's compactions) — our rounds measured 32.6K,
    // 11.9K and 14.4K events/s in one run, theirs 77K, 86K and 54K.
    const ingestQuietWaits: QuietWait[] = [];
    const atRest = async (who: string) => {
      const wait = await waitForQuietMachine({ busyCoresMax: QUIET_BUSY_CORES, windowMs: QUIET_WINDOW_MS, timeoutMs: QUIET_TIMEOUT_MS });
      ingestQuietWaits.push(wait);
      log(`  ${who}: ${wait.quiet ? 'machine quiet' : 'machine still busy'} after ${(wait.waitedMs / 1000).toFixed(1)} s`);
    };
    const ingestAuditlake = async () => {
      await ours.start();
      await atRest('auditlake');
      const cpuStart = ours.cpuSeconds();
      const ms = await sendBatches(options, endTs, (b) => ours.ingest(b));
      cpu.auditlake.push(((ours.cpuSeconds() - cpuStart) * 1e6) / options.events);
      rates.auditlake.push(options.events / (ms / 1000));
      log(`  auditlake ${Math.round(options.events / (ms / 1000))} ev/s`);
    };
    const ingestPostgres = async () => {
      await theirs.reset();
      await atRest('PostgreSQL');
      const cpuStart = server.cpuSeconds();
      const ms = await sendBatches(options, endTs, (b) => theirs.ingest(b));
      cpu.postgres.push(((server.cpuSeconds() - cpuStart) * 1e6) / options.events);
      rates.postgres.push(options.events / (ms / 1000));
      log(`  PostgreSQL ${Math.round(options.events / (ms / 1000))} ev/s`);
    };
    for (let round = 1; round <= options.rounds; round++) {
      log(`versus round ${round}/${options.rounds}: ingest ${options.events} events, ${options.batchSize} a batch, ${options.concurrency} in flight`);
      // Alternating who goes first, so neither always meets the machine warmer or busier.
      if (round % 2 === 1) {
        await ingestAuditlake();
        await ingestPostgres();
      } else {
        await ingestPostgres();
        await ingestAuditlake();
      }
    }
    await theirs.pool.query('ANALYZE audit_events');
    // Both systems searched at rest, not while either still works off the last load: LevelDB
    // compacting, PostgreSQL's autovacuum or checkpoint. Whatever ran then took the CPU from
    // the system measured beside it.
    const searchQuietWait = await waitForQuietMachine({ busyCoresMax: QUIET_BUSY_CORES, windowMs: QUIET_WINDOW_MS, timeoutMs: QUIET_TIMEOUT_MS });
    log(`versus: ${searchQuietWait.quiet ? 'machine quiet' : 'machine still busy'} after ${(searchQuietWait.waitedMs / 1000).toFixed(1)} s (${searchQuietWait.busyCores?.toFixed(2) ?? '?'} cores busy)`);

    const random = mulberry32(options.seed);
    const generator = createEventGenerator({ seed: options.seed });
    const users = generator.users;
    const limit = String(options.limit);
    /**
     * Runs `count` pairs of requests, the two systems taking turns at going first, each pair
     * asking the same question (`prepare` picks it); returns each one's latencies.
     */
    const alternate = async (count: number, prepare: () => void, a: () => Promise<unknown>, b: () => Promise<unknown>) => {
      const aMs: number[] = [];
      const bMs: number[] = [];
      for (let i = 0; i < count; i++) {
        prepare();
        for (const [run, into] of i % 2 === 0 ? ([[a, aMs], [b, bMs]] as const) : ([[b, bMs], [a, aMs]] as const)) {
          const started = performance.now();
          await run();
          into.push(performance.now() - started);
        }
      }
      return [latencyStats(aMs), latencyStats(bMs)] as const;
    };
    const same = () => undefined;

    log(`versus: one-day windows, limit ${limit}, ${options.requests} each`);
    let window = { from: startTs, to: startTs + DAY_MS - 1 };
    const nextDay = () => {
      const from = startTs + Math.floor(random() * options.days) * DAY_MS;
      window = { from, to: from + DAY_MS - 1 };
    };
    const oursDay = () => ours.search({ from: String(window.from), to: String(window.to), limit });
    const theirsDay = () => theirs.search('ts BETWEEN $1 AND $2', [window.from, window.to], options.limit);
    // Warm-up, not measured as the figure: the same number of requests of each kind for both
    // systems (JIT, caches, connections, the allocator's heaps), so what is compared is a running
    // server's answer. Measured on a node reopened over a loaded store, our one-day p50 fell
    // from 2.1 ms over its first 400 requests to 1.0 ms after 2,400 (V8 optimising the search
    // path, the libuv threads' malloc heaps settling: page faults per request fell from 45 to
    // 10); 200 measured a node still warming. The first `requests` of it are reported as the
    // cold figures beside the warm ones.
    const warm = async (next: () => void, a: () => Promise<unknown>, b: () => Promise<unknown>) => {
      const cold = await alternate(Math.min(options.requests, options.warmupRequests), next, a, b);
      await alternate(Math.max(0, options.warmupRequests - options.requests), next, a, b);
      return cold;
    };
    const dayWindowCold = await warm(nextDay, oursDay, theirsDay);
    const dayWindow = await alternate(options.requests, nextDay, oursDay, theirsDay);

    log(`versus: user=X within 7 days, ${options.requests} each`);
    const weekFrom = endTs - 7 * DAY_MS;
    let user = '';
    const nextUser = () => {
      user = users[Math.floor(random() * users.length)] as string;
    };
    const oursUser = () => ours.search({ user, from: String(weekFrom), to: String(endTs - 1), limit });
    const theirsUser = () => theirs.search('user_id = $1 AND ts BETWEEN $2 AND $3', [user, weekFrom, endTs - 1], options.limit);
    const user7DaysCold = await warm(nextUser, oursUser, theirsUser);
    const user7Days = await alternate(options.requests, nextUser, oursUser, theirsUser);

    log(`versus: q matching nothing, ${options.qRepetitions} each (PostgreSQL without a trigram index)`);
    const noMatch = likePattern(Q_NO_MATCH);
    const qNoMatch = await alternate(options.qRepetitions, same, () => ours.search({ q: Q_NO_MATCH, limit }), () => theirs.search(`${PG_TEXT} LIKE $1`, [noMatch], options.limit));
    const postgresDiskBytes = await theirs.diskBytes();

    log('versus: building the pg_trgm GIN index');
    const indexBuildMs = await theirs.createTrigramIndex();
    const trigramDiskBytes = await theirs.diskBytes();
    const trigramNoMatch = await alternate(options.qRepetitions, same, () => theirs.search(`${PG_TEXT} LIKE $1`, [noMatch], options.limit), () => Promise.resolve());

    // The rare needle: the table name whose matches come closest to the wanted share, counted
    // with the trigram index (both systems then search for the same text).
    const wanted = options.events * Q_RARE_SHARE;
    let best = { needle: '', matches: -1 };
    for (let rank = 0; rank < generator.tables.length; rank += Math.max(1, Math.floor(generator.tables.length / 40))) {
      const needle = (generator.tables[rank] as string).toLowerCase();
      const result = await theirs.pool.query<{ n: string }>(`SELECT count(*) AS n FROM audit_events WHERE ${PG_TEXT} LIKE $1`, [likePattern(needle)]);
      const matches = Number(result.rows[0]?.n);
      if (best.matches < 0 || Math.abs(matches - wanted) < Math.abs(best.matches - wanted)) best = { needle, matches };
    }
    log(`versus: q matching ${best.matches} events ("${best.needle}"), ${options.qRepetitions} each`);
    const rare = likePattern(best.needle);
    const qRare = await alternate(options.qRepetitions, same, () => ours.search({ q: best.needle, limit }), () => theirs.search(`${PG_TEXT} LIKE $1`, [rare], options.limit));

    const figures = (side: 'auditlake' | 'postgres', i: 0 | 1, diskBytes: number, qRareStats: LatencyStats | undefined): SystemFigures => {
      const roundRates = rates[side];
      const bestRound = roundRates.indexOf(Math.max(...roundRates));
      return {
        ingestRoundsEventsPerSecond: roundRates,
        ingestBestEventsPerSecond: Math.max(...roundRates),
        ingestMedianEventsPerSecond: median(roundRates),
        serverCpuUsPerEvent: cpu[side][bestRound] as number,
        dayWindow: dayWindow[i],
        user7Days: user7Days[i],
        dayWindowCold: dayWindowCold[i],
        user7DaysCold: user7DaysCold[i],
        qNoMatch: qNoMatch[i],
        qRare: qRareStats,
        diskBytes,
      };
    };
    return {
      events: options.events,
      days: options.days,
      postgresVersion: server.version,
      auditlake: figures('auditlake', 0, await ours.diskBytes(), qRare[0]),
      postgres: figures('postgres', 1, postgresDiskBytes, undefined),
      postgresTrigram: { qNoMatch: trigramNoMatch[0], qRare: qRare[1], diskBytes: trigramDiskBytes, indexBuildMs },
      qRareNeedle: best.needle,
      qRareMatches: best.matches,
      searchQuietWait,
      ingestQuietWaits,
    };
  } finally {
    ours.agent.destroy();
    await ours.stop();
    await server.close();
  }
}
