/** One run of a serving thread: listening on `port` until it exits (with an exit code) or is closed. */
export interface ThreadRun {
  port: number;
  exited: Promise<number>;
  close(): Promise<void>;
  /** Stops the thread at once, without telling it: what a crash does (tests). */
  terminate(): Promise<void>;
}

export interface RestartingThreadOptions {
  /**
   * Starts a run listening on `port` (0 on the first start: any free port). When `signal`
   * aborts before the run listens, the launch must stop what it started and reject.
   */
  launch: (port: number, signal: AbortSignal) => Promise<ThreadRun>;
  /** Told when a run stopped without being asked to, and when a restart failed (the launch error as `cause`). */
  onProblem: (err: Error) => void;
  /** First wait before a restart that follows a short run, or a failed restart; it doubles each time up to the max. */
  restartDelayMinMs?: number;
  restartDelayMaxMs?: number;
  /** A run up at least this long was healthy: when it stops, it is started again at once and the wait starts over. */
  stableMs?: number;
  /** A launch not listening after this long is stopped and counts as failed (a start that hangs must not leave the thread down for good). */
  startTimeoutMs?: number;
}

const RESTART_DELAY_MIN_MS = 1_000;
const RESTART_DELAY_MAX_MS = 30_000;
const STABLE_MS = 10_000;
const START_TIMEOUT_MS = 30_000;

/** Launches a run, stopping it (through the launch's signal) when it has not listened within the start timeout or `stop` aborts. */
async function launchWithin(options: RestartingThreadOptions, port: number, stop?: AbortSignal): Promise<ThreadRun> {
  const timeoutMs = options.startTimeoutMs ?? START_TIMEOUT_MS;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`the thread did not listen within ${timeoutMs} ms; it was stopped`)), timeoutMs);
  const onStop = () => controller.abort(stop?.reason);
  stop?.addEventListener('abort', onStop, { once: true });
  try {
    const run = await options.launch(port, controller.signal);
    // A launch that listened just as it was stopped must not count as started.
    if (controller.signal.aborted) {
      await run.close();
      throw controller.signal.reason instanceof Error ? controller.signal.reason : new Error(String(controller.signal.reason));
    }
    return run;
  } finally {
    clearTimeout(timer);
    stop?.removeEventListener('abort', onStop);
  }
}

/**
 * Keeps a serving thread up: a run that stops without being asked to (an uncaught error in the
 * thread) is started again on the same port, so what it serves stays at one address for the
 * node's life instead of down until the node restarts.
 *
 * When a run that had been up a while stops, it is started again at once: its port was freed
 * when it stopped, and while nothing listens there any process on the host could take it and
 * be sent what the node meant for its own endpoint. A run that stops soon after starting (a
 * request that crashes it every time) is started again after a wait that doubles each time, as
 * does a restart that fails, so a crash loop costs little; the wait starts over once a run has
 * stayed up `stableMs`.
 */
export class RestartingThread {
  readonly port: number;
  readonly #options: RestartingThreadOptions;
  #run: ThreadRun;
  #runStartedMs: number;
  #delayMs: number;
  #timer: NodeJS.Timeout | undefined;
  /** A restart's launch on its way: close() stops it, waits for it and closes what it started. */
  #launching: Promise<void> | undefined;
  /** Aborted by close(): stops a restart's launch that has not listened yet. */
  readonly #closed = new AbortController();
  #closing: Promise<void> | undefined;
  #restarts = 0;

  private constructor(options: RestartingThreadOptions, run: ThreadRun) {
    this.#options = options;
    this.#run = run;
    this.#runStartedMs = performance.now();
    this.port = run.port;
    this.#delayMs = this.#delayMinMs;
    this.#watch(run);
  }

  /** The first run, on `port`; a failure to start (or no listening within the start timeout) is the caller's (nothing is retried). */
  static async start(port: number, options: RestartingThreadOptions): Promise<RestartingThread> {
    return new RestartingThread(options, await launchWithin(options, port));
  }

  /** How many times a run was started again. */
  get restarts(): number {
    return this.#restarts;
  }

  get #delayMinMs(): number {
    return this.#options.restartDelayMinMs ?? RESTART_DELAY_MIN_MS;
  }

  /** The wait before the next attempt, and doubles the one after it. */
  #nextDelayMs(): number {
    const delay = this.#delayMs;
    this.#delayMs = Math.min(this.#delayMs * 2, this.#options.restartDelayMaxMs ?? RESTART_DELAY_MAX_MS);
    return delay;
  }

  #problem(message: string, cause?: unknown): void {
    try {
      this.#options.onProblem(new Error(message, cause === undefined ? undefined : { cause }));
    } catch {
      // A failing report must not become an unhandled rejection (which ends the process).
    }
  }

  #watch(run: ThreadRun): void {
    void run.exited.then((code) => {
      if (this.#closing !== undefined || run !== this.#run) return;
      const stable = performance.now() - this.#runStartedMs >= (this.#options.stableMs ?? STABLE_MS);
      if (stable) this.#delayMs = this.#delayMinMs;
      const delay = stable ? 0 : this.#nextDelayMs();
      this.#problem(`the thread stopped (exit code ${code}); starting it again on port ${this.port} ${delay === 0 ? 'now' : `in ${delay} ms`}`);
      this.#scheduleRestart(delay);
    });
  }

  #scheduleRestart(delay: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#launching = launchWithin(this.#options, this.port, this.#closed.signal).then(
        async (run) => {
          this.#launching = undefined;
          if (this.#closing !== undefined) return run.close();
          this.#run = run;
          this.#runStartedMs = performance.now();
          this.#restarts++;
          this.#watch(run);
        },
        (err: unknown) => {
          this.#launching = undefined;
          if (this.#closing !== undefined) return;
          const next = this.#nextDelayMs();
          this.#problem(`starting the thread again on port ${this.port} failed: ${err instanceof Error ? err.message : String(err)}; trying again in ${next} ms`, err);
          this.#scheduleRestart(next);
        },
      );
    }, delay);
  }

  /** Test hook: stops the current run as a crash would (it is then started again). */
  async crashForTest(): Promise<void> {
    await this.#run.terminate();
  }

  /** Stops restarting and closes the current run; a restart on its way is stopped (or, listening already, closed). Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      clearTimeout(this.#timer);
      this.#closed.abort(new Error('the thread is closing'));
      await this.#launching;
      await this.#run.close();
    })();
    return this.#closing;
  }
}
