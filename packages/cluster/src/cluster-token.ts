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

  /** Re-reads the token, putting back the remembered one if the coordinator lost it. */
  async refresh(): Promise<void> {
    const token = await this.#coordinator.clusterToken(this.#token);
    if (token !== this.#token) {
      this.#token = token;
      await this.#store.putLocal(LOCAL_CLUSTER_TOKEN, token);
    }
  }
}
