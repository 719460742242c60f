import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';
import type { Coordinator } from './coordinator.js';

const LOCAL_CLUSTER_TOKEN = 'clusterToken';

/**
 * The secret peers present on each other's internal endpoints. It lives in the coordinator
 * (the first node creates it) and each node remembers it in its own store, so a coordinator
 * that restarted empty gets the same token back instead of a new one that splits the cluster.
 */
export class ClusterToken {
  readonly #store: AuditStore;
  readonly #coordinator: Coordinator;
  #token: string | undefined;

  private constructor(store: AuditStore, coordinator: Coordinator, remembered: string | undefined) {
    this.#store = store;
    this.#coordinator = coordinator;
    this.#token = remembered;
  }

  /** Reads the token this node remembers (none before it first reached the coordinator). */
  static async load(store: AuditStore, coordinator: Coordinator): Promise<ClusterToken> {
    return new ClusterToken(store, coordinator, await store.getLocal<string>(LOCAL_CLUSTER_TOKEN));
  }

  /** The token, asking the coordinator when this node never learnt it. */
  async current(): Promise<string> {
    if (this.#token === undefined) await this.refresh();
    if (this.#token === undefined) throw new Error('the cluster token is not known yet (the coordinator has been unreachable since start)');
    return this.#token;
  }

  /**
   * Re-reads the token, putting back the remembered one if the coordinator lost it. A node
   * whose log holds entries and that remembers another token than the coordinator's is a
   * member of another cluster (a data dir started against the wrong Redis, another cluster's
   * node given this cluster's address): it is refused (AUDIT_CLUSTER_MISMATCH) and keeps its
   * token, so it takes no part here. Taking the coordinator's token instead let such a node
   * depose the leader with its own terms, lead with its own log, and hand the cluster its
   * settings and tier locations (review: a staging node pointed at prod's Redis, prod's tiered
   * events then missing from every node's search). A node with an empty log has nothing to mix
   * in, and takes the coordinator's token as a new member does — and a token such a node set
   * (it asked first after the coordinator lost its data) gives way to the remembered token of
   * a node with data (Coordinator.clusterToken), so a new node cannot lock the cluster out.
   */
  async refresh(): Promise<void> {
    const withData = this.#token !== undefined && this.#store.position.lastSeq > 0;
    const token = await this.#coordinator.clusterToken(this.#token, withData);
    if (token === this.#token) return;
    if (withData) throw clusterMismatch();
    this.#token = token;
    await this.#store.putLocal(LOCAL_CLUSTER_TOKEN, token);
  }
}

function clusterMismatch(): AuditError {
  return new AuditError(
    AuditErrorCode.CLUSTER_MISMATCH,
    "this node's data belongs to another cluster than the one its coordinator holds: the cluster token it remembers is not the coordinator's, and its log holds entries, so it takes no part there (it would depose that cluster's leader and mix its log and settings into that cluster's). Check --coordinator and the cluster name; if this is this node's own cluster and its coordinator lost its data while a node of another cluster asked first, stop that node and delete the key auditlake:<cluster>:cluster-token: this node puts its own back",
  );
}
