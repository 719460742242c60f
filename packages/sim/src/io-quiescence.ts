import { createHook, type AsyncHook } from 'node:async_hooks';

/**
 * Native work the simulator waits for after each step: LevelDB operations and file system
 * calls (both run on libuv's thread pool), and immediates or ticks the code under test queues.
 * Real timers are not waited for: nothing under simulation may use them (time is virtual).
 */
const TRACKED = /^(classic_level\.|FSREQ|FILEHANDLE|Immediate$|TickObject$)/;

/** Most event-loop turns one step's I/O may take before the simulator calls it stuck. */
const TURNS_MAX = 1_000_000;

/**
 * Knows when every piece of native work started by a simulation step has finished, so the
 * scheduler takes the next step only then ("run to quiescence"). With one libuv thread
 * (UV_THREADPOOL_SIZE=1) native work completes in the order it was issued, so the code under
 * test sees the same sequence of completions on every replay of a seed.
 */
export class IoQuiescence {
  readonly #pending = new Set<number>();
  readonly #hook: AsyncHook;
  /** True while this class queues its own immediate, which must not count as pending work. */
  #own = false;

  constructor() {
    this.#hook = createHook({
      init: (asyncId, type) => {
        if (!this.#own && TRACKED.test(type)) this.#pending.add(asyncId);
      },
      destroy: (asyncId) => {
        this.#pending.delete(asyncId);
      },
    });
  }

  /** Starts tracking (only work started from now on is waited for). */
  enable(): void {
    if (process.env['UV_THREADPOOL_SIZE'] !== '1') {
      throw new Error('the simulator needs UV_THREADPOOL_SIZE=1 in its environment at process start, so native I/O completes in the order it was issued');
    }
    this.#hook.enable();
  }

  disable(): void {
    this.#hook.disable();
    this.#pending.clear();
  }

  /** Resolves once no tracked work is outstanding and the microtask queue has drained. */
  async settle(): Promise<void> {
    for (let turns = 0; turns < TURNS_MAX; turns++) {
      await this.#turn();
      if (this.#pending.size === 0) {
        // One more turn: a destroy can be reported before work its callback started is seen.
        await this.#turn();
        if (this.#pending.size === 0) return;
      }
    }
    throw new Error(`native work did not finish within ${TURNS_MAX} event-loop turns (${this.#pending.size} outstanding)`);
  }

  #turn(): Promise<void> {
    this.#own = true;
    try {
      return new Promise((resolve) => setImmediate(resolve));
    } finally {
      this.#own = false;
    }
  }
}
