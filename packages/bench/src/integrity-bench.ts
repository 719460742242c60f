import { verifyHistory, parseVerifyOptions } from '@auditlake/cli';
import { ChainVerifier, type VerifyRecord } from '@auditlake/integrity';
import { resolveConfig } from '@auditlake/model';
import { startAuditNode, type EmbeddedS3 } from '@auditlake/server';
import { createEventGenerator } from '@auditlake/testkit';
import { startCpuMonitor, type CpuShare } from './cpu-monitor.js';
import { runIngestBench, type IngestResult } from './ingest-bench.js';
import type { IngestEventsSpec } from './ingest-events.js';
import { scratchDir } from './scratch-dir.js';
import { loadGenerated } from './store-loader.js';

export interface IntegrityBenchOptions {
  seed: number;
  ingest: IngestEventsSpec;
  ingestConcurrency: number;
  /** Rounds of (chain off, chain on); the best of each is reported, every round listed. */
  rounds: number;
  /** Events tiered to the bucket, then verified offline. */
  verifyEvents: number;
  loadBatchSize: number;
}

export interface IntegrityFigures {
  chainOff: IngestResult;
  chainOn: IngestResult;
  chainOffRounds: IngestResult[];
  chainOnRounds: IngestResult[];
  verify: {
    records: number;
    checkpoints: number;
    /** `auditlake verify --path` from the bucket: list, fetch, decode, hash, check. */
    offlineMs: number;
    offlineRecordsPerSecond: number;
    offlineCpu: CpuShare;
    /** Worker threads the offline run used (`--threads`, default one per core). */
    threads?: number;
    /** The same offline run with `--threads 0` (decoding and hashing on the main thread), right after. */
    oneThread?: { ms: number; recordsPerSecond: number; cpu: CpuShare };
    /** The verifier alone over the same records in memory: what hashing and checking cost. */
    inMemoryMs: number;
    inMemoryRecordsPerSecond: number;
    message: string;
  };
}

type Log = (message: string) => void;

/** The fastest round: on a shared machine, the one least disturbed by other work. */
function best(rounds: IngestResult[]): IngestResult {
  return rounds.reduce((a, b) => (b.eventsPerSecond > a.eventsPerSecond ? b : a));
}

const BUCKET = 'auditlake';
const TIER_PATH = `s3://${BUCKET}/bench-tier`;

/**
 * The record chain's cost and the verifier's speed. Ingest: the HTTP ingest benchmark with the
 * chain off and on, alternating in each round so both see the machine alike. Verify: a node
 * tiers `verifyEvents` chained events (with checkpoints) to its embedded S3 endpoint as Parquet, then
 * `auditlake verify --path` reads them back from the bucket alone and is timed.
 */
export async function runIntegrityBench(options: IntegrityBenchOptions, log: Log): Promise<IntegrityFigures> {
  const chainOffRounds: IngestResult[] = [];
  const chainOnRounds: IngestResult[] = [];
  for (let round = 1; round <= options.rounds; round++) {
    log(`integrity round ${round}/${options.rounds}: HTTP ingest, chain off, ${options.ingest.events} events…`);
    const off = await runIngestBench(options.ingest, options.ingestConcurrency, { 'auditlake.audit.integrity.chain.enabled': 'false' });
    log(`  ${Math.round(off.eventsPerSecond)} events/s`);
    chainOffRounds.push(off);
    log(`integrity round ${round}/${options.rounds}: HTTP ingest, chain on, ${options.ingest.events} events…`);
    const on = await runIngestBench(options.ingest, options.ingestConcurrency, {});
    log(`  ${Math.round(on.eventsPerSecond)} events/s`);
    chainOnRounds.push(on);
  }
  const verify = await runVerify(options, log);
  return { chainOff: best(chainOffRounds), chainOn: best(chainOnRounds), chainOffRounds, chainOnRounds, verify };
}

async function runVerify(options: IntegrityBenchOptions, log: Log): Promise<IntegrityFigures['verify']> {
  await using dir = await scratchDir('integrity');
  const node = await startAuditNode({
    dataDir: dir.path,
    host: '127.0.0.1',
    port: 0,
    embeddedS3Port: 0,
    adminToken: 'bench',
    logger: false,
    config: resolveConfig(
      new Map(
        Object.entries({
          'auditlake.audit.tier.mode': 'parquet',
          'auditlake.audit.tier.parquet.path': TIER_PATH,
          'auditlake.audit.tier.connectionId': 'local',
          'auditlake.audit.tier.interval.ms': '200',
          'auditlake.audit.tier.ingest.settle.ms': '0',
          'auditlake.audit.tier.batch.size': '50000',
          // The events span the last 7 days: with the default of 7 the oldest would be pruned
          // locally while the run goes on, and the in-memory pass below reads the local log.
          'auditlake.audit.tier.retain.local.days': '30',
        }),
      ),
    ),
  });
  try {
    log(`integrity: loading ${options.verifyEvents} events and tiering them to the embedded S3 endpoint…`);
    const generator = createEventGenerator({ seed: options.seed, startTs: Date.now() - 7 * 86_400_000, spanMs: 7 * 86_400_000, count: options.verifyEvents });
    for (let loaded = 0; loaded < options.verifyEvents; ) {
      const size = Math.min(100_000, options.verifyEvents - loaded);
      await loadGenerated(node.store, generator, size, options.loadBatchSize);
      loaded += size;
      await node.integrity.checkpointNow();
    }
    const head = node.store.chainHead.seq;
    const deadline = Date.now() + 30 * 60_000;
    while ((await node.tiering.watermark()).seq < head) {
      if (Date.now() > deadline) throw new Error(`tiering did not reach seq ${head} in 30 minutes`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const embedded = node.embeddedS3 as EmbeddedS3;
    const verifyOptions = parseVerifyOptions(
      ['--path', TIER_PATH, '--endpoint', embedded.connectionUrl, '--access-key-id', embedded.credentials.accessKeyId, '--secret-access-key', embedded.credentials.secretAccessKey],
      {},
    );
    log(`integrity: auditlake verify --path ${TIER_PATH} over ${head} records…`);
    const stopCpu = startCpuMonitor();
    const started = performance.now();
    const report = await verifyHistory(verifyOptions);
    const offlineMs = performance.now() - started;
    const offlineCpu = stopCpu();
    if (!report.ok) throw new Error(`verify failed on an untouched tier: ${report.message}`);
    log(`  ${report.message} in ${(offlineMs / 1000).toFixed(2)} s (${verifyOptions.threads} worker threads)`);
    log(`integrity: the same with --threads 0…`);
    const stopOneCpu = startCpuMonitor();
    const oneStarted = performance.now();
    const oneReport = await verifyHistory({ ...verifyOptions, threads: 0 });
    const oneMs = performance.now() - oneStarted;
    const oneCpu = stopOneCpu();
    if (oneReport.message !== report.message) throw new Error(`verify --threads 0 disagrees: ${oneReport.message}`);
    log(`  ${(oneMs / 1000).toFixed(2)} s`);
    // The same records in memory, through the verifier alone.
    const records = (await node.store.readBySeq(0, head)) as unknown as VerifyRecord[];
    const inMemoryStarted = performance.now();
    const verifier = new ChainVerifier({ startSeq: 1 });
    for (const record of records) verifier.add(record);
    const inMemory = verifier.finish();
    const inMemoryMs = performance.now() - inMemoryStarted;
    if (!inMemory.ok) throw new Error(`verify failed in memory: ${inMemory.message}`);
    return {
      records: report.records,
      checkpoints: report.checkpoints,
      offlineMs,
      offlineRecordsPerSecond: report.records / (offlineMs / 1000),
      offlineCpu,
      threads: verifyOptions.threads,
      oneThread: { ms: oneMs, recordsPerSecond: oneReport.records / (oneMs / 1000), cpu: oneCpu },
      inMemoryMs,
      inMemoryRecordsPerSecond: inMemory.records / (inMemoryMs / 1000),
      message: report.message,
    };
  } finally {
    await node.close();
  }
}
