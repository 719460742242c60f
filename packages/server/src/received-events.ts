import { isAuditError, AuditErrorCode, type EncodedEvent } from '@auditlake/model';
import type { AppendResult, AuditStore } from '@auditlake/store';
import type { Membership } from './membership.js';

export type Received = { path: 'log'; result: AppendResult } | { path: 'outbox' };

/**
 * Where events received by this node go: straight into the log when this node leads, else
 * into the outbox for the forwarder. Either way they are synced to disk before this resolves
 * (acknowledged means durable). A leader that loses its lease mid-request falls back to the
 * outbox rather than failing the caller.
 */
export async function storeReceived(store: AuditStore, membership: Membership, events: readonly EncodedEvent[], freshIds?: ReadonlySet<string>): Promise<Received> {
  if (membership.isLeader()) {
    try {
      return { path: 'log', result: await store.appendEncoded(events, freshIds ? { freshIds } : {}) };
    } catch (err) {
      if (!isAuditError(err, AuditErrorCode.NOT_LEADER)) throw err;
    }
  }
  await store.enqueueOutbox(events, freshIds ? { freshIds } : {});
  membership.outboxChanged();
  return { path: 'outbox' };
}
