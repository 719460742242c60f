/**
 * The ingest load generator, run in a worker thread so the clients do not share the node's
 * event loop (or, for the cluster, the bench's own polling): it builds the request bodies
 * first, then keeps `concurrency` POSTs in flight over keep-alive connections until every
 * batch is acknowledged. Batch i goes to `urls[i % urls.length]` (round robin over nodes).
 */
import { readFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { absoluteNowMs } from './clock.js';
import { httpRequest, keepAliveAgent } from './http-client.js';
import { ingestBatches, type IngestEventsSpec } from './ingest-events.js';

export interface IngestClientData extends IngestEventsSpec {
  urls: string[];
  token: string;
  concurrency: number;
  /**
   * After the warm-up, post `warmed-up` and wait for `go` before measuring (the cluster bench
   * lets every node apply the warm-up first, so the measured run starts from a settled cluster).
   */
  gateAfterWarmup: boolean;
}

/** Absolute times are `performance.timeOrigin + performance.now()`: comparable across threads. */
export type IngestClientMessage =
  | { type: 'warmed-up' }
  | { type: 'measure-start'; atMs: number }
  | {
      type: 'done';
      elapsedMs: number;
      events: number;
      requests: number;
      latenciesMs: number[];
      startedAtMs: number;
      lastAckAtMs: number;
      /** CPU this client thread used while measuring (undefined off Linux): the node's share of the process is the rest. */
      clientCpuMs: number | undefined;
    }
  | { type: 'failed'; error: string };

export type IngestClientCommand = { type: 'go' };

const REQUEST_TIMEOUT_MS = 60_000;

/** Clock ticks per second of /proc times (USER_HZ; 100 on every common Linux). */
const USER_HZ = 100;

/** CPU (user + system, ms) this thread used so far, from /proc/thread-self; undefined off Linux. */
function threadCpuMs(): number | undefined {
  try {
    const stat = readFileSync('/proc/thread-self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? (ticks * 1000) / USER_HZ : undefined;
  } catch {
    return undefined;
  }
}

async function sendAll(data: IngestClientData, bodies: Array<{ body: Buffer; events: number }>, latenciesMs: number[]): Promise<void> {
  const agent = keepAliveAgent(data.concurrency);
  const urls = data.urls.map((u) => new URL('/v1/api/audit', u));
  const headers = { authorization: `Token ${data.token}`, 'content-type': 'application/json' };
  let next = 0;
  const client = async () => {
    for (;;) {
      const index = next++;
      const item = bodies[index];
      if (item === undefined) return;
      const url = urls[index % urls.length] as URL;
      const started = performance.now();
      const res = await httpRequest(agent, url, { method: 'POST', headers, body: item.body, timeoutMs: REQUEST_TIMEOUT_MS });
      latenciesMs.push(performance.now() - started);
      if (res.status !== 200) throw new Error(`ingest at ${url.host} answered ${res.status}: ${res.body.toString('utf8').slice(0, 500)}`);
      const answer = JSON.parse(res.body.toString('utf8')) as { ingested?: number };
      // Every event must be taken: a benchmark that silently sampled or refused would lie.
      if (answer.ingested !== item.events) throw new Error(`ingest took ${answer.ingested} of ${item.events} events`);
    }
  };
  try {
    await Promise.all(Array.from({ length: data.concurrency }, client));
  } finally {
    agent.destroy();
  }
}

function waitForGo(): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (message: IngestClientCommand) => {
      if (message.type !== 'go') return;
      parentPort?.off('message', onMessage);
      resolve();
    };
    parentPort?.on('message', onMessage);
  });
}

async function run(data: IngestClientData): Promise<IngestClientMessage> {
  const { warmup, measured } = ingestBatches(data);
  const toBodies = (batches: typeof warmup) => batches.map((b) => ({ body: Buffer.from(JSON.stringify(b)), events: b.length }));
  const warmupBodies = toBodies(warmup);
  const measuredBodies = toBodies(measured);
  await sendAll(data, warmupBodies, []);
  if (data.gateAfterWarmup) {
    const go = waitForGo();
    parentPort?.postMessage({ type: 'warmed-up' } satisfies IngestClientMessage);
    await go;
  }
  const startedAtMs = absoluteNowMs();
  parentPort?.postMessage({ type: 'measure-start', atMs: startedAtMs } satisfies IngestClientMessage);
  const latenciesMs: number[] = [];
  const cpuStartMs = threadCpuMs();
  const started = performance.now();
  await sendAll(data, measuredBodies, latenciesMs);
  const elapsedMs = performance.now() - started;
  const lastAckAtMs = absoluteNowMs();
  const cpuEndMs = threadCpuMs();
  const events = measured.reduce((n, b) => n + b.length, 0);
  const clientCpuMs = cpuStartMs === undefined || cpuEndMs === undefined ? undefined : cpuEndMs - cpuStartMs;
  return { type: 'done', elapsedMs, events, requests: measuredBodies.length, latenciesMs, startedAtMs, lastAckAtMs, clientCpuMs };
}

run(workerData as IngestClientData).then(
  (message) => parentPort?.postMessage(message),
  (err: unknown) => parentPort?.postMessage({ type: 'failed', error: err instanceof Error ? (err.stack ?? err.message) : String(err) } satisfies IngestClientMessage),
);
