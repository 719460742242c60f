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
    const field = byId.get(column.fieldId);
    if (field !== undefined) {
      if (field.name !== column.name) {
        throw new AuditError(AuditErrorCode.TABLE_INVALID, `table field id ${column.fieldId} is named ${field.name}; auditlake writes ${column.name} under that id`);
      }
      continue;
    }
    const sameName = schema.fields.find((candidate) => candidate.name === column.name);
    if (sameName !== undefined) throw new AuditError(AuditErrorCode.TABLE_INVALID, `table column ${column.name} has field id ${sameName.id}; auditlake writes it under id ${column.fieldId}`);
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
