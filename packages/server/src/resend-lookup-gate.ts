import { AuditError, AuditErrorCode } from '@auditlake/model';

/** The sender of lookups no sender was given for: bound by the overall limits only. */
const NO_SENDER = '';

/** A lookup's answer did not come within its time: it waited for a turn or ran that long. */
export class ResendLookupTimeout extends Error {
  override readonly name = 'ResendLookupTimeout';
}

/** Every turn taken and the queue full: the request is refused (429 with Retry-After), nothing of it stored. */
export class ResendLookupsBusy extends AuditError {
  constructor(running: number, waiting: number, ofSender?: { sender: string; waiting: number }) {
    super(
      AuditErrorCode.LIMIT_EXCEEDED,
      ofSender === undefined
        ? `${running} tier lookups for events that may re-send ones retention deleted are running and ${waiting} waiting (auditlake.ingest.resend.lookup.concurrency); nothing of this request was stored, retry it`
        : `${ofSender.waiting} tier lookups of "${ofSender.sender}" for events that may re-send ones retention deleted are waiting, as many as one sender may (a quarter of the queue; auditlake.ingest.resend.lookup.concurrency); nothing of this request was stored, retry it`,
      { retryable: true },
    );
  }
}

interface Waiter {
  sender: string;
  start(): void;
}

/**
 * Bounds the tier lookups ingest makes for events that may re-send one retention deleted
 * (TieringService.tieredCopies). Such a lookup reads tier files, and one that outlived its
 * timeout goes on reading until it ends: unbounded, a client sending old-timed events under new
 * ids — cheap to send, each batch a lookup — piled up reads of the bucket and the memory they
 * hold without limit. So at most `running` lookups run at once (one past its timeout keeps its
 * turn until it ends), at most `waiting` more wait for a turn, and a request beyond both is
 * refused at once: AUDIT_LIMIT_EXCEEDED, retryable (429 with Retry-After), nothing stored, as
 * backpressure for a client replaying a large spool. Ingest that needs no lookup never comes here.
 * Within those bounds, no sender (a principal, a forwarding node) may hold more than half the
 * turns or a quarter of the queue, and turns go first to the senders holding the fewest.
 */
export class ResendLookupGate {
  readonly #running: number;
  readonly #waiting: number;
  /** Turns one sender may hold at once: half of them, so others' lookups always find one (with two or more). */
  readonly #runningPerSender: number;
  /** Places in the queue one sender may hold: a quarter, so a flood of one sender leaves room for others. */
  readonly #waitingPerSender: number;
  #active = 0;
  /** Turns held, by sender. */
  readonly #activeBy = new Map<string, number>();
  readonly #queue: Waiter[] = [];

  constructor(limits: { running: number; waiting: number }) {
    if (!Number.isSafeInteger(limits.running) || limits.running < 1) throw new TypeError(`running must be a positive integer, got ${limits.running}`);
    if (!Number.isSafeInteger(limits.waiting) || limits.waiting < 0) throw new TypeError(`waiting must be a non-negative integer, got ${limits.waiting}`);
    this.#running = limits.running;
    this.#waiting = limits.waiting;
    this.#runningPerSender = Math.max(1, Math.ceil(limits.running / 2));
    this.#waitingPerSender = Math.ceil(limits.waiting / 4);
  }

  /** Lookups started and not ended (timed-out ones included). */
  get running(): number {
    return this.#active;
  }

  /** Lookups waiting for a turn. */
  get waiting(): number {
    return this.#queue.length;
  }

  /**
   * Runs `lookup` in a turn: its answer, or a {@link ResendLookupTimeout} once `timeoutMs`
   * passed since this call (waiting included; a started lookup goes on and keeps its turn).
   * Rejects at once with {@link ResendLookupsBusy} when no turn is free for it and the queue, or
   * its sender's share of it, is full. `sender`: who the lookup is for (a principal, a forwarding
   * node; none given: bound by the overall limits only). A turn that frees goes to the waiting
   * sender holding the fewest: one sender sending old-timed events under new ids (each request a
   * lookup) kept every turn, and a genuine spool replay of another was refused (review). Passed
   * along, not kept in an AsyncLocalStorage: on Node 20 that turns on a hook for every promise
   * the process makes.
   */
  run<T>(lookup: () => Promise<T>, timeoutMs: number, timeoutMessage: string, sender: string = NO_SENDER): Promise<T> {
    if (!this.#mayStart(sender)) {
      if (this.#queue.length >= this.#waiting) return Promise.reject(new ResendLookupsBusy(this.#active, this.#queue.length));
      const waitingOfSender = this.#queue.filter((waiter) => waiter.sender === sender).length;
      if (sender !== NO_SENDER && waitingOfSender >= this.#waitingPerSender) return Promise.reject(new ResendLookupsBusy(this.#active, this.#queue.length, { sender, waiting: waitingOfSender }));
    }
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const waiter: Waiter = {
        sender,
        start: () => {
          this.#active++;
          this.#activeBy.set(sender, (this.#activeBy.get(sender) ?? 0) + 1);
          // Called at once; a lookup that throws before returning a promise rejects like one that fails.
          const work = (async () => lookup())();
          work.then(
            (value) => {
              if (settled) return;
              settled = true;
              clearTimeout(timer);
              resolve(value);
            },
            (err: unknown) => {
              if (settled) return;
              settled = true;
              clearTimeout(timer);
              reject(err instanceof Error ? err : new Error(String(err)));
            },
          ).finally(() => {
            this.#active--;
            const held = (this.#activeBy.get(sender) ?? 1) - 1;
            if (held === 0) this.#activeBy.delete(sender);
            else this.#activeBy.set(sender, held);
            this.#startNext();
          });
        },
      };
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        // Still waiting: it gives up its place and never starts.
        const at = this.#queue.indexOf(waiter);
        if (at >= 0) this.#queue.splice(at, 1);
        reject(new ResendLookupTimeout(at >= 0 ? `${timeoutMessage}; it waited for a turn behind ${this.#active} running lookups` : timeoutMessage));
      }, timeoutMs);
      if (this.#mayStart(sender)) waiter.start();
      else this.#queue.push(waiter);
    });
  }

  /** Whether a lookup of `sender` may start now: a turn is free, and the sender holds fewer than its share (no share for nobody in particular). */
  #mayStart(sender: string): boolean {
    return this.#active < this.#running && (sender === NO_SENDER || (this.#activeBy.get(sender) ?? 0) < this.#runningPerSender);
  }

  /** Starts waiting lookups while turns are free: each time, the earliest of the sender holding the fewest turns. */
  #startNext(): void {
    while (this.#active < this.#running) {
      let next = -1;
      for (let i = 0; i < this.#queue.length; i++) {
        const sender = (this.#queue[i] as Waiter).sender;
        if (!this.#mayStart(sender)) continue;
        if (next < 0 || (this.#activeBy.get(sender) ?? 0) < (this.#activeBy.get((this.#queue[next] as Waiter).sender) ?? 0)) next = i;
      }
      if (next < 0) return;
      (this.#queue.splice(next, 1)[0] as Waiter).start();
    }
  }
}
