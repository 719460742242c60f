import type { AuditStore, DivertResult } from '@auditlake/store';
import type { Clock } from './clock.js';
import type { ClusterLog, LeaderElector } from './leader-elector.js';
import type { MetaHash } from './meta-hash.js';
import { commonPrefix } from './log-matching.js';
import { erasedIdsAsk, skippedOf, type PeerTransport, type PullResponse, type TermStart } from './protocol.js';
import { sleep } from './sleep.js';

export interface ReplicationFollowerOptions {
  store: AuditStore;
  elector: LeaderElector;
  transport: PeerTransport;
  clock: Clock;
  metaHash: MetaHash;
  nodeId: string;
  /** Long-poll wait the leader may hold a pull for. */
  pullWaitMs: number;
  /** Called after replicated metadata was written (settings must be reloaded). */
  onMetaApplied: (meta: Record<string, unknown>) => void;
  /** Called after a divergent suffix moved to the outbox (the forwarder should run). */
  onDiverted: (diverted: DivertResult) => void;
  log: ClusterLog;
}

/**
 * Most entries a pull asks for. As the forward batch (cluster-node.ts): a standby applies each
 * answer as one LevelDB batch, and batches of a megabyte or two cost the least CPU per event.
 */
export const PULL_LIMIT_MAX = 2000;

/** How long a standby waits for its leader's answer to a pull that may wait `pullWaitMs` for new entries. */
export function pullTimeoutMs(pullWaitMs: number): number {
  return pullWaitMs + 5000;
}

/**
 * A standby's replication loop: pull from the leader after the local end of the log, stating
 * (seq, term) of that end; apply the answer in seq order with the leader's term boundaries,
 * and its metadata. When the leader's log does not hold that end, cut this log where the two
 * agree (found from both logs' term boundaries) and move the entries after it to the outbox,
 * to be forwarded again. Each matched pull tells the leader how far this standby holds its
 * log, which is how it tracks lag and `ack=replicated`.
 */
export class ReplicationFollower {
  readonly #options: ReplicationFollowerOptions;
  readonly #abort = new AbortController();
  #loop: Promise<void> | undefined;
  /**
   * Entries the next pull asks for: halved after a failed pull, doubled back (to
   * PULL_LIMIT_MAX) after each answered one. On a slow link an answer of 2,000 large entries
   * took longer than the pull's timeout every time, and the standby never caught up (review: a
   * 300 KB/s link, 1 KB events): a smaller answer arrives in time.
   */
  #limit = PULL_LIMIT_MAX;
  /**
   * This log's end the last time a leader matched it (its term, and its chain hash where both
   * know it), with the store's cut count then: that leader held every entry up to it.
   */
  #matched: { seq: number; cuts: number } | undefined;

  constructor(options: ReplicationFollowerOptions) {
    this.#options = options;
  }

  start(): void {
    this.#loop = this.#run();
  }

  async #run(): Promise<void> {
    const { elector, signal } = { elector: this.#options.elector, signal: this.#abort.signal };
    let failures = 0;
    while (!signal.aborted) {
      const leader = elector.leader;
      if (elector.role === 'leader' || leader === undefined || leader.nodeId === this.#options.nodeId) {
        await sleep(this.#options.clock, 50, signal);
        continue;
      }
      try {
        await this.#pullOnce(leader.url);
        failures = 0;
        this.#limit = Math.min(PULL_LIMIT_MAX, this.#limit * 2);
      } catch (err) {
        failures++;
        this.#limit = Math.max(1, Math.floor(this.#limit / 2));
        if (failures === 1 || failures % 50 === 0) this.#options.log.warn({ leader: leader.nodeId, err: String(err) }, 'replication pull failed; retrying');
        await sleep(this.#options.clock, Math.min(1000, 50 * failures), signal);
      }
    }
  }

  /**
   * The highest seq through which a leader matched this log, in the log as it is now (0 after a
   * cut since).
   */
  get matchedThroughSeq(): number {
    const matched = this.#matched;
    return matched !== undefined && matched.cuts === this.#options.store.cutCount ? matched.seq : 0;
  }

  /**
   * Whether a leader holds this log's entry at `seq`, as a matched pull proved: at or below
   * where it last matched this log, and above where this log took entries past a skip with no
   * chain hash linking them to it (AuditStore.unlinkedThrough: a match further on proves nothing
   * about the entries before such a join; review, with a term number handed out twice). What a
   * former leader needs to confirm `ack=replicated` for the events it ordered itself once it
   * follows another (its standbys' progress counted only in the term it led).
   */
  leaderHolds(seq: number): boolean {
    return seq <= this.matchedThroughSeq && seq > this.#options.store.unlinkedThrough;
  }

  async #pullOnce(leaderUrl: string): Promise<void> {
    const { store, elector, transport, metaHash } = this.#options;
    const cuts = store.cutCount;
    const position = store.position;
    const lastTerm = store.termAt(position.lastSeq);
    const lastChainHash = await store.chainHashAt(position.lastSeq);
    if (store.position.lastSeq !== position.lastSeq) return;
    const response = await transport.pull(
      leaderUrl,
      {
        nodeId: this.#options.nodeId,
        after: position.lastSeq,
        lastTerm,
        ...(lastChainHash !== undefined ? { lastChainHash } : {}),
        term: elector.knownTerm,
        limit: this.#limit,
        waitMs: this.#options.pullWaitMs,
        metaHash: (await metaHash.current()).hash,
        catchUp: false,
        ...(await erasedIdsAsk(store)),
      },
      pullTimeoutMs(this.#options.pullWaitMs),
    );
    // Fencing: an answer from an older term comes from a deposed leader.
    if (response.term < elector.knownTerm) return;
    elector.observeMessageTerm(response.term);
    // Became leader while the pull was in flight: the log is ours to order now.
    if (elector.role === 'leader') return;
    // The answer was matched against the log's end as it was when asked: nothing else may
    // have changed the log since.
    if (store.position.lastSeq !== position.lastSeq) return;
    if (response.mismatch !== undefined) {
      await this.#divert(response, response.mismatch.termStarts);
      return;
    }
    // Matched where this log ends, by its chain hash too where both know it: the leader holds it
    // up to there (log matching). By term alone after this log sent its hash, it proves nothing,
    // and nor does an answer that does not say (a leader of an earlier version).
    if (store.cutCount === cuts && response.proven === true) this.#matched = { seq: position.lastSeq, cuts };
    if (response.meta) {
      // The leader's metadata, whole: a name it does not hold goes (one a diverged log wrote).
      // Taken at once, also while this log is behind: a standby must run the settings its
      // leader confirmed it holds (it does once it holds their record), and holding them back
      // until it caught up let its retention delete events under the old settings (review).
      await store.replaceMeta(response.meta);
      this.#options.onMetaApplied(response.meta);
    }
    if (response.entries.length > 0) await store.applyReplicated(response.entries, response.termStarts ?? [], skippedOf(response));
    // Nothing sent though the leader's log goes on: its retention deleted it all, erasure
    // records maybe among it, and no entry will skip them here until it orders more.
    else if (response.tailDeleted !== undefined) await store.owedForTail(response.tailDeleted.throughSeq, response.tailDeleted.term);
    // After the entries: a skip among them starts the pages again, and this page is then not applied.
    if (response.erasedIds !== undefined) await store.applyErasedIdsPage(response.erasedIds);
  }

  /** Cuts this log where it stops agreeing with the leader's; what follows goes to the outbox. */
  async #divert(response: PullResponse, leaderStarts: readonly TermStart[]): Promise<void> {
    const { store } = this.#options;
    const position = store.position;
    const starts = store.termStarts();
    let agreed = commonPrefix({ starts, lastSeq: position.lastSeq }, { starts: leaderStarts, lastSeq: response.lastSeq });
    if (agreed === position.lastSeq) {
      // The leader's log reaches this log's end with the same term there, and still did not
      // match: the chain hashes differ, so one term number was given to two leaders (the
      // coordinator restarted empty while every node that knew it was away). The two logs agree
      // on every term boundary up to here, so this term's run starts at the same seq in both:
      // go back to before it (and further on the next pull, should an earlier run differ too).
      const run = starts.filter((start) => start.firstSeq <= position.lastSeq).at(-1);
      agreed = run === undefined ? 0 : run.firstSeq - 1;
    }
    // The store may cut further back (keptThrough): to the last seq whose chain hash it knows,
    // when its retention deleted the entry at `agreed`; the leader's entries are taken from there.
    const diverted = await store.divertSuffixToOutbox(agreed + 1);
    const kept = diverted.keptThrough ?? agreed;
    const back = kept < agreed ? `; cut back to seq ${kept}, the last whose chain hash this log kept (retention deleted the entries up to ${agreed}), to take the leader's entries from there` : '';
    this.#options.log.warn(
      { leader: response.nodeId, agreedThroughSeq: agreed, from: kept + 1, moved: diverted.moved, terms: diverted.terms },
      `the log diverged from the leader's after seq ${agreed}: moved ${diverted.moved} entries (by term: ${JSON.stringify(diverted.terms)}) to the outbox, to forward them again${back}`,
    );
    this.#options.onDiverted(diverted);
  }

  async close(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
  }
}
