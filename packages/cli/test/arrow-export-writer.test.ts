// Goal: the Arrow export waits for a slow sink page by page (memory holds a page, not the history) and writes the same IPC stream the encoder's streaming writer does.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { EventOutput } from '@auditlake/model';
import { ArrowEventStream } from '@auditlake/server/arrow';
import { tableFromIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import type { ByteSink } from '../src/export/event-writer.js';
import { ArrowExportWriter } from '../src/export/arrow-export-writer.js';

function page(from: number, count: number): EventOutput[] {
  return Array.from({ length: count }, (_, i) => ({
    eventId: `ev-${from + i}`,
    userId: `user${(from + i) % 5}`,
    source: 'trino',
    action: 'data:Select',
    resource: 'hive.s.t',
    decision: i % 2 === 0 ? 'ALLOW' : '',
    tables: ['hive.s.t'],
    query: `SELECT ${from + i}`,
    details: '',
    timestamp: 1_792_288_263_000 - (from + i) * 1000,
    ingestTs: 1_792_288_264_000,
  }));
}

/** A sink that holds each write until the test lets it go, as a full pipe would. */
function heldSink(): ByteSink & { chunks: Uint8Array[]; waiting: () => boolean; release: () => void; writeCalled: () => Promise<void> } {
  const chunks: Uint8Array[] = [];
  let release: (() => void) | undefined;
  let called: (() => void) | undefined;
  let calledPromise = new Promise<void>((resolve) => (called = resolve));
  return {
    chunks,
    async write(bytes) {
      chunks.push(typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes);
      called?.();
      await new Promise<void>((resolve) => (release = resolve));
    },
    async close() {},
    waiting: () => release !== undefined,
    release: () => {
      const go = release;
      release = undefined;
      calledPromise = new Promise<void>((resolve) => (called = resolve));
      go?.();
    },
    writeCalled: () => calledPromise,
  };
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  return Uint8Array.from(chunks.flatMap((c) => Array.from(c)));
}

describe('arrow export writer', () => {
  it('resolves a page only once the sink has taken it', async () => {
    const sink = heldSink();
    const writer = new ArrowExportWriter(sink);
    for (let i = 0; i < 3; i++) {
      let done = false;
      const written = writer.write(page(i * 10, 10)).then(() => (done = true));
      await sink.writeCalled();
      // Turns of the event loop change nothing while the sink does not drain.
      await nextTurn();
      await nextTurn();
      expect(done).toBe(false);
      expect(sink.chunks).toHaveLength(i + 1);
      sink.release();
      await written;
    }
    const closed = writer.close();
    await sink.writeCalled();
    sink.release();
    await closed;
    const table = tableFromIPC(concat(sink.chunks));
    expect(table.numRows).toBe(30);
    expect(table.getChild('event_id')?.toArray()).toEqual(page(0, 30).map((e) => e.eventId));
  });

  it('writes the bytes of one IPC stream, as the streaming encoder does, for many pages and for none', async () => {
    for (const pages of [[], [page(0, 7)], [page(0, 7), page(7, 1), page(8, 20)]]) {
      const chunks: Uint8Array[] = [];
      const writer = new ArrowExportWriter({ write: async (b) => void chunks.push(b as Uint8Array), close: async () => undefined });
      const reference = new ArrowEventStream();
      for (const events of pages) {
        await writer.write(events);
        reference.write(events);
      }
      await writer.close();
      reference.end();
      const expected: Uint8Array[] = [];
      for await (const chunk of reference) expected.push(chunk);
      expect(concat(chunks)).toEqual(concat(expected));
    }
  });
});
