import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { encodeAuditParquet, TIER_PAGE_CODEC } from '@auditlake/format';
import { canonicalRecord, chainHash, GENESIS_CHAIN_HASH, RecordHasher } from '@auditlake/integrity';
import { TierEncodePool } from '@auditlake/lake';
import { validateEvent, type StoredEvent } from '@auditlake/model';
import { createEventGenerator } from '@auditlake/testkit';
import { latencyStats, type LatencyStats } from './latency-stats.js';
import { scratchDir } from './scratch-dir.js';

export interface TierFileBenchOptions {
  seed: number;
  /** Events in the file (a sweep batch). */
  events: number;
  repetitions: number;
}

export interface TierFileFigures {
  events: number;
  codec: string;
  bytes: number;
  /** The same file without its row-group sketches (absent in results stored before them). */
  bytesWithoutSketches?: number;
  /**
   * The split encoder: a TierEncodePool of {@link poolThreads} worker threads, the events handed
   * over as the sweep hands them. Results stored before it measured `encodeAuditParquet` on
   * one thread here (and have no `poolThreads`).
   */
  write: LatencyStats;
  /** Worker threads of the pool measured in `write`. */
  poolThreads?: number;
  /** `encodeAuditParquet` on the calling thread, for context. */
  writeOneThread?: LatencyStats;
  /** True when the rows carried the record chain's columns (absent in results stored before: they did not). */
  chainColumns?: boolean;
  duckBytes: number;
  duckWrite: LatencyStats;
  duckThreads: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The events with the record chain's fields (record hash, chain hash, field check), as a node
 * stores and tiers them by default (`auditlake.audit.integrity.chain.enabled`): the hashes are
 * three incompressible columns, about half the file's bytes, and a file measured without them
 * is not the file a sweep writes.
 */
function chained(events: StoredEvent[]): StoredEvent[] {
  const hasher = new RecordHasher();
  let previous = GENESIS_CHAIN_HASH;
  return events.map((event) => {
    const digest = hasher.digest(canonicalRecord(event));
    previous = chainHash(previous, digest.recordHash);
    return { ...event, recordHash: digest.recordHash, chainHash: previous, fieldCheck: digest.fieldCheck };
  });
}

/**
 * Worker threads of the measured pool: two, the split encoder a node uses with
 * `auditlake.audit.tier.encode.threads` ≥ 2 (DuckDB writes with two as well). The node's
 * default is one thread, which encodes as `encodeAuditParquet` does, off the event loop.
 */
const POOL_THREADS = 2;

/**
 * One sweep batch's data file, written by the node's encoder (its pool of two worker threads,
 * which encode each file on both, and, for context, `encodeAuditParquet` on one thread) and,
 * as the reference, by DuckDB
 * (`COPY … (FORMAT parquet, COMPRESSION zstd)`) from the very same rows (loaded from our
 * file into a DuckDB table before timing). Both write to bytes in memory or a local file, no
 * S3: what is compared is the encoding. Repetitions alternate between the two.
 */
export async function runTierFileBench(options: TierFileBenchOptions, log: (message: string) => void): Promise<TierFileFigures> {
  await using dir = await scratchDir('tier-file');
  const startTs = Date.UTC(2026, 0, 1);
  const generator = createEventGenerator({ seed: options.seed, startTs, spanMs: DAY_MS, count: options.events });
  const stored = chained(
    generator.batch(options.events).map((raw, i) => {
      const event = validateEvent(raw, 'event', { nowMs: startTs + 2 * DAY_MS });
      return { ...event, ingestTs: event.timestamp + 500, seq: i + 1, term: 1 };
    }),
  );
  // The sweep encodes events as the store reads them back (JSON.parse of the stored value), not
  // as validation built them: plain objects of one shape, which V8 reads several times faster.
  const events = JSON.parse(JSON.stringify(stored)) as StoredEvent[];
  const ours = join(dir.path, 'ours.parquet');
  let bytes = encodeAuditParquet(events);
  await writeFile(ours, bytes);

  const instance = await DuckDBInstance.create(':memory:');
  const duck = await instance.connect();
  try {
    await duck.run(`CREATE TABLE batch AS SELECT * FROM read_parquet('${ours}')`);
    const threads = Number((await duck.runAndReadAll(`SELECT current_setting('threads')`)).getRows()[0]?.[0]);
    const theirs = join(dir.path, 'duckdb.parquet');
    const writeMs: number[] = [];
    const oneThreadMs: number[] = [];
    const duckMs: number[] = [];
    await using pool = Object.assign(new TierEncodePool({ threadsMax: POOL_THREADS }), { [Symbol.asyncDispose]: () => pool.close() });
    // No Iceberg data-file record: what is compared is the file's encoding, as DuckDB's COPY.
    const shape = { kvMetadata: {}, icebergDataFile: false };
    log(`tiering: one ${options.events}-event data file, ${options.repetitions} rounds (ours ${TIER_PAGE_CODEC}, DuckDB zstd)…`);
    for (let round = 0; round < options.repetitions + 1; round++) {
      let t = performance.now();
      const pooled = (await pool.encode(events, shape)).bytes;
      const ourMs = performance.now() - t;
      t = performance.now();
      bytes = encodeAuditParquet(events);
      const oneMs = performance.now() - t;
      if (!Buffer.from(pooled).equals(Buffer.from(bytes))) throw new Error('the pool encoded other bytes than encodeAuditParquet');
      t = performance.now();
      await duck.run(`COPY batch TO '${theirs}' (FORMAT parquet, COMPRESSION zstd)`);
      const theirMs = performance.now() - t;
      // Round 0 warms both up (JIT, DuckDB's first COPY).
      if (round > 0) {
        writeMs.push(ourMs);
        oneThreadMs.push(oneMs);
        duckMs.push(theirMs);
      }
    }
    return {
      events: options.events,
      codec: TIER_PAGE_CODEC,
      chainColumns: true,
      bytes: bytes.byteLength,
      bytesWithoutSketches: encodeAuditParquet(events, { rowGroupSketches: false }).byteLength,
      write: latencyStats(writeMs),
      poolThreads: POOL_THREADS,
      writeOneThread: latencyStats(oneThreadMs),
      duckBytes: (await stat(theirs)).size,
      duckWrite: latencyStats(duckMs),
      duckThreads: threads,
    };
  } finally {
    duck.closeSync();
    instance.closeSync();
  }
}
