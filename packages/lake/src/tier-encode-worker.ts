/**
 * A tier encoder worker: encodes and rewrites tier files off the event loop (see
 * TierEncodePool). Every job is answered, failures included; the files' bytes are transferred.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { encodePackedColumns, packedColumnBuffers, splitAuditParquet, toRow, type AuditRow, type EncodedColumnChunks, type TieredEvent } from '@auditlake/format';
import { isAuditError } from '@auditlake/model';
import type { TierEncodeRequest, TierEncodeResponse, TierEncodeWorkerData } from './tier-encode-pool.js';
import { encodeTierFile, rewriteTierFiles, tierFileOf, type EncodedTierFile } from './tier-file-encoding.js';

const port = parentPort;
if (port === null) throw new Error('tier-encode-worker must run in a worker thread');

/**
 * Lowers this thread's priority alone: on Linux a thread's id is a pid to setpriority(2), and
 * /proc/thread-self names it. Where that does not exist the thread keeps the process's
 * priority: the pool still works, only without the courtesy.
 */
function runNicer(niceness: number): void {
  if (niceness === 0) return;
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(threadId, Math.min(19, getPriority() + niceness));
  } catch {
    // Not Linux (or no /proc): as nice as the process.
  }
}
runNicer((workerData as TierEncodeWorkerData | undefined)?.niceness ?? 0);

/** The events of encode jobs whose last message has not come yet, by job id. */
const parts = new Map<number, { events: TieredEvent[]; rows: AuditRow[] | Error }>();

/**
 * The rows of a part's events, built as the part comes (the thread would otherwise wait for the
 * next part), or the error a row could not be built with, thrown when the job runs.
 */
function partRows(events: readonly TieredEvent[], into: AuditRow[] | Error): AuditRow[] | Error {
  if (into instanceof Error) return into;
  try {
    for (const event of events) into.push(toRow(event));
    return into;
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** Split encode jobs waiting for the chunks of the columns another worker encodes, by job id. */
const awaitingColumns = new Map<number, { resolve: (chunks: EncodedColumnChunks) => void; reject: (err: Error) => void }>();

/**
 * A split encode job: the other worker's columns go out (through the pool) before this thread
 * encodes its own and the sketches, so both work at once; then the file is assembled.
 */
async function encodeSplit(id: number, events: readonly TieredEvent[], rows: AuditRow[] | Error, shape: Extract<TierEncodeRequest, { job: 'encode' }>['shape']): Promise<EncodedTierFile> {
  if (rows instanceof Error) throw rows;
  const split = splitAuditParquet(events, { kvMetadata: shape.kvMetadata, rows });
  const theirs = new Promise<EncodedColumnChunks>((resolve, reject) => awaitingColumns.set(id, { resolve, reject }));
  try {
    const response: TierEncodeResponse = { id, columns: split.second, rowGroupSize: split.rowGroupSize };
    (port as MessagePort).postMessage(response, packedColumnBuffers(split.second));
    split.encodeFirst();
    return await tierFileOf(events, split.assemble(await theirs), shape);
  } finally {
    awaitingColumns.delete(id);
  }
}

type Job = Exclude<TierEncodeRequest, { job: 'encode-part' | 'columns-encoded' | 'columns-failed' }>;

async function run(request: Job): Promise<EncodedTierFile[] | EncodedColumnChunks> {
  if (request.job === 'encode') {
    const earlier = parts.get(request.id);
    parts.delete(request.id);
    const events = earlier ? [...earlier.events, ...request.events] : request.events;
    if (!request.split) return [await encodeTierFile(events, request.shape)];
    return [await encodeSplit(request.id, events, partRows(request.events, earlier?.rows ?? []), request.shape)];
  }
  if (request.job === 'encode-columns') return encodePackedColumns(request.columns, request.rowGroupSize);
  // Taken out of the request, so each input's bytes can be freed once it is merged.
  const inputs = [...request.inputs];
  (request as { inputs: unknown }).inputs = [];
  return rewriteTierFiles(inputs, request.rowsPerFile, request.shape);
}

port.on('message', (request: TierEncodeRequest) => {
  if (request.job === 'columns-encoded' || request.job === 'columns-failed') {
    const waiting = awaitingColumns.get(request.id);
    if (request.job === 'columns-encoded') waiting?.resolve(request.chunks);
    else waiting?.reject(new Error(`the other encoder thread failed: ${request.error}`));
    return;
  }
  if (request.job === 'encode-part') {
    const earlier = parts.get(request.id) ?? { events: [], rows: [] };
    for (const event of request.events) earlier.events.push(event);
    if (request.split) earlier.rows = partRows(request.events, earlier.rows);
    parts.set(request.id, earlier);
    return;
  }
  void run(request).then(
    (answer) => {
      if (!Array.isArray(answer)) {
        // Chunks: their bytes' whole buffer is moved (the view keeps its range).
        const response: TierEncodeResponse = { id: request.id, chunks: answer };
        port.postMessage(response, [answer.bytes.buffer as ArrayBuffer]);
        return;
      }
      // Moved, not copied, where a file owns its whole buffer.
      const owned = (bytes: Uint8Array) => bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
      const sent = answer.map((file) => (owned(file.bytes) ? file : { ...file, bytes: file.bytes.slice() }));
      const response: TierEncodeResponse = { id: request.id, files: sent };
      port.postMessage(response, [...new Set(sent.map((file) => file.bytes.buffer as ArrayBuffer))]);
    },
    (err: unknown) => {
      const response: TierEncodeResponse = {
        id: request.id,
        error: err instanceof Error ? err.message : String(err),
        ...(isAuditError(err) ? { code: err.code } : {}),
      };
      port.postMessage(response);
    },
  );
});
