import { createHash } from 'node:crypto';
import type { AuditStore } from '@auditlake/store';

/** A hash of the replicated metadata, recomputed only when the store says it changed. */
export class MetaHash {
  readonly #store: AuditStore;
  #version = -1;
  #hash = '';
  #meta: Record<string, unknown> = {};

  constructor(store: AuditStore) {
    this.#store = store;
  }

  async current(): Promise<{ hash: string; meta: Record<string, unknown> }> {
    const version = this.#store.metaVersion;
    if (version !== this.#version) {
      this.#meta = await this.#store.getAllMeta();
      this.#hash = createHash('sha256').update(JSON.stringify(this.#meta)).digest('hex').slice(0, 32);
      this.#version = version;
    }
    return { hash: this.#hash, meta: this.#meta };
  }
}
