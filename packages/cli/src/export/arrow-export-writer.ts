import type { EventOutput } from '@auditlake/model';
import { ArrowEventStream } from '@auditlake/server/arrow';
import type { ByteSink, EventWriter } from './event-writer.js';

/**
 * One Arrow IPC stream (the schema once, a record batch per page, the end marker) with the
 * tiered columns, the same the search API answers for `Accept: application/vnd.apache.arrow.stream`.
 * Bytes reach the sink as each batch is encoded, so memory holds a page, not the history.
 */
export class ArrowExportWriter implements EventWriter {
  readonly #sink: ByteSink;
  readonly #stream = new ArrowEventStream();
  readonly #pump: Promise<void>;
  #closed = false;

  constructor(sink: ByteSink) {
    this.#sink = sink;
    this.#pump = this.#copy();
    // A failed sink is reported by close(); until then the rejection must not go unhandled.
    this.#pump.catch(() => undefined);
  }

  async write(events: readonly EventOutput[]): Promise<void> {
    this.#stream.write(events);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stream.end();
    await this.#pump;
    await this.#sink.close();
  }

  async #copy(): Promise<void> {
    for await (const chunk of this.#stream) await this.#sink.write(chunk);
  }
}
