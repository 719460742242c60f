import type { EventOutput } from '@auditlake/model';

/** Writes pages of events, in order, into one output; `close()` finishes it (footers, end markers). */
export interface EventWriter {
  write(events: readonly EventOutput[]): Promise<void>;
  close(): Promise<void>;
}

/** Where an export goes: a file or standard output, as bytes, with backpressure. */
export interface ByteSink {
  write(bytes: Uint8Array | string): Promise<void>;
  close(): Promise<void>;
}
