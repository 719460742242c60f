import type { AuditStore } from '@auditlake/store';
import type { Clock } from './clock.js';
import type { ClusterLog, LeaderElector } from './leader-elector.js';
import type { MetaHash } from './meta-hash.js';
import type { PeerTransport } from './protocol.js';
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
  onDiverted: (count: number) => void;
  log: ClusterLog;
}

/**
 * A standby's replication loop: pull from the leader after the local end of the log, apply in
 * seq order, apply metadata, and divert a divergent suffix when the leader says so. Each pull
 * reports the applied seq, which is how the leader tracks lag and `ack=replicated`.
 */
export class ReplicationFollower {
  readonly #options: ReplicationFollowerOptions;
  readonly #abort = new AbortController();
  #loop: Promise<void> | undefined;

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
      } catch (err) {
        failures++;
        if (failures === 1 || failures % 50 === 0) this.#options.log.warn({ leader: leader.nodeId, err: String(err) }, 'replication pull failed; retrying');
        await sleep(this.#options.clock, Math.min(1000, 50 * failures), signal);
      }
    }
  }

  async #pullOnce(leaderUrl: string): Promise<void> {
    const { store, elector, transport, metaHash } = this.#options;
    const position = store.position;
    const response = await transport.pull(
      leaderUrl,
      {
        nodeId: this.#options.nodeId,
        after: position.lastSeq,
        lastTerm: position.lastTerm,
        term: elector.knownTerm,
        // As the forward batch (cluster-node.ts): a standby applies each answer as one LevelDB
        // batch, and batches of a megabyte or two cost the least CPU per event.
        limit: 2000,
        waitMs: this.#options.pullWaitMs,
        metaHash: (await metaHash.current()).hash,
        catchUp: false,
      },
      this.#options.pullWaitMs + 5000,
    );
    // Fencing: an answer from an older term comes from a deposed leader.
    if (response.term < elector.knownTerm) return;
    elector.observeTerm(response.term);
    // Became leader while the pull was in flight: the log is ours to order now.
    if (elector.role === 'leader') return;
    if (response.divergedFrom !== undefined) {
      const moved = await store.divertSuffixToOutbox(response.divergedFrom);
      this.#options.log.warn({ from: response.divergedFrom, moved }, 'log diverged from the leader; moved the local suffix to the outbox to re-forward it');
      this.#options.onDiverted(moved);
      return;
    }
    if (response.meta) {
      await store.putMeta(response.meta);
      this.#options.onMetaApplied(response.meta);
    }
    if (response.entries.length > 0) await store.applyReplicated(response.entries);
  }

  async close(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
  }
}
