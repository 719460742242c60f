import type { AuditStore } from '@auditlake/store';
import type { Clock } from './clock.js';
import type { ClusterLog } from './leader-elector.js';
import { erasedIdsAsk, type PeerTransport } from './protocol.js';

/** Most pages taken from one peer in one go (5,000 ids each: 50 million ids). */
const PAGES_PER_PEER_MAX = 10_000;

/**
 * How often a leader that still owes erased ids asks its peers again: a peer that holds them
 * all (the previous leader, restarted) may have come back since.
 */
export const ERASED_IDS_RETRY_MS = 5_000;

export interface ErasedIdsCatchUpOptions {
  store: AuditStore;
  transport: PeerTransport;
  clock: Clock;
  nodeId: string;
  /** How long one page request may take. */
  timeoutMs: number;
  /** A peer answered with a later term than the one this node leads. */
  observeTerm: (term: number) => void;
  log: ClusterLog;
}

/**
 * A leader taking the erased ids its log owes itself (it skipped seqs its leader's retention
 * deleted; store/erased-ids-sync.ts) from its peers, page by page, before it orders anything
 * and then again every ERASED_IDS_RETRY_MS while it still owes them. A standby takes them with
 * its pulls (ReplicationFollower); a leader pulls from no one, so without this it would owe
 * them until deposed. A peer answers only with a complete set (LogSource), so a page that
 * comes is one to keep.
 */
export class ErasedIdsCatchUp {
  readonly #options: ErasedIdsCatchUpOptions;
  #running: Promise<void> | undefined;
  #lastTryMs = Number.NEGATIVE_INFINITY;

  constructor(options: ErasedIdsCatchUpOptions) {
    this.#options = options;
  }

  /** Takes them from the first of `peers` that can give them all; answers whether none are owed now. */
  async takeFrom(peers: ReadonlyArray<{ nodeId: string; url: string }>, term: number, stillLeader: () => boolean): Promise<boolean> {
    const { store, transport, nodeId, timeoutMs } = this.#options;
    for (const peer of peers) {
      for (let page = 0; page < PAGES_PER_PEER_MAX && store.erasedIdsOwed !== undefined && stillLeader(); page++) {
        const { lastSeq } = store.position;
        let response;
        try {
          // limit 1: only the page is wanted (a leader takes no entries from a peer here).
          response = await transport.pull(peer.url, { nodeId, after: lastSeq, lastTerm: store.termAt(lastSeq), term, limit: 1, waitMs: 0, metaHash: '', catchUp: true, ...(await erasedIdsAsk(store)) }, timeoutMs);
        } catch {
          break; // a peer that cannot answer gives nothing
        }
        if (response.term > term) {
          this.#options.observeTerm(response.term);
          return false;
        }
        // Deposed while asking: what is owed is for the next leader's line to settle.
        if (!stillLeader()) return false;
        if (response.erasedIds === undefined || !(await store.applyErasedIdsPage(response.erasedIds))) break;
      }
      if (store.erasedIdsOwed === undefined) return true;
    }
    return store.erasedIdsOwed === undefined;
  }

  /** While leading and owing them: asks `peers` again, at most every ERASED_IDS_RETRY_MS, in the background. */
  retry(peers: ReadonlyArray<{ nodeId: string; url: string }>, term: number, stillLeader: () => boolean): void {
    if (this.#running !== undefined || this.#options.store.erasedIdsOwed === undefined) return;
    const now = this.#options.clock.monotonicMs();
    if (now - this.#lastTryMs < ERASED_IDS_RETRY_MS) return;
    this.#lastTryMs = now;
    this.#running = this.takeFrom(peers, term, stillLeader)
      .then((done) => {
        if (done) this.#options.log.info({ term }, 'took the erased ids this log owed from a peer that holds them all');
      })
      .catch((err: unknown) => this.#options.log.warn({ err: String(err) }, 'taking the erased ids this log owes failed; trying again later'))
      .finally(() => {
        this.#running = undefined;
      });
  }

  /** Waits for a retry under way. */
  async close(): Promise<void> {
    await this.#running;
  }
}
