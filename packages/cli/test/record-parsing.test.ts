// Goal: the pieces every format parser stands on — times, JSON framing, big integers, ids — read real-world input exactly and refuse what is not.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gravitinoFormat, parseCustomInfo } from '../src/formats/gravitino-format.js';
import { lakekeeperFormat } from '../src/formats/lakekeeper-format.js';
import { identifierType, lasFormat } from '../src/formats/las-format.js';
import { lhoFormat } from '../src/formats/lho-format.js';
import type { Mapped } from '../src/formats/record-format.js';
import { JsonFraming, quoteUnsafeIntegers, type JsonPiece } from '../src/json-framing.js';
import { IDENTICAL_RECORDS_WINDOW, RecordIds } from '../src/record-id.js';
import { parseIsoTime, parseRecordTime, parseTimeZone, UTC } from '../src/record-time.js';

describe('record times', () => {
  it('honours zone offsets and cuts fractions beyond ms', () => {
    expect(parseIsoTime('2026-02-15T14:20:50.758690Z', UTC)).toBe(Date.UTC(2026, 1, 15, 14, 20, 50, 758));
    expect(parseIsoTime('2026-10-08T03:40:00.000+08:00', UTC)).toBe(Date.UTC(2026, 9, 7, 19, 40));
    expect(parseIsoTime('2026-10-07T14:10:00-0530', UTC)).toBe(Date.UTC(2026, 9, 7, 19, 40));
    expect(parseIsoTime('2026-10-07 19:31:27.4', UTC)).toBe(Date.UTC(2026, 9, 7, 19, 31, 27, 400));
    // Years 0000-0099 are those years, not 1900-1999 (the node then refuses them as before 1970).
    expect(new Date(parseIsoTime('0099-06-01T00:00:00Z', UTC)!).toISOString()).toBe('0099-06-01T00:00:00.000Z');
    expect(parseIsoTime('0070-01-01T00:00:00Z', UTC)!).toBeLessThan(0);
    expect(parseIsoTime('0099-02-29T00:00:00Z', UTC)).toBeUndefined();
    // In a named zone too (its offset then was local mean time, +00:53:28 in Berlin).
    expect(new Date(parseIsoTime('0099-06-01 00:53:28', parseTimeZone('Europe/Berlin')!)!).toISOString()).toBe('0099-06-01T00:00:00.000Z');
  });

  it('reads a time without offset in the given zone, daylight saving included', () => {
    const shanghai = parseTimeZone('Asia/Shanghai')!;
    expect(parseIsoTime('2026-10-08 03:31:27.492', shanghai)).toBe(Date.UTC(2026, 9, 7, 19, 31, 27, 492));
    const berlin = parseTimeZone('Europe/Berlin')!;
    expect(parseIsoTime('2026-07-01 12:00:00', berlin)).toBe(Date.UTC(2026, 6, 1, 10)); // CEST, +02:00
    expect(parseIsoTime('2026-01-01 12:00:00', berlin)).toBe(Date.UTC(2026, 0, 1, 11)); // CET, +01:00
    expect(parseIsoTime('2026-01-01 12:00:00', parseTimeZone('-03:30')!)).toBe(Date.UTC(2026, 0, 1, 15, 30));
    // An explicit offset wins over the zone.
    expect(parseIsoTime('2026-01-01T12:00:00Z', berlin)).toBe(Date.UTC(2026, 0, 1, 12));
  });

  it('reads a wall time that occurs twice (clocks set back) as the earlier instant, east and west of UTC', () => {
    // Europe/Berlin 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:30 is 00:30Z (CEST) and 01:30Z (CET).
    expect(parseIsoTime('2026-10-25 02:30:00', parseTimeZone('Europe/Berlin')!)).toBe(Date.UTC(2026, 9, 25, 0, 30));
    // Australia/Sydney 2026-04-05: 03:00 AEDT becomes 02:00 AEST; 02:30 is 15:30Z and 16:30Z the day before.
    expect(parseIsoTime('2026-04-05 02:30:00.250', parseTimeZone('Australia/Sydney')!)).toBe(Date.UTC(2026, 3, 4, 15, 30, 0, 250));
    // America/New_York 2026-11-01: 02:00 EDT becomes 01:00 EST; 01:30 is 05:30Z and 06:30Z.
    expect(parseIsoTime('2026-11-01 01:30:00', parseTimeZone('America/New_York')!)).toBe(Date.UTC(2026, 10, 1, 5, 30));
    // Either side of the repeated hour, one instant each.
    expect(parseIsoTime('2026-10-25 01:59:59', parseTimeZone('Europe/Berlin')!)).toBe(Date.UTC(2026, 9, 24, 23, 59, 59));
    expect(parseIsoTime('2026-10-25 03:00:00', parseTimeZone('Europe/Berlin')!)).toBe(Date.UTC(2026, 9, 25, 2));
    // An hour the clocks skipped (02:30 on 2026-03-29 in Berlin) is read with the offset after the change.
    expect(parseIsoTime('2026-03-29 02:30:00', parseTimeZone('Europe/Berlin')!)).toBe(Date.UTC(2026, 2, 29, 0, 30));
  });

  it('applies --time-zone only to Gravitino text times; the JSON formats read a time without offset as UTC', () => {
    const context = { timeZone: parseTimeZone('Asia/Shanghai')! };
    const wall = '2026-10-08 03:31:27.492';
    const utc = Date.UTC(2026, 9, 8, 3, 31, 27, 492);
    const tsOf = (mapped: Mapped) => (mapped.kind === 'event' ? mapped.event.ts : mapped.reason);
    expect(tsOf(gravitinoFormat.mapLine(`[${wall}]\tu\tLOAD_TABLE\tm.c.s.t\tSUCCESS\tsrc\t10.0.0.1\t{}`, context))).toBe(utc - 8 * 3_600_000);
    expect(tsOf(gravitinoFormat.mapLine(JSON.stringify({ timestamp: wall, user: 'u', operationType: 'LOAD_TABLE' }), context))).toBe(utc);
    expect(tsOf(lasFormat.mapRecord({ event_time: wall, user_id: '1', event_name: 'GetTable' }, context))).toBe(utc);
    expect(tsOf(lhoFormat.mapRecord({ timestamp: wall, userName: 'u', action: 'LOGIN' }, context))).toBe(utc);
    expect(tsOf(lakekeeperFormat.mapRecord({ event_source: 'audit', time: wall, record_type: 'operation', operation: 'x' }, context))).toBe(utc);
    // A time with an offset is that instant whatever the zone.
    expect(tsOf(lasFormat.mapRecord({ event_time: '2026-10-08T03:31:27.492+08:00', user_id: '1', event_name: 'GetTable' }, context))).toBe(utc - 8 * 3_600_000);
  });

  it('refuses times that name no real moment, and zones that do not exist', () => {
    for (const text of ['2026-02-30T10:00:00Z', '2026-13-01T00:00:00Z', '2026-01-01T24:00:00Z', 'yesterday', '']) expect(parseIsoTime(text, UTC), text).toBeUndefined();
    expect(parseTimeZone('Mars/Olympus_Mons')).toBeUndefined();
    expect(parseTimeZone('+25:00')).toBeUndefined();
  });

  it('reads epoch numbers as seconds below 10^11 and ms above', () => {
    expect(parseRecordTime(1_780_300_000, UTC)).toBe(1_780_300_000_000);
    expect(parseRecordTime(1_780_300_000_123, UTC)).toBe(1_780_300_000_123);
    expect(parseRecordTime('1780300000123', UTC)).toBe(1_780_300_000_123);
    expect(parseRecordTime(-5, UTC)).toBeUndefined();
    expect(parseRecordTime(null, UTC)).toBeUndefined();
  });
});

function frame(text: string): JsonPiece[] {
  const framing = new JsonFraming();
  const pieces: JsonPiece[] = [];
  text.split('\n').forEach((line, i) => pieces.push(...framing.push(line, i + 1)));
  return [...pieces, ...framing.end()];
}

describe('JSON framing', () => {
  it('reads NDJSON, pretty-printed records and a JSON array written one object at a time', () => {
    const text = ['{"a":1}', '{', '  "b": "}{\\"",', '  "c": [1, {"d": 2}]', '}', '[', '  {"e": 3},', '  {"f": 4}', ']'].join('\n');
    expect(frame(text).map((p) => (p.kind === 'record' ? [p.line, p.endLine, JSON.parse(p.text) as unknown] : p))).toEqual([
      [1, 1, { a: 1 }],
      [2, 5, { b: '}{"', c: [1, { d: 2 }] }],
      [7, 7, { e: 3 }],
      [8, 8, { f: 4 }],
    ]);
  });

  it('reads every element of a JSON array whose first line opens a record, pretty-printed or compact on one line', () => {
    const values = (text: string): unknown[] => frame(text).map((p) => (p.kind === 'record' ? [p.line, JSON.parse(p.text) as unknown] : p));
    expect(values('[{\n  "a": 1\n},\n{\n  "b": "],[{"\n}]')).toEqual([
      [1, { a: 1 }],
      [4, { b: '],[{' }],
    ]);
    expect(values('[{"a":1}, {"b":[2]},{"c":{"d":3}}]\n[{"e":4}]')).toEqual([
      [1, { a: 1 }],
      [1, { b: [2] }],
      [1, { c: { d: 3 } }],
      [2, { e: 4 }],
    ]);
    expect(frame('[{"a":1},{"b":')).toEqual([
      { kind: 'record', line: 1, endLine: 1, text: '{"a":1}' },
      { kind: 'broken', line: 1, reason: 'the input ends before the record’s closing brace' },
    ]);
    expect(frame('[{"a":1} {"b":2}]')).toEqual([{ kind: 'broken', line: 1, reason: `unexpected text after the record's closing brace: {"b":2}]` }]);
  });

  it('reports a record cut short once, and goes on with the next', () => {
    const pieces = frame(['{"a":1,"b":', '{"c":2}', '{', '  "d": 1', '{"e":3}', '{"f":'].join('\n'));
    expect(pieces).toEqual([
      { kind: 'broken', line: 1, reason: 'the record ends before its closing brace (the next record starts on a new line)' },
      { kind: 'record', line: 2, endLine: 2, text: '{"c":2}' },
      { kind: 'broken', line: 3, reason: 'the record ends before its closing brace (the next record starts on a new line)' },
      { kind: 'record', line: 5, endLine: 5, text: '{"e":3}' },
      { kind: 'broken', line: 6, reason: 'the input ends before the record’s closing brace' },
    ]);
  });

  it('passes lines outside any record on as text, and refuses text after a record', () => {
    expect(frame('Lakekeeper version 0.14.0\n{"a":1} trailing')).toEqual([
      { kind: 'text', line: 1, text: 'Lakekeeper version 0.14.0' },
      { kind: 'broken', line: 2, reason: "unexpected text after the record's closing brace: trailing" },
    ]);
  });

  it('takes a record followed by blanks, a comma or the array end, and refuses other text after long blanks at once', () => {
    for (const tail of ['', '   ', ' , ', ']', ' ] , ', '\t]\t']) expect(frame(`{"a":1}${tail}`), JSON.stringify(tail)).toEqual([{ kind: 'record', line: 1, endLine: 1, text: '{"a":1}' }]);
    // 200,000 blanks then text: quadratic backtracking took minutes on such a line.
    expect(frame(`{"a":1}${' '.repeat(200_000)}x`)).toEqual([{ kind: 'broken', line: 1, reason: "unexpected text after the record's closing brace: x" }]);
    expect(frame(`{"a":1}]${' '.repeat(200_000)},x`)).toEqual([{ kind: 'broken', line: 1, reason: `unexpected text after the record's closing brace: ]${' '.repeat(39)}` }]);
  });

  it('keeps every digit of integers beyond 2^53 and leaves everything else alone', () => {
    expect(JSON.parse(quoteUnsafeIntegers('{"user_id":2100012345678901234,"n":-9007199254740993,"ok":12,"f":1.5e300,"s":"12345678901234567890"}'))).toEqual({
      user_id: '2100012345678901234',
      n: '-9007199254740993',
      ok: 12,
      f: 1.5e300,
      s: '12345678901234567890',
    });
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), (value) => {
        const text = JSON.stringify(value);
        expect(JSON.parse(quoteUnsafeIntegers(text))).toEqual(JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });
});

describe('record ids', () => {
  it('are the same for the same records in the same order, and differ for repeats of one record', () => {
    const first = new RecordIds('gravitino');
    const second = new RecordIds('gravitino');
    const lines = ['a', 'b', 'a', 'a'];
    const ids = lines.map((l) => first.next(l));
    expect(lines.map((l) => second.next(l))).toEqual(ids);
    expect(new Set(ids).size).toBe(4);
    expect(ids[0]).toMatch(/^gravitino-[0-9a-f]{32}$/);
    // Another format's identical text is another event.
    expect(new RecordIds('lho').next('a')).not.toBe(ids[0]);
  });

  it('count repeats within a window, so memory stays bounded', () => {
    const ids = new RecordIds('las');
    const a1 = ids.next('a');
    for (let i = 0; i < IDENTICAL_RECORDS_WINDOW; i++) ids.next(`filler ${i}`);
    // `a` has left the window: it counts as a first occurrence again.
    expect(ids.next('a')).toBe(a1);
  });
});

describe('Gravitino custom info', () => {
  it('splits members only where a new key= follows', () => {
    expect(parseCustomInfo('{source=scim, reason=Conflict, group exists, changes=active=false, roleNames=a,b}')).toEqual({
      source: 'scim',
      reason: 'Conflict, group exists',
      changes: 'active=false',
      roleNames: 'a,b',
    });
    expect(parseCustomInfo('')).toEqual({});
    expect(parseCustomInfo('{}')).toEqual({});
    expect(parseCustomInfo('count=3')).toBeUndefined();
  });
});

describe('LAS identifier types', () => {
  it('takes a type word as written, else the type of the event name, else other', () => {
    expect(identifierType('table', 'GetTable')).toBe('table');
    expect(identifierType('permission', 'GrantPermission')).toBe('permission');
    expect(identifierType('my_db.my_table', 'CreateTable')).toBe('table');
    expect(identifierType('sales', 'CreateDatabase')).toBe('database');
    expect(identifierType('sales.orders', 'AddPartition')).toBe('other');
  });
});
