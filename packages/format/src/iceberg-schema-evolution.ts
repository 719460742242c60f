import { AuditError, AuditErrorCode } from '@auditlake/model';
import { AUDIT_COLUMNS } from './audit-columns.js';
import { auditNameMapping, type IcebergField, type IcebergSchema } from './iceberg-schema.js';
import type { IcebergTableMetadata } from './iceberg-metadata.js';

/** The table's current schema (the one `current-schema-id` names). */
export function currentSchema(metadata: IcebergTableMetadata): IcebergSchema {
  const schema = metadata.schemas.find((candidate) => candidate['schema-id'] === metadata['current-schema-id']);
  if (schema === undefined) throw new AuditError(AuditErrorCode.TABLE_INVALID, `table metadata names current schema ${metadata['current-schema-id']}, which it does not hold`);
  return schema;
}

/**
 * The table metadata with a schema holding every tiered column, as Iceberg schema evolution
 * adds columns (spec "Schema Evolution"): the current schema's fields unchanged, the missing
 * columns appended as optional fields with their own ids, in a new schema (id one above the
 * highest) that becomes current; `last-column-id` rises to cover them, and the name mapping
 * follows. Data files written before keep their schema: readers resolve columns by id and
 * read the new ones there as null. Returns `metadata` itself when nothing is missing.
 *
 * Refuses (AUDIT_TABLE_INVALID) a table another engine evolved so that one of our column ids or
 * names means something else there: reusing an id would make readers confuse two columns.
 */
export function evolveToAuditSchema(metadata: IcebergTableMetadata): IcebergTableMetadata {
  const schema = currentSchema(metadata);
  const byId = new Map(schema.fields.map((field) => [field.id, field]));
  const missing: IcebergField[] = [];
  for (const column of AUDIT_COLUMNS) {
    const conflict = auditFieldConflict(schema, column, { types: false });
    if (conflict !== undefined) throw new AuditError(AuditErrorCode.TABLE_INVALID, conflict);
    if (byId.has(column.fieldId)) continue;
    if (column.fieldId <= metadata['last-column-id']) {
      throw new AuditError(AuditErrorCode.TABLE_INVALID, `table has already assigned field id ${column.fieldId} (last-column-id ${metadata['last-column-id']}); auditlake needs it for ${column.name}`);
    }
    missing.push({ id: column.fieldId, name: column.name, required: false, type: column.icebergType, doc: column.doc });
  }
  if (missing.length === 0) return metadata;
  const evolved: IcebergSchema = {
    type: 'struct',
    'schema-id': Math.max(...metadata.schemas.map((candidate) => candidate['schema-id'])) + 1,
    fields: [...schema.fields, ...missing],
  };
  return {
    ...metadata,
    schemas: [...metadata.schemas, evolved],
    'current-schema-id': evolved['schema-id'],
    'last-column-id': Math.max(metadata['last-column-id'], ...missing.map((field) => field.id)),
    properties: { ...metadata.properties, 'schema.name-mapping.default': auditNameMapping(evolved) },
  };
}

/**
 * What makes a table's schema mean another thing than auditlake's columns for one of them: its
 * id named otherwise, its name under another id, or (`types`) its id of another type. Engines
 * resolve columns by id and show them by the schema's name, so any of these shows one column's
 * values under another's name. A column the schema lacks is no conflict (a table from before it).
 */
function auditFieldConflict(schema: IcebergSchema, column: (typeof AUDIT_COLUMNS)[number], { types }: { types: boolean }): string | undefined {
  const field = schema.fields.find((candidate) => candidate.id === column.fieldId);
  if (field !== undefined) {
    if (field.name !== column.name) return `table field id ${column.fieldId} is named ${field.name}; auditlake writes ${column.name} under that id`;
    if (types && field.type !== column.icebergType) return `table field id ${column.fieldId} (${column.name}) has type ${JSON.stringify(field.type)}; auditlake writes ${column.icebergType}`;
    return undefined;
  }
  const sameName = schema.fields.find((candidate) => candidate.name === column.name);
  return sameName === undefined ? undefined : `table column ${column.name} has field id ${sameName.id}; auditlake writes it under id ${column.fieldId}`;
}

/**
 * Refuses (AUDIT_TABLE_INVALID) a table whose current schema gives one of auditlake's columns
 * another name, id or type: what a verifier checks before it vouches for what readers of the
 * table see (it reads the files' columns, which the schema's names then relabel for everyone else).
 */
export function checkAuditSchema(metadata: IcebergTableMetadata): void {
  const schema = currentSchema(metadata);
  for (const column of AUDIT_COLUMNS) {
    const conflict = auditFieldConflict(schema, column, { types: true });
    if (conflict !== undefined) throw new AuditError(AuditErrorCode.TABLE_INVALID, `${conflict}: readers of the table resolve its columns by this schema, so they would not show what auditlake wrote`);
  }
}
