import { boundedTables, FIELD_LIMIT_BYTES, truncateToBytes, type Decision } from '@auditlake/model';
import type { TimeZone } from '../record-time.js';

/** The systems whose audit logs `auditlake import` reads; each is also the events' `source`. */
export const FORMAT_NAMES = ['gravitino', 'lakekeeper', 'lho', 'las'] as const;
export type FormatName = (typeof FORMAT_NAMES)[number];

/** An auditlake event made from one record, as sent to the ingest API (`eventId` added by the importer). */
export interface MappedEvent {
  source: FormatName;
  userId: string;
  action: string;
  resource: string;
  decision: Decision | '';
  tables: string[];
  /** The record's remaining fields, as compact JSON. */
  details: string;
  /** Event time, epoch ms. */
  ts: number;
}

/** What one record becomes: an event, nothing (not an audit record), or a reason it cannot be read. */
export type Mapped = { kind: 'event'; event: MappedEvent } | { kind: 'skipped'; reason: string } | { kind: 'malformed'; reason: string };

export interface MapContext {
  /** The zone of times written without an offset (Gravitino's text format). */
  timeZone: TimeZone;
}

/** A format whose records are lines of text (one record per line). */
export interface LineFormat {
  readonly name: FormatName;
  readonly framing: 'lines';
  /** Maps one non-blank line (no newline). */
  mapLine(line: string, context: MapContext): Mapped;
}

/** A format whose records are JSON objects (NDJSON or pretty-printed). */
export interface JsonFormat {
  readonly name: FormatName;
  readonly framing: 'json';
  /** A line outside any JSON object: `skip` where logs interleave other output, else it is malformed. */
  readonly textLines: 'skip' | 'malformed';
  mapRecord(record: Record<string, unknown>, context: MapContext): Mapped;
}

export type RecordFormat = LineFormat | JsonFormat;

export function malformed(reason: string): Mapped {
  return { kind: 'malformed', reason };
}

/**
 * An event made from a record, its fields cut to what the node keeps (as the node would cut
 * them: the node cuts them again to the same). Sent whole, a record with megabytes in one field
 * made a request past the node's body limit, which the node answered 413 while the upload was
 * still going; the client saw the connection reset, not the 413, and the import failed on it
 * every run (review). A field that is not well-formed Unicode is left for the node to refuse.
 */
export function mappedEvent(event: MappedEvent): Mapped {
  const fit = (value: string, limit: number) => (value.isWellFormed() ? truncateToBytes(value, limit) : value);
  // A required field of white space alone is refused by the node as empty: sent empty, not cut
  // (cut, it gained the marker and was stored; review).
  const required = (value: string, limit: number) => (value.trim() === '' ? '' : fit(value, limit));
  return {
    kind: 'event',
    event: {
      ...event,
      userId: required(event.userId, FIELD_LIMIT_BYTES.userId),
      action: required(event.action, FIELD_LIMIT_BYTES.action),
      resource: fit(event.resource, FIELD_LIMIT_BYTES.resource),
      details: fit(event.details, FIELD_LIMIT_BYTES.details),
      tables: event.tables.every((table) => table.isWellFormed()) ? boundedTables(event.tables) : event.tables,
    },
  };
}

/** A JSON object's own fields, except `omit`, as compact JSON (`{}` when none are left). */
export function detailsJson(record: Record<string, unknown>, omit: readonly string[], extra: Record<string, unknown> = {}): string {
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) if (!omit.includes(key)) rest[key] = value;
  return JSON.stringify({ ...rest, ...extra });
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A field as text: strings as they are, numbers and booleans spelled out, anything else undefined. */
export function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/** A list field as strings: an array's text entries, a single string as one entry. */
export function textList(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(text).filter((v): v is string => v !== undefined && v !== '');
  const single = text(value);
  return single === undefined || single === '' ? [] : [single];
}

export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
