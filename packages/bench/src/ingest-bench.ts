import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { startCpuMonitor, type CpuShare } from './cpu-monitor.js';
import type { IngestClientData, IngestClientMessage } from './ingest-client.js';
import type { IngestEventsSpec } from './ingest-events.js';
import { latencyStats, type LatencyStats } from './latency-stats.js';
import { scratchDir } from './scratch-dir.js';
import { startBenchNode } from './bench-node.js';

export interface IngestResult {
  events: number;
  requests: number;
  elapsedMs: number;
  eventsPerSecond: number;
  requestLatency: LatencyStats;
  /** Share of the measured time the node's event loop was busy (0..1): near 1 means JS-bound. */
  eventLoopUtilization: number;
  /** CPU over the measured time: this process (client worker included) and the rest of the machine. */
  cpu: CpuShare;
  /**
   * CPU the node used per stored event, µs: this process (every thread: the event loop, LevelDB's,
   * V8's) less the client worker's own thread. It moves much less with other work on the machine
   * than events/s does (a shared core still inflates it somewhat), so an A/B in one run stays
   * readable on a busy machine. Undefined off Linux.
   */
  nodeCpuUsPerEvent: number | undefined;
  storedEvents: number;
}

/**
 * Posts the batches to one in-process node from a client worker thread and measures events/s
 * from the first measured request to the last acknowledgement.
 */
export async function runIngestBench(spec: IngestEventsSpec, concurrency: number, props: Record<string, string> = {}): Promise<IngestResult> {
  await using dir = await scratchDir('ingest');
  const { node, adminToken } = await startBenchNode(dir.path, props);
  let worker: Worker | undefined;
  try {
    const data: IngestClientData = { ...spec, urls: [node.url], token: adminToken, concurrency, gateAfterWarmup: false };
    worker = new Worker(new URL('./ingest-client.js', import.meta.url), { workerData: data });
    const client = worker;
    let eluStart = performance.eventLoopUtilization();
    let stopCpu = startCpuMonitor();
    let processCpuStart = process.cpuUsage();
    const done = await new Promise<Extract<IngestClientMessage, { type: 'done' }>>((resolve, reject) => {
      client.on('message', (message: IngestClientMessage) => {
        if (message.type === 'measure-start') {
          eluStart = performance.eventLoopUtilization();
          stopCpu = startCpuMonitor();
          processCpuStart = process.cpuUsage();
        } else if (message.type === 'done') resolve(message);
        else if (message.type === 'failed') reject(new Error(`ingest client failed: ${message.error}`));
      });
      client.on('error', reject);
      client.on('exit', (code) => reject(new Error(`ingest client exited with ${code} before it finished`)));
    });
    const elu = performance.eventLoopUtilization(eluStart);
    const cpu = stopCpu();
    const processCpu = process.cpuUsage(processCpuStart);
    const nodeCpuMs = done.clientCpuMs === undefined ? undefined : (processCpu.user + processCpu.system) / 1000 - done.clientCpuMs;
    return {
      events: done.events,
      requests: done.requests,
      elapsedMs: done.elapsedMs,
      eventsPerSecond: done.events / (done.elapsedMs / 1000),
      requestLatency: latencyStats(done.latenciesMs),
      eventLoopUtilization: elu.utilization,
      cpu,
      nodeCpuUsPerEvent: nodeCpuMs === undefined ? undefined : (nodeCpuMs * 1000) / done.events,
      storedEvents: node.store.position.lastSeq,
    };
  } finally {
    // Stops a client that failed half-way too, so a failed run cannot hang the process.
    await worker?.terminate();
    await node.close();
  }
}
