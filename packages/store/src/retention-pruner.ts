import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { AuditStore, PruneResult } from './audit-store.js';

export const DAY_MS = 24 * 60 * 60 * 1000;

/** What may be deleted now: events older than `cutoffMs`, and (when set) only with seq ≤ `maxSeq`. */
export interface PrunePolicy {
  cutoffMs: number;
  maxSeq?: number;
}

export interface RetentionPrunerOptions {
  intervalMs: number;
  batchSize: number;
  /**
   * Read at every run, so a settings change applies without a restart: the absolute cap alone
   * without tiering; with tiering, only tiered events, after the shorter of the two windows.
   */
  policy: (nowMs: number) => PrunePolicy | Promise<PrunePolicy>;
  now?: () => number;
  onPruned?: (result: PruneResult) => void;
  onError?: (err: unknown) => void;
}

/**
 * Applies the absolute local cap (`audit.retention.days`) in the background: every
 * `intervalMs`, and at once when `trigger()` is called after a settings change. Deletes in
 * bounded batches and yields to the event loop between them, so a large prune never stalls ingest.
 */
export class RetentionPruner {
  readonly #store: AuditStore;
  readonly #options: RetentionPrunerOptions;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<PruneResult> | undefined;
  #rerun = false;
  #closed = false;

  constructor(store: AuditStore, options: RetentionPrunerOptions) {
    this.#store = store;
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  start(): void {
    if (this.#closed || this.#timer) return;
    this.#timer = setInterval(() => {
      this.trigger().catch(() => undefined);
    }, this.#options.intervalMs);
    this.#timer.unref();
  }

  /**
   * Runs a prune now. If one is running, it runs once more after it, so a lowered retention
   * is applied in full; concurrent callers share that run.
   */
  trigger(): Promise<PruneResult> {
    if (this.#running) {
      this.#rerun = true;
      return this.#running;
    }
    this.#running = this.#runUntilSettled().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #runUntilSettled(): Promise<PruneResult> {
    const total: PruneResult = { deleted: 0, batches: 0 };
    do {
      this.#rerun = false;
      try {
        const policy = await this.#options.policy(this.#now());
        const result = await this.#store.pruneBefore(
          policy.cutoffMs,
          this.#options.batchSize,
          async () => {
            await yieldToEventLoop();
            return !this.#closed;
          },
          policy.maxSeq,
        );
        total.deleted += result.deleted;
        total.batches += result.batches;
        if (result.deleted > 0) this.#options.onPruned?.(result);
      } catch (err) {
        this.#options.onError?.(err);
        throw err;
      }
    } while (this.#rerun && !this.#closed);
    return total;
  }

  /** Stops the timer and waits for a running prune to stop at its next batch. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running?.catch(() => undefined);
  }
}
