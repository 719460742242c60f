import { availableParallelism } from 'node:os';
import { WorkerPool } from '@auditlake/worker-pool';
import type { ColumnMetaData } from 'hyparquet';

/** A chunk of the span to probe: [start, end) relative to the span, and its column's metadata. */
export interface TextProbeChunk {
  start: number;
  end: number;
  meta: ColumnMetaData;
}

/**
 * What a worker is asked, per row group: may any of its chunks of `span` hold `needle`
 * (UTF-8, lower-case)?
 */
export interface TextProbeRequest {
  id: number;
  span: ArrayBuffer;
  groups: TextProbeChunk[][];
  needle: Uint8Array;
}

export type TextProbeResponse = { id: number; mayMatch: boolean[] } | { id: number; error: string };

/** Options of {@link TextProbePool}. */
export interface TextProbePoolOptions {
  /** Worker threads at most (default: the machine's parallelism, at most 4). */
  threadsMax?: number;
  /** A worker idle this long exits (default 30 s); the next probe starts a new one. */
  idleMs?: number;
}

/**
 * The worker file next to this module. Under the test runner this module runs from `src/*.ts`,
 * which a worker thread cannot load; the built sibling in `dist/` is the same code.
 */
function workerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../dist/text-probe-worker.js', here) : new URL('./text-probe-worker.js', here);
}

/**
 * Worker threads for the free-text prefilter, so a scan searches on more than one core (the
 * prefilter is CPU work: decompression, folding and byte search; the reader's thread keeps the
 * I/O). Workers start on demand, take probes round robin by load, and exit when idle, so an
 * idle pool holds no thread; a worker holds its process only while it has a probe. `close()`
 * terminates them and fails what is still pending; the pool may be used again after.
 */
export class TextProbePool {
  readonly threadsMax: number;
  readonly idleMs: number;
  readonly #pool: WorkerPool<TextProbeResponse, boolean[]>;

  constructor(options: TextProbePoolOptions = {}) {
    this.threadsMax = options.threadsMax ?? Math.min(4, availableParallelism());
    this.idleMs = options.idleMs ?? 30_000;
    this.#pool = new WorkerPool<TextProbeResponse, boolean[]>({
      workerUrl: workerUrl(),
      threadsMax: this.threadsMax,
      idleMs: this.idleMs,
      // A search awaiting a probe holds its process as it would awaiting I/O; an idle worker never does.
      refWhilePending: true,
      reopens: true,
      outcome: (response) => ('error' in response ? { error: new Error(`text probe failed: ${response.error}`) } : { value: response.mayMatch }),
      errors: {
        closed: () => new Error('text probe pool closed'),
        closedWhilePending: () => new Error('text probe pool closed'),
        crashed: (err) => err,
        exited: (code) => new Error(`text probe worker exited (code ${code})`),
        notSent: (err) => (err instanceof Error ? err : new Error(String(err))),
      },
    });
  }

  /** Worker threads running now. */
  get threads(): number {
    return this.#pool.running;
  }

  /**
   * Runs the probe of each group's chunks in a worker, answering per group; `span` is copied to
   * it (the caller's buffer stays usable).
   */
  probe(span: Uint8Array, groups: TextProbeChunk[][], needle: Uint8Array): Promise<boolean[]> {
    const job = this.#pool.begin(undefined);
    const request: TextProbeRequest = { id: job.id, span: span.slice().buffer, groups, needle };
    job.post(request, [request.span]);
    return job.answer;
  }

  /** Terminates every worker; probes still pending fail. */
  async close(): Promise<void> {
    await this.#pool.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
