import { performance } from 'node:perf_hooks';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { AuditStore, PruneResult } from './audit-store.js';

export const DAY_MS = 24 * 60 * 60 * 1000;

/** What may be deleted now: events older than `cutoffMs`, and (when set) only with seq ≤ `maxSeq`. */
export interface PrunePolicy {
  cutoffMs: number;
  maxSeq?: number;
  /** Only events counted as tiered (AuditStore.pruneBefore): with tiering on, `maxSeq` is the tier's watermark. */
  tieredOnly?: boolean;
}

export interface RetentionPrunerOptions {
  intervalMs: number;
  batchSize: number;
  /**
   * Read at every run, so a settings change applies without a restart: the absolute cap alone
   * without tiering; with tiering, only tiered events, after the shorter of the two windows.
   */
  policy: (nowMs: number) => PrunePolicy | Promise<PrunePolicy>;
  /** The wall clock (default Date.now). */
  now?: () => number;
  /** A clock that never steps (default performance.now); see RetentionClock. */
  monotonicNow?: () => number;
  onPruned?: (result: PruneResult) => void;
  onError?: (err: unknown) => void;
  /**
   * Told when a run finds the wall clock further ahead of the steady clock than it was last
   * told (by a minute or more): retention then counts from the steady clock.
   */
  onClockAhead?: (wallMs: number, steadyMs: number) => void;
}

/** How much further ahead the wall clock must get before onClockAhead is told again. */
const CLOCK_AHEAD_REPORT_STEP_MS = 60_000;

/**
 * The time retention deletes by: the wall clock, but never ahead of the wall clock as it read
 * when the pruner started plus the monotonic time since. A wall clock stepped forward while the
 * node runs (a bad NTP source, a VM restored with a wrong clock, an operator's typo) would
 * otherwise make a tierless node delete every event up to the step at its next run, and
 * deleted events cannot be brought back; a step back only delays deletion, and is taken as it
 * is. A clock that was already ahead when the node started is not caught (nothing local tells
 * it from a right one); a restart accepts the clock as it then reads. Time the machine spends
 * suspended does not count on the monotonic clock either: deletion waits that much longer.
 */
export class RetentionClock {
  readonly #wallNow: () => number;
  readonly #monotonicNow: () => number;
  readonly #startWallMs: number;
  readonly #startMonotonicMs: number;

  constructor(wallNow: () => number, monotonicNow: () => number) {
    this.#wallNow = wallNow;
    this.#monotonicNow = monotonicNow;
    this.#startWallMs = wallNow();
    this.#startMonotonicMs = monotonicNow();
  }

  /** The wall clock and the steady one (the start's wall time carried on by monotonic time). */
  read(): { wallMs: number; steadyMs: number; nowMs: number } {
    const wallMs = this.#wallNow();
    // Whole milliseconds: the cutoff becomes a key bound, and a fraction would sort it wrongly.
    const steadyMs = Math.floor(this.#startWallMs + (this.#monotonicNow() - this.#startMonotonicMs));
    return { wallMs, steadyMs, nowMs: Math.min(wallMs, steadyMs) };
  }
}

/**
 * Applies the absolute local cap (`audit.retention.days`) in the background: every
 * `intervalMs`, and at once when `trigger()` is called after a settings change. Deletes in
 * bounded batches and yields to the event loop between them, so a large prune never stalls ingest.
 */
export class RetentionPruner {
  readonly #store: AuditStore;
  readonly #options: RetentionPrunerOptions;
  readonly #clock: RetentionClock;
  /** How far ahead of the steady clock the wall clock was when onClockAhead was last told. */
  #aheadReportedMs = 0;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<PruneResult> | undefined;
  #rerun = false;
  #closed = false;

  constructor(store: AuditStore, options: RetentionPrunerOptions) {
    this.#store = store;
    this.#options = options;
    this.#clock = new RetentionClock(options.now ?? Date.now, options.monotonicNow ?? (() => performance.now()));
  }

  /** The time this run deletes by (RetentionClock), telling onClockAhead of a new step. */
  #nowMs(): number {
    const { wallMs, steadyMs, nowMs } = this.#clock.read();
    const aheadMs = wallMs - steadyMs;
    // Back within a step of the steady clock: a later step forward is told again.
    if (aheadMs < CLOCK_AHEAD_REPORT_STEP_MS) this.#aheadReportedMs = 0;
    else if (aheadMs >= this.#aheadReportedMs + CLOCK_AHEAD_REPORT_STEP_MS) {
      this.#aheadReportedMs = aheadMs;
      this.#options.onClockAhead?.(wallMs, steadyMs);
    }
    return nowMs;
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
        const policy = await this.#options.policy(this.#nowMs());
        const result = await this.#store.pruneBefore(
          policy.cutoffMs,
          this.#options.batchSize,
          async () => {
            await yieldToEventLoop();
            return !this.#closed;
          },
          policy.maxSeq,
          policy.tieredOnly === true,
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
