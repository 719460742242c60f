import { setImmediate as yieldToEventLoop } from 'node:timers/promises';

/**
 * Stored events parsed between two turns of the event loop. The sweep reads its batches
 * (5,000 events by default) with readBySeq; parsed in one go, a batch held the loop for
 * 30–160 ms under a soak's load, and every request of the node (a settings read, an ingest
 * acknowledgement) waited for it. 1,000 events are a few milliseconds of parsing.
 */
export const PARSE_TURN_EVENTS = 1_000;

/**
 * The stored JSON `values` parsed, in order, missing ones (undefined) left out, with a turn of
 * the event loop (`turn`) after each {@link PARSE_TURN_EVENTS} parsed.
 */
export function parseInTurns<T>(values: ReadonlyArray<string | undefined>, turn: () => Promise<unknown> = () => yieldToEventLoop()): Promise<T[]> {
  return decodeInTurns<string, T>(values, (value) => value, turn);
}

/**
 * Like parseInTurns, for stored events held as UTF-8 bytes (the log tail): each is decoded to
 * text within its turn, so decoding a batch does not hold the event loop either.
 */
export function parseBytesInTurns<T>(values: readonly Uint8Array[], turn: () => Promise<unknown> = () => yieldToEventLoop()): Promise<T[]> {
  return decodeInTurns<Uint8Array, T>(values, (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'), turn);
}

async function decodeInTurns<V, T>(values: ReadonlyArray<V | undefined>, text: (value: V) => string, turn: () => Promise<unknown>): Promise<T[]> {
  const parsed: T[] = [];
  let sinceTurn = 0;
  for (const value of values) {
    if (value === undefined) continue;
    if (sinceTurn === PARSE_TURN_EVENTS) {
      sinceTurn = 0;
      await turn();
    }
    parsed.push(JSON.parse(text(value)) as T);
    sinceTurn++;
  }
  return parsed;
}
