import { Worker, type TransferListItem } from 'node:worker_threads';

/** A worker's message names the job it is about. */
export interface WorkerResponse {
  id: number;
}

/** What a worker's message does to its job: settles it with a value or an error, or leaves it pending (a message before the answer). */
export type JobOutcome<A> = { value: A } | { error: Error } | 'pending';

/** The errors a pool fails jobs with, worded for what its workers do. */
export interface WorkerPoolErrors {
  /** A job asked of a closed pool. */
  closed(): Error;
  /** A job pending when the pool was closed. */
  closedWhilePending(): Error;
  /** A job whose worker raised an uncaught error. */
  crashed(err: Error): Error;
  /** A job whose worker exited. */
  exited(code: number): Error;
  /** A job whose message could not be sent (it could not be cloned or transferred). */
  notSent(err: unknown): Error;
}

export interface WorkerPoolOptions<R extends WorkerResponse, A, C> {
  /** The worker module. */
  workerUrl: URL;
  /** Given to each worker as `workerData`. */
  workerData?: unknown;
  /** Worker threads at most (a positive integer). */
  threadsMax: number;
  /** A worker without a job this long exits (the next job starts another); absent, workers run until `close()`. */
  idleMs?: number;
  /**
   * Hold the process open while a worker has a job (a verification the process waits for);
   * otherwise a pool never keeps a process alive. Workers without a job never do.
   */
  refWhilePending?: boolean;
  /** Jobs asked after `close()` start workers again instead of being refused. */
  reopens?: boolean;
  /** What a worker's message means for the job it names. */
  outcome(response: R, job: WorkerJob<A, C>): JobOutcome<A>;
  errors: WorkerPoolErrors;
}

interface PoolWorker<A, C> {
  worker: Worker;
  jobs: Map<number, WorkerJob<A, C>>;
  idleTimer: NodeJS.Timeout | undefined;
}

/**
 * A job given to one of a pool's workers: pending from {@link WorkerPool.begin} until a message
 * of its worker settles it, {@link fail} does, its worker dies or the pool closes. `answer`
 * never counts as an unhandled rejection until someone awaits it.
 */
export class WorkerJob<A, C> {
  readonly id: number;
  readonly context: C;
  readonly answer: Promise<A>;
  readonly #onSettled: (job: WorkerJob<A, C>) => void;
  readonly #worker: PoolWorker<A, C> | undefined;
  readonly #errors: WorkerPoolErrors;
  #settle: { resolve: (value: A) => void; reject: (err: Error) => void } | undefined;

  /** Made by {@link WorkerPool.begin}; `worker` undefined: refused at once with `refusal`. */
  constructor(id: number, context: C, worker: PoolWorker<A, C> | undefined, errors: WorkerPoolErrors, onSettled: (job: WorkerJob<A, C>) => void, refusal?: Error) {
    this.id = id;
    this.context = context;
    this.#worker = worker;
    this.#errors = errors;
    this.#onSettled = onSettled;
    this.answer = new Promise<A>((resolve, reject) => {
      this.#settle = { resolve, reject };
    });
    this.answer.catch(() => undefined);
    if (refusal !== undefined) this.settle({ error: refusal });
  }

  /** Still waiting for its answer. */
  get pending(): boolean {
    return this.#settle !== undefined;
  }

  /**
   * Sends `message` to the job's worker, moving `transfer`; false when the job is no longer
   * pending (nothing sent) or the message could not be sent (the job then fails with
   * `errors.notSent`).
   */
  post(message: unknown, transfer: readonly TransferListItem[] = []): boolean {
    if (!this.pending || this.#worker === undefined) return false;
    try {
      this.#worker.worker.postMessage(message, transfer);
      return true;
    } catch (err) {
      this.fail(this.#errors.notSent(err));
      return false;
    }
  }

  /** Fails the job with `err` if it is still pending. */
  fail(err: Error): void {
    this.settle({ error: err });
  }

  /** Settles the job with `outcome` if it is still pending; later calls do nothing. */
  settle(outcome: Exclude<JobOutcome<A>, 'pending'>): void {
    const settle = this.#settle;
    if (settle === undefined) return;
    this.#settle = undefined;
    if ('error' in outcome) settle.reject(outcome.error);
    else settle.resolve(outcome.value);
    this.#onSettled(this);
  }
}

/**
 * Worker threads that take jobs by id: a job goes to an idle worker, else to a new one while
 * below `threadsMax`, else to the least loaded. Workers start on demand and are unref'd, so a
 * pool never keeps a process alive unless told to while jobs are pending; with `idleMs` they
 * exit when idle, so an idle pool holds no thread. A worker that dies fails its pending jobs and
 * leaves the pool; the next job starts another. `close()` fails what is pending, stops every
 * worker and (unless `reopens`) refuses later jobs; it is idempotent.
 */
export class WorkerPool<R extends WorkerResponse, A, C = undefined> {
  readonly threadsMax: number;
  readonly idleMs: number | undefined;
  readonly #options: WorkerPoolOptions<R, A, C>;
  readonly #workers: PoolWorker<A, C>[] = [];
  #nextId = 1;
  #closed = false;

  constructor(options: WorkerPoolOptions<R, A, C>) {
    if (!Number.isSafeInteger(options.threadsMax) || options.threadsMax < 1) throw new TypeError(`threadsMax must be a positive integer, got ${options.threadsMax}`);
    if (options.idleMs !== undefined && !(Number.isFinite(options.idleMs) && options.idleMs >= 0)) throw new TypeError(`idleMs must be a non-negative number, got ${options.idleMs}`);
    this.threadsMax = options.threadsMax;
    this.idleMs = options.idleMs;
    this.#options = options;
  }

  /** Worker threads running now. */
  get running(): number {
    return this.#workers.length;
  }

  /**
   * A new pending job (nothing sent yet: {@link WorkerJob.post} its messages), on a worker
   * other than `avoid`'s while another can take it. On a closed pool the job is refused at
   * once (its answer rejects with `errors.closed()`).
   */
  begin(context: C, avoid?: WorkerJob<A, C>): WorkerJob<A, C> {
    const id = this.#nextId++;
    if (this.#closed && this.#options.reopens !== true) return new WorkerJob<A, C>(id, context, undefined, this.#options.errors, () => undefined, this.#options.errors.closed());
    this.#closed = false;
    const poolWorker = this.#pick(avoid);
    const job = new WorkerJob<A, C>(id, context, poolWorker, this.#options.errors, () => this.#settled(poolWorker, job));
    poolWorker.jobs.set(id, job);
    if (poolWorker.idleTimer !== undefined) clearTimeout(poolWorker.idleTimer);
    poolWorker.idleTimer = undefined;
    if (this.#options.refWhilePending === true) poolWorker.worker.ref();
    return job;
  }

  /** Stops every worker; pending jobs fail; later jobs are refused unless the pool reopens. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const workers = this.#workers.splice(0);
    await Promise.all(workers.map((w) => this.#stop(w, this.#options.errors.closedWhilePending())));
  }

  /** Test hook: terminates a running worker as a crash would. */
  async crashWorkerForTest(index = 0): Promise<void> {
    await this.#workers[index]?.worker.terminate();
  }

  /** An idle worker, or a new one while below the maximum, else the least loaded; other than `avoid`'s while there can be another. */
  #pick(avoid: WorkerJob<A, C> | undefined): PoolWorker<A, C> {
    const others = this.#workers.filter((w) => avoid === undefined || w.jobs.get(avoid.id) !== avoid);
    const idle = others.find((w) => w.jobs.size === 0);
    if (idle) return idle;
    if (this.#workers.length < this.threadsMax) return this.#start();
    if (others.length === 0) return this.#workers[0] ?? this.#start();
    return others.reduce((a, b) => (b.jobs.size < a.jobs.size ? b : a));
  }

  #start(): PoolWorker<A, C> {
    const worker = new Worker(this.#options.workerUrl, this.#options.workerData === undefined ? {} : { workerData: this.#options.workerData });
    const poolWorker: PoolWorker<A, C> = { worker, jobs: new Map(), idleTimer: undefined };
    worker.on('message', (response: R) => {
      const job = poolWorker.jobs.get(response.id);
      if (job === undefined) return;
      const outcome = this.#options.outcome(response, job);
      if (outcome !== 'pending') job.settle(outcome);
    });
    // A worker that dies fails its jobs and leaves the pool; the next job starts another.
    const fail = (err: Error) => {
      this.#forget(poolWorker);
      for (const job of [...poolWorker.jobs.values()]) job.fail(err);
    };
    worker.on('error', (err) => fail(this.#options.errors.crashed(err)));
    worker.on('exit', (code) => fail(this.#options.errors.exited(code)));
    // After the 'message' listener: adding one refs the worker's port again, and a pool whose
    // workers were unref'd first held its process open as long as a worker ran.
    worker.unref();
    this.#workers.push(poolWorker);
    return poolWorker;
  }

  /** A job of `poolWorker` settled: once it has none, it stops holding the process and its idle time starts. */
  #settled(poolWorker: PoolWorker<A, C>, job: WorkerJob<A, C>): void {
    if (poolWorker.jobs.get(job.id) !== job) return;
    poolWorker.jobs.delete(job.id);
    if (poolWorker.jobs.size > 0) return;
    if (this.#options.refWhilePending === true) poolWorker.worker.unref();
    if (this.idleMs === undefined || !this.#workers.includes(poolWorker)) return;
    poolWorker.idleTimer = setTimeout(() => {
      this.#forget(poolWorker);
      void this.#stop(poolWorker);
    }, this.idleMs);
    poolWorker.idleTimer.unref();
  }

  #forget(poolWorker: PoolWorker<A, C>): void {
    const at = this.#workers.indexOf(poolWorker);
    if (at !== -1) this.#workers.splice(at, 1);
  }

  /** Terminates the worker; its pending jobs (none when it stops idle) fail with `reason`. */
  async #stop(poolWorker: PoolWorker<A, C>, reason?: Error): Promise<void> {
    if (poolWorker.idleTimer !== undefined) clearTimeout(poolWorker.idleTimer);
    poolWorker.idleTimer = undefined;
    if (reason !== undefined) for (const job of [...poolWorker.jobs.values()]) job.fail(reason);
    await poolWorker.worker.terminate();
  }
}
