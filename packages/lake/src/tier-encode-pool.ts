import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { packedColumnBuffers, type EncodedColumnChunks, type PackedColumn, type TieredEvent } from '@auditlake/format';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { WorkerPool, type WorkerJob } from '@auditlake/worker-pool';
import type { EncodedTierFile, RewriteInput, TierFileEncoder, TierFileShape } from './tier-file-encoding.js';

/**
 * Events handed to a worker in one message at most. A message's events are copied (structured
 * clone) on the event loop in one go: a sweep batch of 5,000 events in one message held the
 * loop for 60–360 ms under a soak's load. In parts of this many, with a turn of the loop
 * between them, each copy stays a few milliseconds.
 */
export const ENCODE_MESSAGE_EVENTS_MAX = 500;

/**
 * What a worker is asked: one job of {@link TierFileEncoder}. An encode job's events may come
 * in parts first (`encode-part`, same id, in order); the `encode` message carries the last.
 *
 * A `split` encode job is one file on two threads (splitAuditParquet): its worker answers
 * first with the columns another worker is to encode (`columns`), goes on with the rest, and
 * waits for those columns' chunks (`columns-encoded`, same id) or their failure
 * (`columns-failed`) before answering the file. `encode-columns` is that other worker's job.
 */
export type TierEncodeRequest =
  | { id: number; job: 'encode-part'; events: readonly TieredEvent[]; split: boolean }
  | { id: number; job: 'encode'; events: readonly TieredEvent[]; shape: TierFileShape; split: boolean }
  | { id: number; job: 'encode-columns'; columns: PackedColumn[]; rowGroupSize: number }
  | { id: number; job: 'columns-encoded'; chunks: EncodedColumnChunks }
  | { id: number; job: 'columns-failed'; error: string }
  | { id: number; job: 'rewrite'; inputs: readonly RewriteInput[]; rowsPerFile: number; shape: TierFileShape };

/** What a worker is started with. */
export interface TierEncodeWorkerData {
  /** How much nicer than the process the worker's thread runs (0: as nice as the process). */
  niceness: number;
}

/**
 * A worker's answer: the files (`encode`, `rewrite`), the chunks (`encode-columns`), or the
 * failure (an AuditError keeps its code); and, before a split encode job's answer, the columns
 * for another worker.
 */
export type TierEncodeResponse =
  | { id: number; files: EncodedTierFile[] }
  | { id: number; chunks: EncodedColumnChunks }
  | { id: number; columns: PackedColumn[]; rowGroupSize: number }
  | { id: number; error: string; code?: string };

export interface TierEncodePoolOptions {
  /**
   * Worker threads at most (default 1; a node gives the sweep and table maintenance a pool
   * each). From 2, each file of an encode job is encoded on two workers: one builds the rows,
   * the row-group sketches and half the columns, another the other half (the costliest text
   * columns), and the first assembles the file, the same bytes as on one thread.
   */
  threadsMax?: number;
  /** A worker idle this long exits (default 30 s); the next job starts a new one. */
  idleMs?: number;
  /**
   * The workers' threads run this much nicer than the process (0-19, default 0; Linux, where
   * a thread has its own priority; elsewhere ignored). Table maintenance's pool runs nicer so
   * its compactions take only CPU the event loop and the sweep leave: on a node with few
   * cores, a compaction re-encoding a minute of sweeps took a core from both for most of it.
   */
  niceness?: number;
}

/** What the pool keeps of a job: whether it is a split encode job (its worker sends columns for another). */
interface EncodeJobContext {
  split: boolean;
}

type EncodeJob = WorkerJob<EncodedTierFile[] | EncodedColumnChunks, EncodeJobContext>;

/**
 * The worker file next to this module. Under the test runner this module runs from `src/*.ts`,
 * which a worker thread cannot load; the built sibling in `dist/` is the same code.
 */
function workerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../dist/tier-encode-worker.js', here) : new URL('./tier-encode-worker.js', here);
}

/** True when `bytes` spans its whole buffer, which can then be moved to a worker. */
function ownsItsBuffer(bytes: Uint8Array): boolean {
  return bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
}

function encoderFailed(message: string, cause?: unknown): AuditError {
  return new AuditError(AuditErrorCode.ENCODER_FAILED, message, cause === undefined ? {} : { cause });
}

/**
 * Encodes tier files in worker threads, so a sweep's or a compaction's Parquet encoding (the
 * bulk of its CPU) runs on another core instead of blocking the event loop that ingests and
 * answers. Workers start on demand and exit when idle, so a node that does not tier holds no
 * thread; a worker holds its process only while it has a job, as a pending read would. A
 * worker that dies fails its pending jobs with AUDIT_ENCODER_FAILED (the sweep retries after
 * its backoff) and leaves the pool; the next job starts another. `close()` terminates the
 * workers and fails what is pending; a closed pool refuses new jobs.
 */
export class TierEncodePool implements TierFileEncoder {
  readonly threadsMax: number;
  readonly idleMs: number;
  readonly niceness: number;
  readonly #pool: WorkerPool<TierEncodeResponse, EncodedTierFile[] | EncodedColumnChunks, EncodeJobContext>;

  constructor(options: TierEncodePoolOptions = {}) {
    this.threadsMax = options.threadsMax ?? 1;
    this.idleMs = options.idleMs ?? 30_000;
    this.niceness = options.niceness ?? 0;
    if (!Number.isSafeInteger(this.niceness) || this.niceness < 0 || this.niceness > 19) throw new TypeError(`niceness must be an integer from 0 to 19, got ${this.niceness}`);
    const workerData: TierEncodeWorkerData = { niceness: this.niceness };
    this.#pool = new WorkerPool({
      workerUrl: workerUrl(),
      workerData,
      threadsMax: this.threadsMax,
      idleMs: this.idleMs,
      // A caller awaiting an encode holds its process as it would awaiting I/O; an idle worker never does.
      refWhilePending: true,
      outcome: (response, job) => {
        if ('columns' in response) {
          if (job.context.split) this.#encodeColumnsFor(job, response.columns, response.rowGroupSize);
          return 'pending';
        }
        if ('error' in response) {
          const known = Object.values(AuditErrorCode).find((code) => code === response.code);
          return { error: known ? new AuditError(known, response.error) : encoderFailed(`tier encoder failed: ${response.error}`) };
        }
        return { value: 'files' in response ? response.files : response.chunks };
      },
      errors: {
        closed: () => encoderFailed('tier encoder pool is closed'),
        closedWhilePending: () => encoderFailed('tier encoder pool closed'),
        crashed: (err) => encoderFailed(`tier encoder worker failed: ${err.message}`, err),
        exited: (code) => encoderFailed(`tier encoder worker exited (code ${code}) with a job pending; the job was not done`),
        notSent: (err) => encoderFailed(`tier encoder could not be given the job: ${err instanceof Error ? err.message : String(err)}`, err),
      },
    });
  }

  /** Worker threads running now. */
  get threads(): number {
    return this.#pool.running;
  }

  /**
   * With {@link threadsMax} of 2 or more, the file is encoded on two workers (see the option);
   * a failure of either fails the job.
   */
  async encode(events: readonly TieredEvent[], shape: TierFileShape): Promise<EncodedTierFile> {
    const partsEnd = Math.max(0, Math.ceil(events.length / ENCODE_MESSAGE_EVENTS_MAX) - 1) * ENCODE_MESSAGE_EVENTS_MAX;
    const last = events.slice(partsEnd);
    const parts: Array<readonly TieredEvent[]> = [];
    for (let start = 0; start < partsEnd; start += ENCODE_MESSAGE_EVENTS_MAX) parts.push(events.slice(start, start + ENCODE_MESSAGE_EVENTS_MAX));
    const split = this.threadsMax >= 2;
    const answer = await this.#run(
      (id) => ({ id, job: 'encode', events: last, shape, split }),
      [],
      (id) => parts.map((part) => ({ id, job: 'encode-part', events: part, split })),
      split,
    );
    const file = Array.isArray(answer) ? answer[0] : undefined;
    if (!file) throw encoderFailed('tier encoder answered no file for an encode job');
    return file;
  }

  /**
   * A split encode job's other half: `columns` encoded on a worker other than the job's
   * (`owner`), their chunks then moved to the job's worker. If that fails (the worker dies,
   * the pool closes), the job fails with its error, and its worker is told to drop it.
   */
  #encodeColumnsFor(owner: EncodeJob, columns: PackedColumn[], rowGroupSize: number): void {
    if (!owner.pending) return; // failed meanwhile
    const chunks = this.#run((columnsId) => ({ id: columnsId, job: 'encode-columns', columns, rowGroupSize }), packedColumnBuffers(columns), undefined, false, owner);
    chunks.then(
      (answer) => {
        if (Array.isArray(answer)) owner.fail(encoderFailed('assertion failed: an encode-columns job answered files'));
        else owner.post({ id: owner.id, job: 'columns-encoded', chunks: answer } satisfies TierEncodeRequest, [answer.bytes.buffer as ArrayBuffer]);
      },
      (err: Error) => {
        owner.post({ id: owner.id, job: 'columns-failed', error: err.message } satisfies TierEncodeRequest);
        owner.fail(err);
      },
    );
  }

  /**
   * The inputs' bytes are moved to the worker, not copied (a compaction's inputs are up to
   * COMPACTION_INPUT_BYTES_MAX, whose copy held the event loop for a quarter second): the
   * caller's views are empty afterwards. A view that does not own its whole buffer is copied.
   */
  rewrite(inputs: readonly RewriteInput[], rowsPerFile: number, shape: TierFileShape): Promise<EncodedTierFile[]> {
    const owned = inputs.map((input) => (ownsItsBuffer(input.bytes) ? input : { ...input, bytes: input.bytes.slice() }));
    const transfer = [...new Set(owned.map((input) => input.bytes.buffer as ArrayBuffer))];
    return this.#run((id) => ({ id, job: 'rewrite', inputs: owned, rowsPerFile, shape }), transfer).then((answer) => {
      if (!Array.isArray(answer)) throw encoderFailed('tier encoder answered no files for a rewrite job');
      return answer;
    });
  }

  /** Terminates every worker; jobs still pending fail; later jobs are refused. Idempotent. */
  async close(): Promise<void> {
    await this.#pool.close();
  }

  /** Test hook: terminates a running worker as a crash would. */
  async crashWorkerForTest(index = 0): Promise<void> {
    await this.#pool.crashWorkerForTest(index);
  }

  /**
   * Sends `parts` (if any), each after a turn of the event loop, then `request`; resolves with
   * the worker's answer. The job is pending from its first message, so a worker that dies
   * meanwhile fails it; a message that cannot be sent fails it too (parts the worker holds of
   * it go when that worker exits idle). `split`: a split encode job, whose worker sends columns
   * for another; `avoid` is a job whose worker is not to take this one while another can.
   */
  #run(
    request: (id: number) => TierEncodeRequest,
    transfer: ArrayBuffer[],
    parts: (id: number) => TierEncodeRequest[] = () => [],
    split = false,
    avoid?: EncodeJob,
  ): Promise<EncodedTierFile[] | EncodedColumnChunks> {
    const job = this.#pool.begin({ split }, avoid);
    // The first message goes now; each later one after a turn of the loop.
    void (async () => {
      const messages = [...parts(job.id), request(job.id)];
      for (const [index, message] of messages.entries()) {
        if (index > 0) await yieldToEventLoop();
        if (!job.post(message, index === messages.length - 1 ? transfer : [])) return;
      }
    })();
    return job.answer;
  }
}
