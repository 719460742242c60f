import type { EventOutput } from '@auditlake/model';
import type { ByteSink, EventWriter } from './event-writer.js';

/** One JSON object a line: the events as the API answers them, or mapped (OCSF). */
export class NdjsonWriter implements EventWriter {
  readonly #sink: ByteSink;
  readonly #map: (event: EventOutput) => unknown;

  constructor(sink: ByteSink, map: (event: EventOutput) => unknown = (event) => event) {
    this.#sink = sink;
    this.#map = map;
  }

  async write(events: readonly EventOutput[]): Promise<void> {
    if (events.length > 0) await this.#sink.write(events.map((e) => JSON.stringify(this.#map(e)) + '\n').join(''));
  }

  close(): Promise<void> {
    return this.#sink.close();
  }
}
