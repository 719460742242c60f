import { AuditError, AuditErrorCode } from './audit-error.js';

/**
 * What places an event in the log's one newest-first order: event time, then ingest time,
 * then eventId, each descending. An event has the same three values in the local store and in
 * every tiered copy (a compaction rewrites files, never values), so a position in this order
 * means the same thing wherever the event is read from.
 */
export interface EventPosition {
  timestamp: number;
  ingestTs: number;
  eventId: string;
}

/**
 * The newest-first order of every answer: negative when `a` comes first. Total: two events
 * with the same eventId are the same event.
 */
export function newestFirst(a: EventPosition, b: EventPosition): number {
  return b.timestamp - a.timestamp || b.ingestTs - a.ingestTs || (a.eventId < b.eventId ? 1 : a.eventId > b.eventId ? -1 : 0);
}

/** A keyset cursor: the last event a page returned; the next page starts strictly after it. */
export type SearchCursor = EventPosition;

/** True when `event` comes strictly after `cursor` in the newest-first order (is "older"). */
export function isAfterCursor(cursor: SearchCursor, event: EventPosition): boolean {
  return newestFirst(cursor, event) < 0;
}

/**
 * The cursor as the API hands it out: base64url of `[timestamp, ingestTs, eventId]`. Opaque
 * to callers (they pass it back as it is), readable to an operator who decodes it.
 */
export function encodeCursor(position: EventPosition): string {
  return Buffer.from(JSON.stringify([position.timestamp, position.ingestTs, position.eventId]), 'utf8').toString('base64url');
}

function isEpochMs(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** Reads a cursor from {@link encodeCursor}; anything else is a 400 naming the parameter. */
export function decodeCursor(text: string): SearchCursor {
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(text)) throw new Error('not base64url');
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3 || !isEpochMs(parsed[0]) || !isEpochMs(parsed[1]) || typeof parsed[2] !== 'string' || parsed[2] === '') {
    throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter cursor must be a nextCursor value this API returned: ${text.length > 80 ? text.slice(0, 80) + '…' : text}`);
  }
  return { timestamp: parsed[0], ingestTs: parsed[1], eventId: parsed[2] };
}
