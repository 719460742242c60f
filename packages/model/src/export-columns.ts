import type { EventOutput } from './event.js';

/** A column type, named as Iceberg names them: `timestamptz` is µs since the epoch, UTC. */
export type ExportColumnType = 'string' | 'long' | 'timestamptz';

export interface ExportColumn {
  readonly name: string;
  readonly type: ExportColumnType;
  /** Never null (the tier's `required`). */
  readonly required: boolean;
}

/**
 * The columns of an export (Arrow answer, `auditlake export` as CSV, Arrow or Parquet): the
 * tiered columns, by the same names, types and order, so one query reads a tier file and an
 * export alike. A cross-package test holds this list equal to the tier's.
 */
export const EXPORT_COLUMNS = [
  { name: 'event_id', type: 'string', required: true },
  { name: 'source', type: 'string', required: true },
  { name: 'user_id', type: 'string', required: true },
  { name: 'action', type: 'string', required: true },
  { name: 'resource', type: 'string', required: false },
  { name: 'tables', type: 'string', required: false },
  { name: 'query', type: 'string', required: false },
  { name: 'details', type: 'string', required: false },
  { name: 'ts', type: 'long', required: true },
  { name: 'event_time', type: 'timestamptz', required: true },
  { name: 'decision', type: 'string', required: false },
  { name: 'ingest_ts', type: 'long', required: true },
] as const satisfies readonly ExportColumn[];

export type ExportColumnName = (typeof EXPORT_COLUMNS)[number]['name'];

/** One event in export columns: strings, epoch ms (`ts`, `ingest_ts`) and µs (`event_time`, a bigint). */
export interface ExportRow {
  event_id: string;
  source: string;
  user_id: string;
  action: string;
  resource: string;
  /** The table list joined with commas, as the tier keeps it. */
  tables: string;
  query: string;
  details: string;
  ts: number;
  event_time: bigint;
  decision: string;
  ingest_ts: number;
}

export function toExportRow(event: EventOutput): ExportRow {
  return {
    event_id: event.eventId,
    source: event.source,
    user_id: event.userId,
    action: event.action,
    resource: event.resource,
    tables: event.tables.join(','),
    query: event.query,
    details: event.details,
    ts: event.timestamp,
    event_time: BigInt(event.timestamp) * 1000n,
    decision: event.decision,
    ingest_ts: event.ingestTs,
  };
}
