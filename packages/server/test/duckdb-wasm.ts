// DuckDB compiled to WebAssembly: an independent reader of Arrow IPC streams (the native DuckDB
// bindings for Node read Parquet, but read Arrow IPC only through an extension they would have
// to download). It runs in a child process, so its module compiles once per call and never
// in a test worker.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
/** A reader that has not answered by then is killed, so no child outlives its test. */
const READER_TIMEOUT_MS = 200_000;

/** The child: loads the stream as a table, answers its columns and rows as JSON (bigints tagged). */
const READER = `
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
const require = createRequire(join(process.cwd(), 'reader.js'));
const { createDuckDB, NODE_RUNTIME, VoidLogger } = await import(require.resolve('@duckdb/duckdb-wasm/blocking'));
const dist = dirname(require.resolve('@duckdb/duckdb-wasm/dist/duckdb-mvp.wasm'));
const db = await createDuckDB({ mvp: { mainModule: join(dist, 'duckdb-mvp.wasm'), mainWorker: '' }, eh: { mainModule: join(dist, 'duckdb-eh.wasm'), mainWorker: '' } }, new VoidLogger(), NODE_RUNTIME);
await db.instantiate();
const connection = db.connect();
const answers = process.argv.slice(1).map((file, i) => {
  connection.insertArrowFromIPCStream(readFileSync(file), { name: 'stream_' + i });
  const columns = connection
    .query("SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_name = 'stream_" + i + "' ORDER BY ordinal_position")
    .toArray().map((row) => row.toJSON());
  // event_time as epoch ms from DuckDB itself, so the check does not lean on the JS Arrow library's
  // conversions (and not through time-zone functions: those want the ICU extension, which WASM
  // would try to download, and the blocking build then waits for ever).
  const rows = connection
    .query("SELECT *, epoch_ms(event_time) AS event_time_ms FROM stream_" + i)
    .toArray().map((row) => row.toJSON());
  return { columns, rows };
});
process.stdout.write(JSON.stringify(answers, (_key, value) => (typeof value === 'bigint' ? { bigint: value.toString() } : value)));
`;

export interface DuckDbArrowRead {
  columns: Array<{ name: string; type: string }>;
  rows: Array<Record<string, unknown>>;
}

/**
 * Reads Arrow IPC streams with DuckDB (one process for all, as starting it is slow): for each,
 * its column names and types, and its rows in stream order.
 */
export async function readArrowWithDuckDb(streams: readonly Uint8Array[]): Promise<DuckDbArrowRead[]> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-arrow-'));
  try {
    const files = streams.map((_, i) => join(dir, `stream-${i}.arrows`));
    await Promise.all(streams.map((bytes, i) => writeFile(files[i]!, bytes)));
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', READER, ...files], { cwd: import.meta.dirname, maxBuffer: 256 * 1024 * 1024, timeout: READER_TIMEOUT_MS, killSignal: 'SIGKILL' });
    return JSON.parse(stdout, (_key, value: unknown) =>
      value !== null && typeof value === 'object' && 'bigint' in value ? BigInt((value as { bigint: string }).bigint) : value,
    ) as DuckDbArrowRead[];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
