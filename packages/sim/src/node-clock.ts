import type { Clock, Timer } from '@auditlake/cluster';
import { EPOCH_MS, type EventOwner, type Scheduler } from './scheduler.js';

/**
 * A simulated node's clock: monotonic time is the simulation's, the wall clock is off by the
 * node's skew, and timers are events the node owns (held while it is paused, dropped when it
 * crashes).
 */
export class NodeClock implements Clock {
  readonly #scheduler: Scheduler;
  readonly #owner: EventOwner;
  readonly #skewMs: number;

  constructor(scheduler: Scheduler, owner: EventOwner, skewMs: number) {
    this.#scheduler = scheduler;
    this.#owner = owner;
    this.#skewMs = skewMs;
  }

  monotonicMs(): number {
    return this.#scheduler.nowMs;
  }

  wallMs(): number {
    return EPOCH_MS + this.#scheduler.nowMs + this.#skewMs;
  }

  setTimer(callback: () => void, delayMs: number): Timer {
    return this.#scheduler.schedule(delayMs, `${this.#owner.name} timer`, callback, this.#owner);
  }
}
