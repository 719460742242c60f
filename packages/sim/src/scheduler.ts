import { createHash, type Hash } from 'node:crypto';
import { IoQuiescence } from './io-quiescence.js';
import type { Random } from './random.js';

/**
 * Something events can belong to: a simulated process. Its events are dropped once it has
 * crashed (its incarnation moved on) and held back while it is paused, as SIGSTOP holds a
 * process's timers and incoming messages until SIGCONT.
 */
export interface EventOwner {
  readonly name: string;
  readonly incarnation: number;
  readonly paused: boolean;
  /** Keeps an event that fell due while paused, to run at resume. */
  park(event: ScheduledEvent): void;
}

export interface ScheduledEvent {
  atMs: number;
  order: number;
  label: string;
  owner: EventOwner | undefined;
  incarnation: number;
  run: () => void;
  cancelled: boolean;
}

/** A scheduled event's handle. */
export interface EventHandle {
  cancel(): void;
}

/** Virtual time starts here (ms since the epoch), so wall-clock values look like real ones. */
export const EPOCH_MS = Date.UTC(2030, 0, 1);

/**
 * Runs a simulation: virtual time, one queue of events (timers, message deliveries, faults),
 * and after each event every piece of native I/O it caused finishes before the next one is
 * taken. With a seeded Random for every choice, a seed replays exactly; `trace` is a digest
 * of every event taken, to prove it.
 */
export class Scheduler {
  readonly random: Random;
  #nowMs = 0;
  #order = 0;
  readonly #heap: ScheduledEvent[] = [];
  readonly #io = new IoQuiescence();
  readonly #trace: Hash = createHash('sha256');
  #steps = 0;

  constructor(random: Random) {
    this.random = random;
  }

  /** Virtual milliseconds since the simulation started. */
  get nowMs(): number {
    return this.#nowMs;
  }

  get steps(): number {
    return this.#steps;
  }

  /** A digest of every event taken so far (label and time): equal digests, equal runs. */
  traceDigest(): string {
    return this.#trace.copy().digest('hex').slice(0, 16);
  }

  /** Starts waiting for native I/O after each step. */
  open(): void {
    this.#io.enable();
  }

  close(): void {
    this.#io.disable();
  }

  /** Lets every piece of native work started so far finish (e.g. after setting nodes up). */
  settle(): Promise<void> {
    return this.#io.settle();
  }

  /** Runs `run` `delayMs` from now, unless cancelled, or dropped/held by its owner's state. */
  schedule(delayMs: number, label: string, run: () => void, owner?: EventOwner): EventHandle {
    const event: ScheduledEvent = { atMs: this.#nowMs + Math.max(0, delayMs), order: this.#order++, label, owner, incarnation: owner?.incarnation ?? 0, run, cancelled: false };
    this.#push(event);
    return { cancel: () => void (event.cancelled = true) };
  }

  /** Puts events a paused owner held back into the queue again, due now, in their order. */
  release(events: readonly ScheduledEvent[]): void {
    for (const event of events) this.#push({ ...event, atMs: this.#nowMs, order: this.#order++ });
  }

  /** Takes the next event, if any is due by `untilMs`; false when none is. */
  async step(untilMs: number): Promise<boolean> {
    for (;;) {
      const next = this.#heap[0];
      if (next === undefined || next.atMs > untilMs) return false;
      this.#pop();
      if (next.cancelled) continue;
      const owner = next.owner;
      if (owner !== undefined && owner.incarnation !== next.incarnation) continue;
      this.#nowMs = Math.max(this.#nowMs, next.atMs);
      if (owner?.paused) {
        owner.park(next);
        continue;
      }
      this.#steps++;
      this.#trace.update(`${this.#nowMs}:${next.label};`);
      next.run();
      await this.#io.settle();
      return true;
    }
  }

  /** Runs until `predicate` holds (checked after every step) or `forMs` have passed; true if it held. */
  async runUntil(predicate: () => boolean, forMs: number): Promise<boolean> {
    const untilMs = this.#nowMs + forMs;
    for (;;) {
      if (predicate()) return true;
      if (!(await this.step(untilMs))) {
        this.#nowMs = Math.max(this.#nowMs, untilMs);
        return predicate();
      }
    }
  }

  /** Runs every event due in the next `forMs`. */
  async runFor(forMs: number): Promise<void> {
    await this.runUntil(() => false, forMs);
  }

  #push(event: ScheduledEvent): void {
    const heap = this.#heap;
    heap.push(event);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i] as ScheduledEvent, heap[parent] as ScheduledEvent)) break;
      [heap[i], heap[parent]] = [heap[parent] as ScheduledEvent, heap[i] as ScheduledEvent];
      i = parent;
    }
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop() as ScheduledEvent;
    if (heap.length === 0) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < heap.length && before(heap[left] as ScheduledEvent, heap[smallest] as ScheduledEvent)) smallest = left;
      if (right < heap.length && before(heap[right] as ScheduledEvent, heap[smallest] as ScheduledEvent)) smallest = right;
      if (smallest === i) return;
      [heap[i], heap[smallest]] = [heap[smallest] as ScheduledEvent, heap[i] as ScheduledEvent];
      i = smallest;
    }
  }
}

function before(a: ScheduledEvent, b: ScheduledEvent): boolean {
  return a.atMs < b.atMs || (a.atMs === b.atMs && a.order < b.order);
}
