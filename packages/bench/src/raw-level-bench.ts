import { LEVELDB_TUNING } from '@auditlake/store';
import { Level } from 'level';
import { startCpuMonitor, type CpuShare } from './cpu-monitor.js';
import { ingestBatches, type IngestEventsSpec } from './ingest-events.js';
import { scratchDir } from './scratch-dir.js';

/**
 * How a batch is handed to `level`: `chained` is `db.batch()` + `put()` per event +
 * `write({ sync })`; `array` is `db.batch(ops, { sync })`, the form our store uses. With an
 * options argument abstract-level clones every operation with the options spread into it,
 * which costs several times more CPU per put, so `chained` is the faster, stricter reference.
 */
export type RawWriteForm = 'chained' | 'array';

export interface RawLevelResult {
  sync: boolean;
  form: RawWriteForm;
  events: number;
  elapsedMs: number;
  eventsPerSecond: number;
  cpu: CpuShare;
}

type PutOp = { type: 'put'; key: string; value: string };

/**
 * The reference: the same events as the HTTP run, one LevelDB put each (key = event time and
 * a counter, like our primary time key; value = the event's JSON), in batches of the same size
 * with the same number in flight, straight into `level`. No HTTP, no validation, no indexes.
 * Keys and values are built before timing starts, so only LevelDB is measured.
 */
export async function runRawLevelBench(spec: IngestEventsSpec, concurrency: number, sync: boolean, form: RawWriteForm): Promise<RawLevelResult> {
  await using dir = await scratchDir(`raw-${form}-${sync ? 'sync' : 'nosync'}`);
  // The same LevelDB tuning as our store (memtable and block size), so the reference is not
  // held back by defaults we do not use.
  const db = new Level<string, string>(dir.path, { keyEncoding: 'utf8', valueEncoding: 'utf8', ...LEVELDB_TUNING });
  await db.open();
  try {
    const { warmup, measured } = ingestBatches(spec);
    let counter = 0;
    const toOps = (batches: typeof warmup): PutOp[][] =>
      batches.map((batch) =>
        batch.map((event) => ({
          type: 'put' as const,
          key: `t!${event.ts.toString(16).padStart(16, '0')}${(++counter).toString(16).padStart(16, '0')}`,
          value: JSON.stringify(event),
        })),
      );
    const warmupOps = toOps(warmup);
    const measuredOps = toOps(measured);
    const write = (ops: PutOp[]): Promise<void> => {
      if (form === 'array') return db.batch(ops, { sync });
      const batch = db.batch();
      for (const op of ops) batch.put(op.key, op.value);
      return batch.write({ sync });
    };
    const writeAll = async (all: PutOp[][]) => {
      let next = 0;
      const writer = async () => {
        for (;;) {
          const ops = all[next++];
          if (ops === undefined) return;
          await write(ops);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, writer));
    };
    await writeAll(warmupOps);
    const stopCpu = startCpuMonitor();
    const started = performance.now();
    await writeAll(measuredOps);
    const elapsedMs = performance.now() - started;
    const cpu = stopCpu();
    const events = measuredOps.reduce((n, ops) => n + ops.length, 0);
    return { sync, form, events, elapsedMs, eventsPerSecond: events / (elapsedMs / 1000), cpu };
  } finally {
    await db.close();
  }
}
