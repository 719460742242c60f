import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';
import type { Clock } from './clock.js';
import type { LeaderElector } from './leader-elector.js';
import type { MetaHash } from './meta-hash.js';
import { TERM_STARTS_META, type PullRequest, type PullResponse, type TermStart } from './protocol.js';
import type { ReplicationTracker } from './replication-tracker.js';

/** Most entries one pull answer carries. */
export const PULL_ENTRIES_MAX = 10_000;

/**
 * Answers pulls: a leader serving its standbys (long poll, divergence check, metadata), or
 * any node serving a new leader's catch-up (only entries that extend a matching log).
 */
export class LogSource {
  readonly #store: AuditStore;
  readonly #elector: LeaderElector;
  readonly #tracker: ReplicationTracker;
  readonly #metaHash: MetaHash;
  readonly #nodeId: string;
  readonly #clock: Clock;
  readonly #waiting = new Set<() => void>();
  #closed = false;

  constructor(options: { store: AuditStore; elector: LeaderElector; tracker: ReplicationTracker; metaHash: MetaHash; nodeId: string; clock: Clock }) {
    this.#clock = options.clock;
    this.#store = options.store;
    this.#elector = options.elector;
    this.#tracker = options.tracker;
    this.#metaHash = options.metaHash;
    this.#nodeId = options.nodeId;
  }

  async pull(request: PullRequest): Promise<PullResponse> {
    this.#elector.observeTerm(request.term);
    const limit = Math.max(1, Math.min(request.limit, PULL_ENTRIES_MAX));
    if (request.catchUp) return this.#answer(request, await this.#catchUpEntries(request, limit), false);
    if (!this.#elector.isLeader()) {
      throw new AuditError(AuditErrorCode.NOT_LEADER, `node ${this.#nodeId} is not the leader`, { retryable: true });
    }
    this.#tracker.record(request.nodeId, request.after);
    const divergedFrom = await this.#divergence(request);
    if (divergedFrom !== undefined) return { ...(await this.#answer(request, [], false)), divergedFrom };
    let entries = await this.#store.readEncodedBySeq(request.after, limit);
    if (entries.length === 0 && request.waitMs > 0) {
      await this.#waitForGrowth(request.waitMs);
      entries = await this.#store.readEncodedBySeq(request.after, limit);
    }
    return this.#answer(request, entries, true);
  }

  async #answer(request: PullRequest, entries: Uint8Array[], withMeta: boolean): Promise<PullResponse> {
    const { hash, meta } = await this.#metaHash.current();
    const response: PullResponse = {
      term: this.#elector.knownTerm,
      nodeId: this.#nodeId,
      entries,
      lastSeq: this.#store.position.lastSeq,
      metaHash: hash,
    };
    if (withMeta && request.metaHash !== hash) response.meta = meta;
    return response;
  }

  /**
   * The asker's log has entries this leader's log does not: those after the start of the
   * first term later than the asker's last entry's term (as in Raft's log matching).
   */
  async #divergence(request: PullRequest): Promise<number | undefined> {
    if (request.after === 0) return undefined;
    const starts = (await this.#store.getMeta<TermStart[]>(TERM_STARTS_META)) ?? [];
    const next = starts.filter((s) => s.term > request.lastTerm).sort((a, b) => a.term - b.term)[0];
    if (next !== undefined && next.firstSeq <= request.after) return next.firstSeq;
    return undefined;
  }

  /** Entries after the asker's end, only if this node's entry there has the same term. */
  async #catchUpEntries(request: PullRequest, limit: number): Promise<Uint8Array[]> {
    if (request.after > 0) {
      const mine = await this.#store.getBySeq(request.after);
      if (mine === undefined || mine.term !== request.lastTerm) return [];
    }
    return this.#store.readEncodedBySeq(request.after, limit);
  }

  #waitForGrowth(ms: number): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        timer.cancel();
        unsubscribe();
        this.#waiting.delete(done);
        resolve();
      };
      const timer = this.#clock.setTimer(done, ms);
      const unsubscribe = this.#store.onLogGrowth(done);
      this.#waiting.add(done);
    });
  }

  /** Answers every waiting long poll at once (the node is stopping). */
  close(): void {
    this.#closed = true;
    for (const done of [...this.#waiting]) done();
  }
}
