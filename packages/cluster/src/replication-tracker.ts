import type { Clock, Timer } from './clock.js';

/** A standby's progress as the leader last heard it (the `after` of its latest pull). */
export interface StandbyProgress {
  nodeId: string;
  appliedSeq: number;
  heardAtMs: number;
}

interface Waiter {
  seq: number;
  resolve: (replicated: boolean) => void;
  timer: Timer;
}

/**
 * The leader's record of how far each standby has applied the log, and the waiters of
 * `?ack=replicated` requests: each resolves once any standby has applied its seq.
 */
export class ReplicationTracker {
  readonly #clock: Clock;
  readonly #progress = new Map<string, StandbyProgress>();
  #waiters: Waiter[] = [];

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  record(nodeId: string, appliedSeq: number): void {
    const previous = this.#progress.get(nodeId);
    this.#progress.set(nodeId, { nodeId, appliedSeq: Math.max(appliedSeq, previous?.appliedSeq ?? 0), heardAtMs: this.#clock.wallMs() });
    this.#waiters = this.#waiters.filter((waiter) => {
      if (appliedSeq < waiter.seq) return true;
      waiter.timer.cancel();
      waiter.resolve(true);
      return false;
    });
  }

  /** Resolves true once a standby has applied `seq`, false after `timeoutMs`. */
  waitForAny(seq: number, timeoutMs: number): Promise<boolean> {
    for (const p of this.#progress.values()) if (p.appliedSeq >= seq) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        seq,
        resolve,
        timer: this.#clock.setTimer(() => {
          this.#waiters = this.#waiters.filter((w) => w !== waiter);
          resolve(false);
        }, timeoutMs),
      };
      this.#waiters.push(waiter);
    });
  }

  get progress(): StandbyProgress[] {
    return [...this.#progress.values()];
  }

  /** Fails every waiter (the node is stopping). */
  close(): void {
    for (const waiter of this.#waiters) {
      waiter.timer.cancel();
      waiter.resolve(false);
    }
    this.#waiters = [];
  }
}
