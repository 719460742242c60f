import { errorText, type NodeClient } from './node-client.js';

/** What the node made of one batch. */
export type IngestAnswer =
  | { kind: 'stored'; ingested: number; duplicates: number }
  /** Nothing of the batch was stored; `index` is the refused event's place in it, when the node named one. */
  | { kind: 'refused'; index: number | undefined; message: string }
  | { kind: 'too-large' };

/** Sends batches of events to `POST /v1/api/audit` (the ingest token's endpoint). */
export class IngestClient {
  readonly #node: NodeClient;

  constructor(node: NodeClient) {
    this.#node = node;
  }

  async send(events: readonly object[]): Promise<IngestAnswer> {
    const response = await this.#node.request('/v1/api/audit', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(events) });
    const body = await response.text();
    if (response.status === 413) return { kind: 'too-large' };
    if (response.status === 200) {
      // `ingested` counts what was accepted, duplicates included; sampled-out reads are not in it.
      const answer = JSON.parse(body) as { ingested?: number; duplicates?: number };
      return { kind: 'stored', ingested: answer.ingested ?? 0, duplicates: answer.duplicates ?? 0 };
    }
    const message = errorText(body);
    // The node names the first bad event as events[i]; the batch is all or nothing.
    const index = /^events\[(\d+)\]/.exec(message)?.[1];
    return { kind: 'refused', index: index === undefined ? undefined : Number(index), message: `${response.status} ${message}` };
  }
}
