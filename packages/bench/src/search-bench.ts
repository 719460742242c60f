import { createEventGenerator, mulberry32 } from '@auditlake/testkit';
import { startCpuMonitor, type CpuShare } from './cpu-monitor.js';
import { httpRequest, keepAliveAgent } from './http-client.js';
import { latencyStats, type LatencyStats } from './latency-stats.js';
import { scratchDir } from './scratch-dir.js';
import { loadGenerated } from './store-loader.js';
import { startBenchNode } from './bench-node.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const REQUEST_TIMEOUT_MS = 10 * 60 * 1000;
/** Appears in no generated event, so a `q` search for it reads every stored event. */
export const Q_NEEDLE = 'no-such-text-7f3a9c';

export interface SearchBenchOptions {
  seed: number;
  events: number;
  days: number;
  loadBatchSize: number;
  requests: number;
  limit: number;
  qScanRepetitions: number;
}

export interface SearchResult {
  events: number;
  days: number;
  loadMs: number;
  loadEventsPerSecond: number;
  storeSizeBytes: number;
  /** `from`/`to` one UTC day, `limit`: latency per request, body fully received. */
  dayWindow: LatencyStats;
  dayWindowCpu: CpuShare;
  /** Events a one-day window holds on average (so each request is a full page). */
  eventsPerDay: number;
  qScan: LatencyStats;
  qScanCpu: CpuShare;
  qScanMatched: number;
}

interface SearchAnswer {
  count: number;
  truncated: boolean;
}

/**
 * Loads `events` generated events over `days` days (ending at today's UTC midnight, inside the
 * default 90-day retention) straight through `store.append` in big batches, as validated at
 * ingest, then measures searches over HTTP against the node.
 */
export async function runSearchBench(options: SearchBenchOptions): Promise<SearchResult> {
  await using dir = await scratchDir('search');
  const { node, adminToken } = await startBenchNode(dir.path);
  const agent = keepAliveAgent(1);
  try {
    const endTs = Math.floor(Date.now() / DAY_MS) * DAY_MS;
    const startTs = endTs - options.days * DAY_MS;
    const generator = createEventGenerator({ seed: options.seed, startTs, spanMs: options.days * DAY_MS, count: options.events });

    const loadStarted = performance.now();
    await loadGenerated(node.store, generator, options.events, options.loadBatchSize);
    const loadMs = performance.now() - loadStarted;

    const headers = { authorization: `Token ${adminToken}` };
    const search = async (params: Record<string, string>): Promise<{ ms: number; answer: SearchAnswer }> => {
      const url = new URL('/admin/audit', node.url);
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
      const started = performance.now();
      const res = await httpRequest(agent, url, { method: 'GET', headers, timeoutMs: REQUEST_TIMEOUT_MS });
      const ms = performance.now() - started;
      if (res.status !== 200) throw new Error(`search answered ${res.status}: ${res.body.toString('utf8').slice(0, 500)}`);
      return { ms, answer: JSON.parse(res.body.toString('utf8')) as SearchAnswer };
    };

    const random = mulberry32(options.seed);
    const dayWindow = (day: number) => {
      const from = startTs + day * DAY_MS;
      return { from: String(from), to: String(from + DAY_MS - 1), limit: String(options.limit) };
    };
    // Warm-up: JIT, LevelDB block cache, keep-alive socket.
    for (let i = 0; i < Math.min(10, options.requests); i++) await search(dayWindow(Math.floor(random() * options.days)));
    const eventsPerDay = options.events / options.days;
    const dayMs: number[] = [];
    const stopDayCpu = startCpuMonitor();
    for (let i = 0; i < options.requests; i++) {
      const { ms, answer } = await search(dayWindow(Math.floor(random() * options.days)));
      const expected = Math.min(options.limit, Math.floor(eventsPerDay * 0.9));
      if (answer.count < expected) throw new Error(`a one-day window returned ${answer.count} events, expected at least ${expected}`);
      dayMs.push(ms);
    }

    const dayWindowCpu = stopDayCpu();

    const qMs: number[] = [];
    const stopQCpu = startCpuMonitor();
    let qScanMatched = 0;
    for (let i = 0; i < options.qScanRepetitions; i++) {
      const { ms, answer } = await search({ q: Q_NEEDLE, limit: String(options.limit) });
      qScanMatched = answer.count;
      qMs.push(ms);
    }
    const qScanCpu = stopQCpu();

    return {
      events: options.events,
      days: options.days,
      loadMs,
      loadEventsPerSecond: options.events / (loadMs / 1000),
      storeSizeBytes: await node.store.sizeOnDiskBytes(),
      dayWindow: latencyStats(dayMs),
      dayWindowCpu,
      eventsPerDay,
      qScan: latencyStats(qMs),
      qScanCpu,
      qScanMatched,
    };
  } finally {
    agent.destroy();
    await node.close();
  }
}
