import { AuditError, AuditErrorCode } from '@auditlake/model';

/** A lookup's answer did not come within its time: it waited for a turn or ran that long. */
export class ResendLookupTimeout extends Error {
  override readonly name = 'ResendLookupTimeout';
}

/** Every turn taken and the queue full: the request is refused (429 with Retry-After), nothing of it stored. */
export class ResendLookupsBusy extends AuditError {
  constructor(running: number, waiting: number) {
    super(
      AuditErrorCode.LIMIT_EXCEEDED,
      `${running} tier lookups for events that may re-send ones retention deleted are running and ${waiting} waiting (auditlake.ingest.resend.lookup.concurrency); nothing of this request was stored, retry it`,
      { retryable: true },
    );
  }
}

interface Waiter {
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
 */
export class ResendLookupGate {
  readonly #running: number;
  readonly #waiting: number;
  #active = 0;
  readonly #queue: Waiter[] = [];

  constructor(limits: { running: number; waiting: number }) {
    if (!Number.isSafeInteger(limits.running) || limits.running < 1) throw new TypeError(`running must be a positive integer, got ${limits.running}`);
    if (!Number.isSafeInteger(limits.waiting) || limits.waiting < 0) throw new TypeError(`waiting must be a non-negative integer, got ${limits.waiting}`);
    this.#running = limits.running;
    this.#waiting = limits.waiting;
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
   * Rejects at once with {@link ResendLookupsBusy} when every turn is taken and the queue is full.
   */
  run<T>(lookup: () => Promise<T>, timeoutMs: number, timeoutMessage: string): Promise<T> {
    if (this.#active >= this.#running && this.#queue.length >= this.#waiting) {
      return Promise.reject(new ResendLookupsBusy(this.#active, this.#queue.length));
    }
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const waiter: Waiter = {
        start: () => {
          this.#active++;
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
      if (this.#active < this.#running) waiter.start();
      else this.#queue.push(waiter);
    });
  }

  #startNext(): void {
    while (this.#active < this.#running && this.#queue.length > 0) (this.#queue.shift() as Waiter).start();
  }
}
