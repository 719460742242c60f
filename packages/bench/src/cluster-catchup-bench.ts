import { Worker } from 'node:worker_threads';
import type { BenchCluster } from './bench-cluster.js';
import { absoluteNowMs } from './clock.js';
import type { IngestClientData, IngestClientMessage } from './ingest-client.js';

export interface ClusterCatchUpResult {
  /** Events the stopped standby missed (sent to the two live nodes while it was down). */
  events: number;
  standby: string;
  leader: string;
  /** Restart began → the standby's process answering /health. */
  restartMs: number;
  /** Restart began → the standby's applied seq reached the live nodes' last seq. */
  caughtUpMs: number;
  /** Events per second from the moment the restarted process was up. */
  eventsPerSecond: number;
  pollMs: number;
}

/**
 * A standby far behind catches up from the log: it is killed, the two live nodes take
 * `events` events (round robin, as in the throughput run), and it is started again on the
 * same data dir. The clock runs from the restart until its applied seq reaches the leader's.
 * Nothing else is ingested meanwhile, so this is the catch-up rate alone.
 */
export async function runClusterCatchUpBench(cluster: BenchCluster, options: { seed: number; startTs: number; spanMs: number; events: number; batchSize: number; concurrency: number; pollMs: number }): Promise<ClusterCatchUpResult> {
  const steady = await cluster.waitForSteady(30_000);
  const nodes = Array.from({ length: cluster.size }, (_, i) => i);
  const standby = nodes.find((i) => i !== steady.leader) as number;
  await cluster.kill(standby);
  const live = nodes.filter((i) => i !== standby);
  const data: IngestClientData = {
    seed: options.seed,
    startTs: options.startTs,
    spanMs: options.spanMs,
    warmupEvents: 0,
    events: options.events,
    batchSize: options.batchSize,
    urls: live.map((i) => cluster.url(i)),
    token: cluster.ingestToken,
    concurrency: options.concurrency,
    gateAfterWarmup: false,
  };
  const worker = new Worker(new URL('./ingest-client.js', import.meta.url), { workerData: data });
  try {
    await new Promise<void>((resolve, reject) => {
      worker.on('message', (message: IngestClientMessage) => {
        if (message.type === 'done') resolve();
        else if (message.type === 'failed') reject(new Error(`catch-up ingest client failed: ${message.error}`));
      });
      worker.on('error', reject);
      worker.on('exit', (code) => reject(new Error(`catch-up ingest client exited with ${code} before it finished`)));
    });
  } finally {
    await worker.terminate();
  }
  const target = steady.seq + options.events;
  for (const i of live) await cluster.waitForApplied(i, target, options.pollMs, 300_000);
  const restartAt = absoluteNowMs();
  await cluster.start(standby);
  const upAt = absoluteNowMs();
  const caughtUpAt = await cluster.waitForApplied(standby, target, options.pollMs, 300_000);
  return {
    events: options.events,
    standby: `node${standby}`,
    leader: `node${steady.leader}`,
    restartMs: upAt - restartAt,
    caughtUpMs: caughtUpAt - restartAt,
    eventsPerSecond: options.events / ((caughtUpAt - upAt) / 1000),
    pollMs: options.pollMs,
  };
}
