// Goal: an export's columns (model's EXPORT_COLUMNS, toExportRow) are the tiered event columns (field ids 1..12, before the record chain's): same names, types, order, nullability and values.
import { EXPORT_COLUMNS, toEventOutput, toExportRow } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { AUDIT_COLUMNS, toRow } from '../src/audit-columns.js';

/** The tiered columns an export carries: the event's, not the record chain's (ids 13..20, docs/integrity.md). */
const EXPORTED = AUDIT_COLUMNS.filter((c) => c.fieldId <= 12);

describe('export columns', () => {
  it('are the tiered event columns by name, type, order and required', () => {
    expect(EXPORTED).toHaveLength(12);
    expect(EXPORT_COLUMNS.map((c) => [c.name, c.type, c.required])).toEqual(EXPORTED.map((c) => [c.name, c.icebergType, c.required]));
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
    const row = toRow(stored) as unknown as Record<string, unknown>;
    expect(toExportRow(toEventOutput(stored))).toEqual(Object.fromEntries(EXPORTED.map((c) => [c.name, row[c.name]])));
  });
});
