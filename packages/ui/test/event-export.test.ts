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
    expect(toCsv([event])).toBe(`${header}\r\ne1,${event.timestamp},2026-11-01T00:00:00.000Z,${event.ingestTs},ana,trino,data:Select,DENY,hive.s.o,"hive.s.o;hive.s.i","SELECT ""a"", b\nFROM t","'=HYPERLINK(""http://x"")"\r\n`);
    expect(row).toContain('e1');
    expect(['=1+1', '+1', '-1', '@SUM(A1)', '\tx'].map(csvCell)).toEqual(["'=1+1", "'+1", "'-1", "'@SUM(A1)", `"'\tx"`]);
    expect(csvCell('plain')).toBe('plain');
  });

  it('CSV defuses the full-width formula signs, which spreadsheets with East Asian input read as formulas too', () => {
    expect(['\uff1d1+1', '\uff0b1', '\uff0d1', '\uff20SUM(A1)', '\u3000\uff1d1'].map(csvCell)).toEqual(["'\uff1d1+1", "'\uff0b1", "'\uff0d1", "'\uff20SUM(A1)", "'\u3000\uff1d1"]);
    // Not at the start, no formula.
    expect(csvCell('a\uff1d1')).toBe('a\uff1d1');
  });

  it('CSV quotes a cell holding ; or a tab, so a ; locale (Excel) does not split it into a formula cell', () => {
    expect(csvCell('a;=1+1')).toBe('"a;=1+1"');
    expect(csvCell(';=1+1')).toBe('";=1+1"');
    expect(csvCell('a\tb')).toBe('"a\tb"');
    // The other separators and breaks, as before.
    expect(['a,b', 'a"b', 'a\rb', 'a\nb'].map(csvCell)).toEqual(['"a,b"', '"a""b"', '"a\rb"', '"a\nb"']);
    // A whole row: the `;` cell is one quoted field, the row still has every column.
    const row = toCsv([{ ...event, query: '', details: ';=1+1', tables: ['hive.s.o'] }]).split('\r\n')[1]!;
    expect(row.endsWith(',hive.s.o,,";=1+1"')).toBe(true);
  });

  it('CSV defuses a formula after leading whitespace, and one starting with a tab or CR', () => {
    const cases: [string, string][] = [
      [' =1+1', "' =1+1"],
      ['  +1', "'  +1"],
      [' -1', "' -1"],
      [' @SUM(A1)', "' @SUM(A1)"],
      ['\n=2+2', `"'\n=2+2"`],
      ['\r\n=2+2', `"'\r\n=2+2"`],
      ['\u00a0=1+1', "'\u00a0=1+1"],
      ['\t=1+1', `"'\t=1+1"`],
      ['\tplain', `"'\tplain"`],
      ['\rplain', `"'\rplain"`],
      [' =HYPERLINK("http://x")', `"' =HYPERLINK(""http://x"")"`],
    ];
    expect(cases.map(([value]) => csvCell(value))).toEqual(cases.map(([, cell]) => cell));
    // Not a formula: text that merely contains one, or leading spaces before plain text, stays as it is.
    expect(['a=1', ' plain', 'x-1', 'user@example.com', ''].map(csvCell)).toEqual(['a=1', ' plain', 'x-1', 'user@example.com', '']);
  });
});
