// Goal: an export's columns (model's EXPORT_COLUMNS, toExportRow) are the tiered columns: same names, types, order, nullability and values.
import { EXPORT_COLUMNS, toEventOutput, toExportRow } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { AUDIT_COLUMNS, toRow } from '../src/audit-columns.js';

describe('export columns', () => {
  it('are the tiered columns by name, type, order and required', () => {
    expect(EXPORT_COLUMNS.map((c) => [c.name, c.type, c.required])).toEqual(AUDIT_COLUMNS.map((c) => [c.name, c.icebergType, c.required]));
  });

  it('hold the values a tiered row holds', () => {
    const stored = {
      eventId: 'e1',
      source: 'trino',
      userId: 'ana',
      action: 'data:Select',
      resource: 'hive.s.t',
      tables: ['hive.s.t', 'hive.s.u'],
      query: 'SELECT 1',
      details: '{"a":1}',
      timestamp: 1_792_288_263_123,
      decision: 'DENY' as const,
      ingestTs: 1_792_288_263_456,
      seq: 7,
      term: 2,
    };
    expect(toExportRow(toEventOutput(stored))).toEqual(toRow(stored));
  });
});
