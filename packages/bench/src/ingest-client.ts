/**
 * The ingest load generator, run in a worker thread so the clients do not share the node's
 * event loop: it builds the request bodies first, then keeps `concurrency` POSTs in flight over
 * keep-alive connections until every batch is acknowledged.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { httpRequest, keepAliveAgent } from './http-client.js';
import { ingestBatches, type IngestEventsSpec } from './ingest-events.js';

export interface IngestClientData extends IngestEventsSpec {
  url: string;
  token: string;
  concurrency: number;
}

export type IngestClientMessage =
  | { type: 'measure-start' }
  | { type: 'done'; elapsedMs: number; events: number; requests: number; latenciesMs: number[] }
  | { type: 'failed'; error: string };

const REQUEST_TIMEOUT_MS = 60_000;

async function sendAll(data: IngestClientData, bodies: Array<{ body: Buffer; events: number }>, latenciesMs: number[]): Promise<void> {
  const agent = keepAliveAgent(data.concurrency);
  const url = new URL('/v1/api/audit', data.url);
  const headers = { authorization: `Token ${data.token}`, 'content-type': 'application/json' };
  let next = 0;
  const client = async () => {
    for (;;) {
      const item = bodies[next++];
      if (item === undefined) return;
      const started = performance.now();
      const res = await httpRequest(agent, url, { method: 'POST', headers, body: item.body, timeoutMs: REQUEST_TIMEOUT_MS });
      latenciesMs.push(performance.now() - started);
      if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${res.body.toString('utf8').slice(0, 500)}`);
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

async function run(data: IngestClientData): Promise<IngestClientMessage> {
  const { warmup, measured } = ingestBatches(data);
  const toBodies = (batches: typeof warmup) => batches.map((b) => ({ body: Buffer.from(JSON.stringify(b)), events: b.length }));
  const warmupBodies = toBodies(warmup);
  const measuredBodies = toBodies(measured);
  await sendAll(data, warmupBodies, []);
  parentPort?.postMessage({ type: 'measure-start' } satisfies IngestClientMessage);
  const latenciesMs: number[] = [];
  const started = performance.now();
  await sendAll(data, measuredBodies, latenciesMs);
  const elapsedMs = performance.now() - started;
  const events = measured.reduce((n, b) => n + b.length, 0);
  return { type: 'done', elapsedMs, events, requests: measuredBodies.length, latenciesMs };
}

run(workerData as IngestClientData).then(
  (message) => parentPort?.postMessage(message),
  (err: unknown) => parentPort?.postMessage({ type: 'failed', error: err instanceof Error ? (err.stack ?? err.message) : String(err) } satisfies IngestClientMessage),
);
