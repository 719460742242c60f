import { Worker } from 'node:worker_threads';
import { decodeParsedEvents, parseIngestBody, transferable, type ParseOutcome, type SenderSources } from './ingest-parse.js';
import type { AuditErrorCode } from '@auditlake/model';

export interface ParseRequest {
  id: number;
  /** The request body, transferred (the sender no longer uses it). */
  body: ArrayBuffer;
  nowMs: number;
  /** What a `ts` is judged "ahead" against (ValidateOptions.latestMs). */
  latestMs: number;
  /** `audit.redact.keys` in force when the request arrived. */
  redactKeys: string[];
  /** Compute each event's record chain content part (the store keeps the chain). */
  chain: boolean;
  /** The sender and its bound sourceIds, when sourceIds are bound. */
  sourceBinding?: SenderSources;
}

export type ParseResponse =
  | { id: number; events: ArrayBuffer }
  | { id: number; refusal: { code: AuditErrorCode; message: string; refused: number } }
  | { id: number; error: string };

/** How long a failed worker's replacement waits before it starts. */
export const WORKER_RESTART_PAUSE_MS = 1_000;

interface Pending {
  resolve: (outcome: ParseOutcome) => void;
  reject: (err: Error) => void;
}

interface PoolWorker {
  worker: Worker;
  pending: Map<number, Pending>;
}

/**
 * The worker file next to this module. Under the test runner this module runs from `src/*.ts`,
 * which a worker thread cannot load; the built sibling in `dist/` is the same code.
 */
function workerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../dist/ingest-parse-worker.js', here) : new URL('./ingest-parse-worker.js', here);
}

/**
 * Parses ingest bodies in worker threads (`auditlake.ingest.parse.threads`), so the event loop
 * that orders and stores events does not also decode, parse, validate and serialise them —
 * together about half of its ingest CPU. One thread by default: on the 2-core bench machine
 * that took single-node HTTP ingest from 24,378 to 32,545 events/s with the record chain on
 * (best of 3 alternating rounds; 30,294 → 36,033 with it off), at the same CPU per event.
 * With 0 threads it parses inline.
 * A worker that dies fails its pending requests (500, the caller retries) and is replaced
 * after a pause; while no worker runs, bodies are parsed inline.
 * `close()` terminates the workers and fails what is still pending.
 */
export class IngestParsePool {
  readonly threads: number;
  readonly #workers: PoolWorker[] = [];
  readonly #restarts = new Set<NodeJS.Timeout>();
  #nextId = 1;
  #closed = false;

  constructor(threads: number) {
    if (!Number.isSafeInteger(threads) || threads < 0) throw new TypeError(`ingest parse threads must be a non-negative integer, got ${threads}`);
    this.threads = threads;
    for (let i = 0; i < threads; i++) this.#workers.push(this.#start());
  }

  parse(body: Uint8Array, nowMs: number, redactKeys: readonly string[] = [], chain = false, sourceBinding?: SenderSources, latestMs = nowMs): Promise<ParseOutcome> {
    if (this.#closed) return Promise.reject(new Error('ingest parse pool is closed'));
    if (this.#workers.length === 0) return Promise.resolve(parseIngestBody(body, nowMs, redactKeys, chain, sourceBinding, latestMs));
    const poolWorker = this.#workers.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
    const id = this.#nextId++;
    const request: ParseRequest = { id, body: transferable(body), nowMs, latestMs, redactKeys: [...redactKeys], chain };
    if (sourceBinding !== undefined) request.sourceBinding = { principal: sourceBinding.principal, sourceIds: [...sourceBinding.sourceIds] };
    return new Promise<ParseOutcome>((resolve, reject) => {
      poolWorker.pending.set(id, { resolve, reject });
      poolWorker.worker.postMessage(request, [request.body]);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#restarts) clearTimeout(timer);
    this.#restarts.clear();
    const workers = this.#workers.splice(0);
    await Promise.all(
      workers.map(async (w) => {
        this.#failPending(w, new Error('ingest parse pool closed'));
        await w.worker.terminate();
      }),
    );
  }

  #start(): PoolWorker {
    const worker = new Worker(workerUrl());
    const poolWorker: PoolWorker = { worker, pending: new Map() };
    worker.on('message', (response: ParseResponse) => {
      const pending = poolWorker.pending.get(response.id);
      if (!pending) return;
      poolWorker.pending.delete(response.id);
      if ('events' in response) {
        try {
          pending.resolve({ ok: true, events: decodeParsedEvents(new Uint8Array(response.events)) });
        } catch (err) {
          pending.reject(err instanceof Error ? err : new Error(String(err)));
        }
      } else if ('refusal' in response) {
        pending.resolve({ ok: false, ...response.refusal });
      } else {
        pending.reject(new Error(`ingest parse worker failed: ${response.error}`));
      }
    });
    const replace = (err: Error) => {
      const index = this.#workers.indexOf(poolWorker);
      if (index === -1) return; // closed, or already replaced
      this.#failPending(poolWorker, err);
      this.#workers.splice(index, 1);
      // Started again after a pause, not at once: a worker that cannot even load would
      // otherwise be respawned in a tight loop. Meanwhile the others (or the event loop) parse.
      const timer = setTimeout(() => {
        this.#restarts.delete(timer);
        if (!this.#closed) this.#workers.push(this.#start());
      }, WORKER_RESTART_PAUSE_MS);
      timer.unref();
      this.#restarts.add(timer);
    };
    worker.on('error', (err) => replace(err));
    worker.on('exit', (code) => replace(new Error(`ingest parse worker exited with code ${code}`)));
    // The HTTP server keeps a node alive; a parse worker never should on its own. Unref'd after
    // the 'message' listener, which refs the worker's port again.
    worker.unref();
    return poolWorker;
  }

  #failPending(poolWorker: PoolWorker, err: Error): void {
    for (const pending of poolWorker.pending.values()) pending.reject(err);
    poolWorker.pending.clear();
  }

  /** Test hook: the thread ids of the running workers (to kill one and see it replaced). */
  get workerThreadIds(): number[] {
    return this.#workers.map((w) => w.worker.threadId);
  }

  /** Test hook: terminates one worker as a crash would. */
  async crashWorkerForTest(index: number): Promise<void> {
    await this.#workers[index]?.worker.terminate();
  }
}
