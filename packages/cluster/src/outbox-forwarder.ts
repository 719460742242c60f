import { appendForwarded, type AuditStore, type EventIdConflict } from '@auditlake/store';
import type { Clock } from './clock.js';
import type { ClusterLog, LeaderElector } from './leader-elector.js';
import { markTimeAssigned, newIdFlagsOf, newIdsOf, parseForwardedEvent, type PeerTransport } from './protocol.js';

/** How long a forward waits for the leader's answer before it is given up and sent again. */
export const FORWARD_TIMEOUT_MS = 10_000;

export interface OutboxForwarderOptions {
  store: AuditStore;
  elector: LeaderElector;
  transport: PeerTransport;
  clock: Clock;
  nodeId: string;
  /** `auditlake.metadata.forward.max.attempts`: failures in a row before the warning. */
  maxAttempts: number;
  /** `auditlake.metadata.forward.queue.capacity`: outbox size above which a warning is logged. */
  queueCapacity: number;
  /** Events sent per request to the leader. */
  batchSize: number;
  log: ClusterLog;
  onForwarded: (count: number) => void;
  onAttemptsExhausted: () => void;
  onOverCapacity: () => void;
  /** This node, leading, ordered its own outbox and refused events of it as eventId conflicts. */
  onConflicts: (conflicts: readonly EventIdConflict[]) => Promise<void>;
}

/** Conflicting eventIds named in a warning about a forward; the leader's record names them all. */
const CONFLICTS_LOGGED_MAX = 20;

/**
 * Most JSON characters one forward carries: at most 3 UTF-8 bytes each, so a forward stays
 * under the leader's 64 MiB body limit however large the events are. A forward over that limit
 * would be refused every time it was retried and hold up everything queued behind it.
 */
export const FORWARD_CHARS_MAX = 16 * 1024 * 1024;

/** The oldest entries that fit in `maxChars` (always at least one: a single event is far smaller). */
export function limitForwardBatch<T extends { json: string }>(entries: readonly T[], maxChars: number): T[] {
  let chars = 0;
  let end = 0;
  while (end < entries.length) {
    chars += (entries[end] as T).json.length;
    if (end > 0 && chars > maxChars) break;
    end++;
  }
  return entries.slice(0, end);
}

/** First pause after a failed forward; it doubles up to RETRY_PAUSE_MS_MAX. */
const RETRY_PAUSE_MS_MIN = 100;
const RETRY_PAUSE_MS_MAX = 5000;

/**
 * Drains the outbox to the leader, in order, asynchronously: ingest never waits for it. A
 * batch leaves the outbox only after the leader has stored it; the leader de-duplicates by
 * eventId, so re-sending after a lost answer is safe. Beyond the reference, a batch is never
 * given up: after `maxAttempts` failures (or with the outbox over capacity) a warning is
 * logged and counted, and the events stay until a leader answers.
 */
export class OutboxForwarder {
  readonly #options: OutboxForwarderOptions;
  readonly #abort = new AbortController();
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #overCapacity = false;

  constructor(options: OutboxForwarderOptions) {
    this.#options = options;
  }

  start(): void {
    this.#loop = this.#run();
  }

  /** Something was added to the outbox: forward it now rather than at the next poll. */
  kick(): void {
    this.#wake?.();
  }

  /** Waits `ms`, or less when kicked or closed (the listener is removed either way). */
  async #idle(ms: number): Promise<void> {
    const signal = this.#abort.signal;
    await new Promise<void>((resolve) => {
      const timer = this.#options.clock.setTimer(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.#wake = done;
      function done() {
        timer.cancel();
        signal.removeEventListener('abort', done);
        resolve();
      }
    });
    this.#wake = undefined;
  }

  /**
   * The pause before retrying a failed forward, cut short when a different leader appears:
   * a backoff grown against a dead leader must not delay forwarding to its successor.
   */
  async #pauseBeforeRetry(ms: number): Promise<void> {
    const failedAgainst = this.#options.elector.leader?.url;
    const clock = this.#options.clock;
    const until = clock.monotonicMs() + ms;
    while (!this.#abort.signal.aborted && clock.monotonicMs() < until) {
      await this.#idle(Math.min(100, until - clock.monotonicMs()));
      const leader = this.#options.elector.leader?.url;
      if (leader !== undefined && leader !== failedAgainst) return;
    }
  }

  async #run(): Promise<void> {
    const { store, signal } = { store: this.#options.store, signal: this.#abort.signal };
    let failures = 0;
    while (!signal.aborted) {
      if (store.outboxCount === 0) {
        await this.#idle(500);
        continue;
      }
      this.#checkCapacity();
      try {
        await this.#forwardOnce();
        failures = 0;
      } catch (err) {
        failures++;
        if (failures === this.#options.maxAttempts) {
          this.#options.onAttemptsExhausted();
          this.#options.log.warn(
            { attempts: failures, waiting: store.outboxCount, err: String(err) },
            'forwarding to the leader failed repeatedly; the events stay in the outbox on this node and are re-sent once a leader answers',
          );
        }
        await this.#pauseBeforeRetry(Math.min(RETRY_PAUSE_MS_MAX, RETRY_PAUSE_MS_MIN * 2 ** Math.min(failures - 1, 10)));
      }
    }
  }

  #checkCapacity(): void {
    const over = this.#options.store.outboxCount > this.#options.queueCapacity;
    if (over && !this.#overCapacity) {
      this.#options.onOverCapacity();
      this.#options.log.warn(
        { waiting: this.#options.store.outboxCount, capacity: this.#options.queueCapacity },
        'more events wait to be forwarded than the queue capacity; they are kept in the outbox, not dropped',
      );
    }
    this.#overCapacity = over;
  }

  async #forwardOnce(): Promise<void> {
    const { store, elector, transport } = this.#options;
    const batch = limitForwardBatch(await store.readOutbox(this.#options.batchSize), FORWARD_CHARS_MAX);
    if (batch.length === 0) return;
    const events = batch.map((entry) => entry.json);
    // Read once: a retry of this batch reads the entries again and finds none of them new.
    const newIdFlags = newIdFlagsOf(batch);
    if (elector.isLeader()) {
      // This node leads now (e.g. events diverted on rejoin, or received before it won): order them here.
      const encoded = markTimeAssigned(events.map(parseForwardedEvent), newIdFlags);
      const result = await appendForwarded(store, encoded, { freshIds: newIdsOf(encoded, newIdFlags), sequencer: elector.sequencer });
      if (result.conflicts.length > 0) await this.#options.onConflicts(result.conflicts);
    } else {
      const leader = elector.leader;
      if (leader === undefined) throw new Error('no leader is known');
      const request = { nodeId: this.#options.nodeId, term: elector.knownTerm, events };
      const response = await transport.forward(leader.url, newIdFlags === undefined ? request : { ...request, newIdFlags }, FORWARD_TIMEOUT_MS);
      if (response.heldByTier !== undefined) store.noteHeldByTier(response.heldByTier);
      const conflicts = response.conflicts ?? [];
      // Refused for good (the first event under each id stays), and recorded on the leader:
      // they leave the outbox with the rest, and this node's log says so too.
      if (conflicts.length > 0) {
        this.#options.log.warn(
          { leader: leader.nodeId, conflicts: conflicts.length, eventIds: conflicts.slice(0, CONFLICTS_LOGGED_MAX).map((c) => c.eventId) },
          'the leader refused forwarded events whose eventId holds an event with other content (the first stored is kept); it recorded them as an audit:EventIdConflict event',
        );
      }
    }
    await store.deleteOutbox(batch.map((entry) => entry.key));
    this.#options.onForwarded(events.length);
  }

  async close(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
  }
}
