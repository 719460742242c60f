// Goal: exports are exact NDJSON and RFC 4180 CSV, and a CSV cell can never become a spreadsheet formula.
import type { EventOutput } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { csvCell, toCsv, toNdjson } from '../src/event-export.js';

const event: EventOutput = {
  eventId: 'e1', userId: 'ana', source: 'trino', action: 'data:Select', resource: 'hive.s.o', decision: 'DENY',
  tables: ['hive.s.o', 'hive.s.i'], query: 'SELECT "a", b\nFROM t', details: '=HYPERLINK("http://x")', timestamp: Date.UTC(2026, 10, 1), ingestTs: Date.UTC(2026, 10, 1) + 5,
};

describe('event export', () => {
  it('NDJSON is one JSON event a line, the API shape unchanged', () => {
    const text = toNdjson([event, { ...event, eventId: 'e2' }]);
    expect(text.split('\n')).toHaveLength(3);
    expect(JSON.parse(text.split('\n')[0]!)).toEqual(event);
  });

  it('CSV quotes what needs quoting and defuses formulas', () => {
    const [header, row] = toCsv([event]).split('\r\n');
    expect(header).toBe('eventId,timestamp,time,ingestTs,userId,source,action,decision,resource,tables,query,details');
    expect(toCsv([event])).toBe(`${header}\r\ne1,${event.timestamp},2026-11-01T00:00:00.000Z,${event.ingestTs},ana,trino,data:Select,DENY,hive.s.o,hive.s.o;hive.s.i,"SELECT ""a"", b\nFROM t","'=HYPERLINK(""http://x"")"\r\n`);
    expect(row).toContain('e1');
    expect(['=1+1', '+1', '-1', '@SUM(A1)', '\tx'].map(csvCell)).toEqual(["'=1+1", "'+1", "'-1", "'@SUM(A1)", "'\tx"]);
    expect(csvCell('plain')).toBe('plain');
  });
});
