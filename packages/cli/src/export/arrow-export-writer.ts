import type { EventOutput } from '@auditlake/model';
import { encodeArrowStream } from '@auditlake/server/arrow';
import type { ByteSink, EventWriter } from './event-writer.js';

/** An encapsulated IPC message starts with this marker, then its metadata length (int32 LE). */
const CONTINUATION = 0xffffffff;
/** The IPC stream's end marker: the continuation and a zero metadata length. */
const END_OF_STREAM = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0);

/** The bytes of the schema message at the start of an encoded IPC stream (a schema has no body). */
function schemaMessageLength(stream: Uint8Array): number {
  const view = new DataView(stream.buffer, stream.byteOffset, stream.byteLength);
  if (stream.byteLength < 8 || view.getUint32(0, true) !== CONTINUATION) throw new Error('the Arrow encoder wrote a stream without the IPC continuation marker');
  return 8 + view.getInt32(4, true);
}

/**
 * One Arrow IPC stream (the schema once, a record batch per page, the end marker) with the
 * tiered columns, the same the search API answers for `Accept: application/vnd.apache.arrow.stream`.
 *
 * Each page is encoded as a stream of its own and spliced in, by the IPC streaming format's
 * framing: the schema message is kept from the first page only and every page's end marker
 * is dropped until close(). That way write() resolves only when the sink has taken the page,
 * like the other formats: the encoder's own streaming writer queues its bytes without bound
 * and gives no way to wait for a reader, so a slow sink made memory grow by a page per request.
 */
export class ArrowExportWriter implements EventWriter {
  readonly #sink: ByteSink;
  #started = false;
  #closed = false;

  constructor(sink: ByteSink) {
    this.#sink = sink;
  }

  async write(events: readonly EventOutput[]): Promise<void> {
    if (events.length === 0) return;
    const stream = encodeArrowStream(events);
    const from = this.#started ? schemaMessageLength(stream) : 0;
    this.#started = true;
    await this.#sink.write(stream.subarray(from, stream.byteLength - END_OF_STREAM.byteLength));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // A stream with no events still carries the schema (and one empty batch).
    await this.#sink.write(this.#started ? END_OF_STREAM : encodeArrowStream([]));
    await this.#sink.close();
  }
}
