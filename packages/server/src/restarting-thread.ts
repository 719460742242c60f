/** One run of a serving thread: listening on `port` until it exits (with an exit code) or is closed. */
export interface ThreadRun {
  port: number;
  exited: Promise<number>;
  close(): Promise<void>;
  /** Stops the thread at once, without telling it: what a crash does (tests). */
  terminate(): Promise<void>;
}

export interface RestartingThreadOptions {
  /** Starts a run listening on `port` (0 on the first start: any free port). */
  launch: (port: number) => Promise<ThreadRun>;
  /** Told when a run stopped without being asked to, and when a restart failed. */
  onProblem: (err: Error) => void;
  /** First wait before a restart; it doubles after each failed restart up to the max. */
  restartDelayMinMs?: number;
  restartDelayMaxMs?: number;
}

const RESTART_DELAY_MIN_MS = 1_000;
const RESTART_DELAY_MAX_MS = 30_000;

/**
 * Keeps a serving thread up: a run that stops without being asked to (an uncaught error in the
 * thread) is started again on the same port after a delay, and again with a doubled delay while
 * restarts fail. What the thread serves stays reachable at one address for the node's life,
 * instead of down until the node restarts.
 */
export class RestartingThread {
  readonly port: number;
  readonly #options: RestartingThreadOptions;
  #run: ThreadRun;
  #delayMs: number;
  #timer: NodeJS.Timeout | undefined;
  #closing: Promise<void> | undefined;
  #restarts = 0;

  private constructor(options: RestartingThreadOptions, run: ThreadRun) {
    this.#options = options;
    this.#run = run;
    this.port = run.port;
    this.#delayMs = options.restartDelayMinMs ?? RESTART_DELAY_MIN_MS;
    this.#watch(run);
  }

  /** The first run, on `port`; a failure to start is the caller's (nothing is retried). */
  static async start(port: number, options: RestartingThreadOptions): Promise<RestartingThread> {
    return new RestartingThread(options, await options.launch(port));
  }

  /** How many times a run was started again. */
  get restarts(): number {
    return this.#restarts;
  }

  #watch(run: ThreadRun): void {
    void run.exited.then((code) => {
      if (this.#closing !== undefined || run !== this.#run) return;
      this.#options.onProblem(new Error(`the thread stopped (exit code ${code}); starting it again on port ${this.port} in ${this.#delayMs} ms`));
      this.#scheduleRestart();
    });
  }

  #scheduleRestart(): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#options.launch(this.port).then(
        (run) => {
          if (this.#closing !== undefined) {
            void run.close();
            return;
          }
          this.#run = run;
          this.#restarts++;
          this.#delayMs = this.#options.restartDelayMinMs ?? RESTART_DELAY_MIN_MS;
          this.#watch(run);
        },
        (err: unknown) => {
          if (this.#closing !== undefined) return;
          this.#delayMs = Math.min(this.#delayMs * 2, this.#options.restartDelayMaxMs ?? RESTART_DELAY_MAX_MS);
          this.#options.onProblem(new Error(`starting the thread again on port ${this.port} failed: ${err instanceof Error ? err.message : String(err)}; trying again in ${this.#delayMs} ms`));
          this.#scheduleRestart();
        },
      );
    }, this.#delayMs);
  }

  /** Test hook: stops the current run as a crash would (it is then started again). */
  async crashForTest(): Promise<void> {
    await this.#run.terminate();
  }

  /** Stops restarting and closes the current run. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      clearTimeout(this.#timer);
      await this.#run.close();
    })();
    return this.#closing;
  }
}
