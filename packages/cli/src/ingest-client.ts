import { AuditError, AuditErrorCode } from '@auditlake/model';
import { errorText, type NodeClient } from './node-client.js';

/** What the node made of one batch. */
export type IngestAnswer =
  | { kind: 'stored'; ingested: number; duplicates: number; conflicts: number; conflictEventIds: string[] }
  /** Nothing of the batch was stored; `index` is the refused event's place in it (a 400 naming `events[i]`). */
  | { kind: 'refused'; index: number; message: string }
  | { kind: 'too-large' };

/** Sends batches of events to `POST /v1/api/audit` (the ingest token's endpoint). */
export class IngestClient {
  readonly #node: NodeClient;

  constructor(node: NodeClient) {
    this.#node = node;
  }

  /**
   * Sends one batch. Only a 400 naming a refused event is an answer about records; a 429 is
   * retried after its `Retry-After` (NodeClient, bounded), and any other answer that is not 2xx
   * is an error: nothing of the batch may be counted as done.
   */
  async send(events: readonly object[]): Promise<IngestAnswer> {
    const path = '/v1/api/audit';
    const response = await this.#node.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(events) });
    if (response.status === 413) return { kind: 'too-large' };
    if (response.status >= 200 && response.status < 300) {
      // `ingested` counts what was accepted, duplicates and conflicts included; sampled-out reads are not in it.
      // `conflictEventIds` names the first 100 conflicts, so each can be reported by its line.
      const answer = (await response.json()) as { ingested?: number; duplicates?: number; conflicts?: number; conflictEventIds?: unknown };
      const conflictEventIds = Array.isArray(answer.conflictEventIds) ? answer.conflictEventIds.filter((id): id is string => typeof id === 'string') : [];
      return { kind: 'stored', ingested: answer.ingested ?? 0, duplicates: answer.duplicates ?? 0, conflicts: answer.conflicts ?? 0, conflictEventIds };
    }
    const message = errorText(await response.text());
    // The node names the first bad event as events[i]; the batch is all or nothing.
    const index = /^events\[(\d+)\]/.exec(message)?.[1];
    if (response.status === 400 && index !== undefined && Number(index) < events.length) {
      return { kind: 'refused', index: Number(index), message: `${response.status} ${message}` };
    }
    throw new AuditError(AuditErrorCode.UNREACHABLE, `${this.#node.shown}${path} answered ${response.status}: ${message}`);
  }
}
