import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';
import type { Clock } from './clock.js';
import type { LeaderElector } from './leader-elector.js';
import type { MetaHash } from './meta-hash.js';
import type { ErasedIdsPage } from '@auditlake/store';
import type { PullRequest, PullResponse } from './protocol.js';
import type { ReplicationTracker } from './replication-tracker.js';

/** Longest erased-id cursor an asker may send (an eventId is at most a few hundred bytes). */
const ERASED_AFTER_CHARS_MAX = 4096;

/**
 * Whether `store` can give the page of erased ids a pull asks for (PullRequest.erasedAfter): a
 * cursor that can be an id, and a store whose set is complete for the asker — it owes none
 * itself and holds the asker's highest skipped seq in the same term, with the same chain hash
 * where both know it (a term number can be handed out twice; erased-ids-sync.ts says why only
 * such a set is complete).
 */
async function erasedIdsGivable(request: PullRequest, store: AuditStore): Promise<boolean> {
  const through = request.erasedThrough;
  if (typeof request.erasedAfter !== 'string' || request.erasedAfter.length > ERASED_AFTER_CHARS_MAX) return false;
  if (typeof through !== 'object' || through === null || !Number.isSafeInteger(through.seq) || !Number.isSafeInteger(through.term)) return false;
  if (store.erasedIdsOwed !== undefined || through.seq > store.position.lastSeq || store.termAt(through.seq) !== through.term) return false;
  if (typeof through.chainHash !== 'string') return true;
  const mine = await store.knownChainHashAt(through.seq);
  return mine === undefined || mine === through.chainHash;
}

/** The page a pull asks for when `store` can give it (erasedIdsGivable), naming the seq it was given for; else undefined. */
async function erasedIdsGiven(request: PullRequest, store: AuditStore): Promise<ErasedIdsPage | undefined> {
  if (!(await erasedIdsGivable(request, store))) return undefined;
  return { ...(await store.erasedIdsPage(request.erasedAfter as string)), throughSeq: (request.erasedThrough as { seq: number }).seq };
}

/** Most entries one pull answer carries. */
export const PULL_ENTRIES_MAX = 10_000;

export interface LogSourceOptions {
  store: AuditStore;
  elector: LeaderElector;
  tracker: ReplicationTracker;
  metaHash: MetaHash;
  nodeId: string;
  clock: Clock;
  /** A pull was answered with a mismatch: the asker's log diverged from this one. */
  onMismatch: (asker: string) => void;
  /**
   * A standby asked again, for the NOT_APPLYING_PULLS-th time in a row, from a seq this leader
   * had already sent it entries past (ReplicationTracker.sent): once per such run.
   */
  onNotApplying?: (standby: string, seq: number) => void;
}

/**
 * Answers pulls: a leader serving its standbys (long poll, log matching, metadata), or any
 * node serving a new leader's catch-up. Either way entries go only to an asker whose log
 * matches this one where it ends; anyone else is told this log's term boundaries, to find
 * where the two logs agree. Only a matched pull of the current term counts as a standby's
 * progress (ack=replicated rests on it).
 */
export class LogSource {
  readonly #options: LogSourceOptions;
  readonly #waiting = new Set<() => void>();
  #closed = false;

  constructor(options: LogSourceOptions) {
    this.#options = options;
  }

  async pull(request: PullRequest): Promise<PullResponse> {
    const { elector, store, tracker } = this.#options;
    elector.observeMessageTerm(request.term);
    tracker.pullHeard(request.nodeId);
    const limit = Math.max(1, Math.min(request.limit, PULL_ENTRIES_MAX));
    if (!request.catchUp && !elector.isLeader()) {
      throw new AuditError(AuditErrorCode.NOT_LEADER, `node ${this.#options.nodeId} is not the leader`, { retryable: true });
    }
    // Matching reads the chain hash (it may wait for LevelDB): a cut of this log meanwhile (a
    // leader adopting a tier's entries) voids it, so the progress recorded below never counts
    // entries the cut removed.
    const cuts = store.cutCount;
    const match = await this.#match(request);
    if (match === 'none' || store.cutCount !== cuts) {
      if (!request.catchUp) this.#options.onMismatch(request.nodeId);
      const response: PullResponse = { ...(await this.#header(request, false)), entries: [], mismatch: { termStarts: store.termStarts() } };
      // A new leader owed erased ids takes them also from a peer whose log ends before its own
      // (when it holds the skipped range: erasedIdsGiven).
      const erasedIds = request.catchUp ? await erasedIdsGiven(request, store) : undefined;
      if (erasedIds !== undefined) response.erasedIds = erasedIds;
      return response;
    }
    if (request.catchUp) return this.#withEntries(request, await this.#read(request.after, limit), false, match);
    // Matched: the asker holds this log up to `after`. That is progress only in the term this
    // node leads now, for an asker that knows the term (so it can refuse any older leader), and
    // only when proven (review: with a term handed out twice and the entry at `after` deleted
    // here by retention, a standby holding other entries under the same term was counted).
    const term = elector.leadingTerm;
    if (term !== undefined && request.term === term && match === 'proven') tracker.record(term, request.nodeId, request.after);
    let read = await this.#read(request.after, limit);
    // An asker owed erased ids gets its page now, when there is one to give: it asks again at once.
    if (read.entries.length === 0 && request.waitMs > 0 && !(await erasedIdsGivable(request, store))) {
      await this.#waitForGrowth(request.waitMs);
      // Deposed meanwhile: its log may be about to change; the asker should find the new leader.
      if (!elector.isLeader()) throw new AuditError(AuditErrorCode.NOT_LEADER, `node ${this.#options.nodeId} is no longer the leader`, { retryable: true });
      if ((await this.#match(request)) === 'none') return { ...(await this.#header(request, false)), entries: [], mismatch: { termStarts: store.termStarts() } };
      read = await this.#read(request.after, limit);
    }
    if (term !== undefined && request.term === term && read.entries.length > 0 && tracker.sent(term, request.nodeId, request.after)) {
      this.#options.onNotApplying?.(request.nodeId, request.after);
    }
    return this.#withEntries(request, read, true, match);
  }

  /** The entries after `after`, with where the log ended just before they were read. */
  async #read(after: number, limit: number): Promise<{ entries: Uint8Array[]; end: number }> {
    const end = this.#options.store.position.lastSeq;
    return { entries: await this.#options.store.readEncodedBySeq(after, limit), end };
  }

  /**
   * Whether this log holds the asker's last entry: the same term at its last seq, and the same
   * chain hash there when both logs know it (equal terms alone do not prove equal entries once
   * a term number was handed out twice; the chain hash commits to every entry up to it). This
   * log's hash there is also known where its retention deleted the entry at the end of a
   * deleted range. 'unproven': the asker sent its hash, this log (keeping the chain) knows none.
   */
  async #match(request: PullRequest): Promise<'proven' | 'unproven' | 'none'> {
    const { store } = this.#options;
    if (request.after === 0) return 'proven';
    if (request.after > store.position.lastSeq || store.termAt(request.after) !== request.lastTerm) return 'none';
    if (request.lastChainHash === undefined || !store.chainEnabled) return 'proven';
    const mine = (await store.chainHashAt(request.after)) ?? (await store.knownChainHashAt(request.after));
    if (mine === undefined) return 'unproven';
    return mine === request.lastChainHash ? 'proven' : 'none';
  }

  async #withEntries(request: PullRequest, { entries, end }: { entries: Uint8Array[]; end: number }, withMeta: boolean, match: 'proven' | 'unproven'): Promise<PullResponse> {
    const response: PullResponse = { ...(await this.#header(request, withMeta)), entries };
    if (match === 'proven') response.proven = true;
    // None after `after`, though the log reached past it before they were read: retention
    // deleted every entry in between (an entry appended since is not counted).
    if (entries.length === 0 && end > request.after) response.tailDeleted = { throughSeq: end, term: this.#options.store.termAt(end) };
    if (entries.length > 0) {
      const starts = this.#options.store.termStarts(request.after);
      if (starts.length > 0) response.termStarts = starts;
      // The entries skip a checkpoint record this log's retention deleted: the asker never gets
      // the record, so it gets the checkpoint (else the chain of checkpoints forks when it leads).
      // Likewise the ranges it deleted, so the asker's log verifies across them.
      const skipped = await this.#options.store.skippedByRetention(request.after, entries);
      if (skipped.checkpoint !== undefined) response.prunedCheckpoint = skipped.checkpoint;
      if (skipped.ranges !== undefined) response.prunedRanges = [...skipped.ranges];
      if (skipped.timeMax !== undefined) response.prunedTimeMax = skipped.timeMax;
    }
    // Read after the entries: every id an erasure record they skip named is in it by then.
    const erasedIds = await erasedIdsGiven(request, this.#options.store);
    if (erasedIds !== undefined) response.erasedIds = erasedIds;
    return response;
  }

  async #header(request: PullRequest, withMeta: boolean): Promise<Omit<PullResponse, 'entries'>> {
    const { hash, meta } = await this.#options.metaHash.current();
    const header: Omit<PullResponse, 'entries'> = {
      term: this.#options.elector.knownTerm,
      nodeId: this.#options.nodeId,
      lastSeq: this.#options.store.position.lastSeq,
      metaHash: hash,
    };
    if (withMeta && request.metaHash !== hash) header.meta = meta;
    return header;
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
      const timer = this.#options.clock.setTimer(done, ms);
      const unsubscribe = this.#options.store.onLogGrowth(done);
      this.#waiting.add(done);
    });
  }

  /** Answers every waiting long poll at once (the node is stopping). */
  close(): void {
    this.#closed = true;
    for (const done of [...this.#waiting]) done();
  }
}
