// Goal: parseProperties reads Java-properties text the way java.util.Properties.load does, for the syntax config files use.
import { describe, expect, it } from 'vitest';
import { parseProperties } from '../src/properties.js';

const parse = (lines: string[]): Record<string, string> => Object.fromEntries(parseProperties(lines.join('\n')));

describe('parseProperties', () => {
  it('accepts =, : and whitespace as separators, with optional spaces around them', () => {
    expect(parse(['a=1', 'b:2', 'c 3', 'd\t4', 'e = 5', 'f : 6', 'g   7', 'h\f8'])).toEqual({
      a: '1', b: '2', c: '3', d: '4', e: '5', f: '6', g: '7', h: '8',
    });
  });

  it('takes only the first separator; the rest belongs to the value', () => {
    expect(parse(['k = a = b', 'u=http://host:9000/x', 'w:=v', 'x = :y'])).toEqual({ k: 'a = b', u: 'http://host:9000/x', w: '=v', x: ':y' });
  });

  it('a key alone has an empty value', () => {
    expect(parse(['flag', 'other=', 'third :'])).toEqual({ flag: '', other: '', third: '' });
  });

  it('skips # and ! comments, indented comments and blank lines', () => {
    expect(parse(['# a=1', '! b=2', '   # c=3', '\t! d=4', '', '   ', 'e=5'])).toEqual({ e: '5' });
  });

  it('does not continue a comment line that ends in a backslash', () => {
    expect(parse(['# comment \\', 'a=1'])).toEqual({ a: '1' });
  });

  it('strips leading whitespace of keys and keeps trailing whitespace of values', () => {
    expect(parse(['   key = value  '])).toEqual({ key: 'value  ' });
  });

  it('joins continuation lines, dropping the leading whitespace of each continued line', () => {
    expect(parse(['list = a,\\', '       b,\\', '\t c', 'next=1'])).toEqual({ list: 'a,b,c', next: '1' });
  });

  it('an escaped backslash at the end of a line is not a continuation', () => {
    expect(parse(['path = C:\\\\', 'next=1'])).toEqual({ path: 'C:\\', next: '1' });
  });

  it('a continuation on the last line ends the value', () => {
    expect(parse(['a=1\\'])).toEqual({ a: '1' });
  });

  it('decodes \\t \\n \\r \\f \\\\ \\uXXXX and drops the backslash before other characters', () => {
    expect(parse(['k=tab\\there\\nnew\\rret\\fform\\\\slash\\u0041\\u00e9\\q'])).toEqual({ k: 'tab\there\nnew\rret\fform\\slashAéq' });
  });

  it('escaped separators and spaces belong to the key', () => {
    expect(parse(['a\\=b=c', 'x\\:y:z', 'my\\ key = v'])).toEqual({ 'a=b': 'c', 'x:y': 'z', 'my key': 'v' });
  });

  it('a later key overrides an earlier one', () => {
    expect(parse(['a=1', 'b=2', 'a=3'])).toEqual({ a: '3', b: '2' });
  });

  it('accepts \\r\\n and \\r line ends', () => {
    expect(Object.fromEntries(parseProperties('a=1\r\nb=2\rc=3\r\n'))).toEqual({ a: '1', b: '2', c: '3' });
  });

  it('reads a realistic auditlake file', () => {
    const text = [
      '# auditlake node',
      'auditlake.audit.tier.mode = iceberg',
      'auditlake.audit.tier.iceberg.table: local.ops.audit_events',
      'auditlake.auth.tokens = admin:admin:s3cret,\\',
      '    ci:ingest:t0ken',
      'auditlake.s3.connections.local.endpoint=http://127.0.0.1:7071',
    ].join('\n');
    expect(Object.fromEntries(parseProperties(text))).toEqual({
      'auditlake.audit.tier.mode': 'iceberg',
      'auditlake.audit.tier.iceberg.table': 'local.ops.audit_events',
      'auditlake.auth.tokens': 'admin:admin:s3cret,ci:ingest:t0ken',
      'auditlake.s3.connections.local.endpoint': 'http://127.0.0.1:7071',
    });
  });
});
