// Goal: ingest validation refuses bad events whole, naming index and field, and normalises good ones exactly.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AuditError, AuditErrorCode } from '../src/audit-error.js';
import type { AuditEvent } from '../src/event.js';
import { validateEvent, validateIngestBody, type ValidateOptions } from '../src/event-validation.js';
import { boundedTables, FIELD_LIMIT_BYTES, TABLES_BYTES_MAX, truncationMarker } from '../src/field-limits.js';

const NOW_MS = 1_792_288_263_000;
const OPTIONS: ValidateOptions = { nowMs: NOW_MS };
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function base(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { source: 'trino', userId: 'alice', action: 'data:Select', ...extra };
}

/** Runs `fn`, which must throw an AuditError; returns it so the test can check code and message. */
function refusal(fn: () => unknown): AuditError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AuditError);
    return err as AuditError;
  }
  throw new Error('expected an AuditError, but the call succeeded');
}

function badRequest(body: unknown): string {
  const err = refusal(() => validateIngestBody(body, OPTIONS));
  expect(err.code).toBe(AuditErrorCode.BAD_REQUEST);
  return err.message;
}

function one(raw: Record<string, unknown>, options: ValidateOptions = OPTIONS): AuditEvent {
  const events = validateIngestBody(raw, options);
  expect(events).toHaveLength(1);
  return events[0]!;
}

describe('validateIngestBody: accepted input', () => {
  it('normalises a full event exactly (the reference example)', () => {
    const events = validateIngestBody(
      [
        {
          eventId: 'e-1',
          source: 'trino',
          userId: 'alice',
          action: 'data:Select',
          resource: 'hive.sales.orders',
          query: "SELECT id,total FROM hive.sales.orders WHERE region='EU'",
          tables: ['hive.sales.orders'],
          decision: 'ALLOW',
          details: 'trino authz plugin',
          ts: 1792288263000,
        },
        { eventId: 'e-2', source: 'trino', userId: 'bob', action: 'data:CreateTable', resource: 'hive.sales.secret', tables: ['hive.sales.secret'], decision: 'DENY', details: 'trino authz plugin (ontul: ABSTAIN)' },
      ],
      { nowMs: 1792288263005 },
    );
    expect(events).toEqual([
      {
        eventId: 'e-1',
        userId: 'alice',
        source: 'trino',
        action: 'data:Select',
        resource: 'hive.sales.orders',
        decision: 'ALLOW',
        tables: ['hive.sales.orders'],
        query: "SELECT id,total FROM hive.sales.orders WHERE region='EU'",
        details: 'trino authz plugin',
        timestamp: 1792288263000,
      },
      {
        eventId: 'e-2',
        userId: 'bob',
        source: 'trino',
        action: 'data:CreateTable',
        resource: 'hive.sales.secret',
        decision: 'DENY',
        tables: ['hive.sales.secret'],
        query: '',
        details: 'trino authz plugin (ontul: ABSTAIN)',
        timestamp: 1792288263005,
      },
    ]);
  });

  it('accepts a single object as a one-event body', () => {
    expect(one(base({ eventId: 'x' }))).toEqual({
      eventId: 'x', userId: 'alice', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp: NOW_MS,
    });
  });

  it('accepts an empty array as zero events', () => {
    expect(validateIngestBody([], OPTIONS)).toEqual([]);
  });

  it.each([
    ['allow', 'ALLOW'],
    ['Allow', 'ALLOW'],
    ['ALLOW', 'ALLOW'],
    ['deny', 'DENY'],
    ['dEnY', 'DENY'],
  ])('decision %j is accepted case-insensitively and stored as %j', (input, stored) => {
    expect(one(base({ decision: input })).decision).toBe(stored);
  });

  it('decision absent, null or empty is stored as empty', () => {
    expect(one(base()).decision).toBe('');
    expect(one(base({ decision: null })).decision).toBe('');
    expect(one(base({ decision: '' })).decision).toBe('');
  });

  it('ts absent or null takes the server time; ts 0 and the last instant of year 9999 are kept, later is refused', () => {
    expect(one(base()).timestamp).toBe(NOW_MS);
    expect(one(base({ ts: null })).timestamp).toBe(NOW_MS);
    expect(one(base({ ts: 0 })).timestamp).toBe(0);
    // (On a clock within a day of it: an event may not be dated more than a day ahead.)
    expect(one(base({ ts: 253_402_300_799_999 }), { nowMs: 253_402_300_799_999 - 86_400_000 }).timestamp).toBe(253_402_300_799_999);
    expect(new Date(253_402_300_799_999).toISOString()).toBe('9999-12-31T23:59:59.999Z');
    expect(() => one(base({ ts: 253_402_300_800_000 }))).toThrow('event.ts must be at most 253402300799999 (9999-12-31T23:59:59.999Z): 253402300800000');
    expect(() => one(base({ ts: 8_640_000_000_000_000 }))).toThrow(/ts must be at most 253402300799999/);
    expect(() => one(base({ ts: Number.MAX_SAFE_INTEGER }))).toThrow(/ts must be at most 253402300799999/);
  });

  it('refuses an event time more than a day ahead of the node clock, naming both times; a day ahead is kept; stored or forwarded events are not judged by it', () => {
    expect(one(base({ ts: NOW_MS + 86_400_000 })).timestamp).toBe(NOW_MS + 86_400_000);
    const ahead = NOW_MS + 86_400_001;
    expect(() => one(base({ ts: ahead }))).toThrow(
      `event.ts ${ahead} (${new Date(ahead).toISOString()}) is more than a day ahead of this node's clock (${new Date(NOW_MS).toISOString()}): an event cannot have happened yet`,
    );
    expect(() => one(base({ ts: Date.UTC(9000, 0, 1) }))).toThrow(/is more than a day ahead of this node's clock/);
    // The time field of a stored or forwarded event was judged where the event was received.
    const { ts: _ts, ...rest } = base();
    expect(one({ ...rest, timestamp: ahead }, { nowMs: 0, timeField: 'timestamp' }).timestamp).toBe(ahead);
  });

  it('treats null optional fields exactly like absent ones', () => {
    const withNulls = one(base({ eventId: null, resource: null, decision: null, tables: null, query: null, details: null, ts: null }), { nowMs: NOW_MS, newId: () => 'assigned' });
    const absent = one(base(), { nowMs: NOW_MS, newId: () => 'assigned' });
    expect(withNulls).toEqual(absent);
    expect(withNulls).toEqual({
      eventId: 'assigned', userId: 'alice', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp: NOW_MS,
    });
  });

  it('accepts exactly 10,000 events', () => {
    const body = Array.from({ length: 10_000 }, (_, i) => base({ eventId: `id-${i}` }));
    const events = validateIngestBody(body, OPTIONS);
    expect(events).toHaveLength(10_000);
    expect(events[9_999]!.eventId).toBe('id-9999');
  });

  it('accepts an eventId of exactly 128 characters', () => {
    const id = 'a'.repeat(128);
    expect(one(base({ eventId: id })).eventId).toBe(id);
  });

  it('assigns UUIDv7 ids that carry nowMs and are unique', () => {
    const events = validateIngestBody(Array.from({ length: 2_000 }, () => base()), OPTIONS);
    const ids = events.map((e) => e.eventId);
    for (const id of ids) {
      expect(id).toMatch(UUID_V7);
      // The first 48 bits of a UUIDv7 are the epoch ms it was made at.
      expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(NOW_MS);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('uses the injected id source, passing it nowMs', () => {
    const seen: number[] = [];
    const event = one(base(), { nowMs: 42, newId: (ms) => { seen.push(ms); return `fixed-${ms}`; } });
    expect(event.eventId).toBe('fixed-42');
    expect(seen).toEqual([42]);
  });
});

describe('validateIngestBody: refusals name the array index and field', () => {
  it('names the index of the bad event in an array', () => {
    const body = [base(), base(), base(), base({ decision: 'MAYBE' })];
    const message = badRequest(body);
    expect(message).toContain('events[3].decision');
    expect(message).toContain('MAYBE');
  });

  it.each(['source', 'userId', 'action'])('a missing %s is refused as required (single object: "event.<field>")', (field) => {
    const raw = base();
    delete raw[field];
    expect(badRequest(raw)).toBe(`event.${field} is required`);
    expect(badRequest([base(), raw])).toBe(`events[1].${field} is required`);
  });

  it('the exact single-object message for a missing userId', () => {
    expect(badRequest({ source: 'trino', action: 'data:Select' })).toBe('event.userId is required');
  });

  it.each(['source', 'userId', 'action'])('a null %s is refused as required', (field) => {
    expect(badRequest([base({ [field]: null })])).toBe(`events[0].${field} is required`);
  });

  it.each(['source', 'userId', 'action'])('an empty or blank %s is refused', (field) => {
    expect(badRequest([base({ [field]: '' })])).toContain(`events[0].${field}`);
    expect(badRequest([base({ [field]: '   ' })])).toContain(`events[0].${field}`);
  });

  it.each([
    ['userId', 42, 'number'],
    ['source', ['trino'], 'array'],
    ['action', { kind: 'read' }, 'object'],
    ['resource', 7, 'number'],
    ['query', true, 'boolean'],
    ['details', {}, 'object'],
    ['eventId', 5, 'number'],
  ])('a %s of the wrong type (%j) is refused, naming field and type', (field, value, typeName) => {
    const message = badRequest([base(), base({ [field]: value })]);
    expect(message).toContain(`events[1].${field}`);
    expect(message).toContain(typeName);
  });

  it.each([['MAYBE'], ['ALLOWED'], ['yes'], ['AL LOW']])('decision %j is refused', (decision) => {
    const message = badRequest(base({ decision }));
    expect(message).toContain('event.decision');
    expect(message).toContain(decision);
  });

  it.each([[1], [true], [['ALLOW']]])('a non-string decision %j is refused', (decision) => {
    expect(badRequest([base({ decision })])).toContain('events[0].decision');
  });

  it.each([[-1], [1.5], ['1792288263000'], [true], [2 ** 53], [{}]])('ts %j is refused', (ts) => {
    expect(badRequest([base(), base(), base({ ts })])).toContain('events[2].ts');
  });

  it.each([['hive.a,hive.b'], [{ 0: 'hive.a' }], [1]])('tables that are not an array (%j) are refused', (tables) => {
    expect(badRequest(base({ tables }))).toContain('event.tables');
  });

  it('a non-string tables entry is refused with its index', () => {
    expect(badRequest([base({ tables: ['hive.a', 1] })])).toContain('events[0].tables[1]');
    expect(badRequest([base(), base({ tables: ['a', 'b', null] })])).toContain('events[1].tables[2]');
  });

  it.each([['a string'], [5], [null], [true], [undefined]])('a body that is neither object nor array (%j) is refused', (body) => {
    expect(badRequest(body)).toMatch(/request body/);
  });

  it.each([['a string'], [5], [null], [['nested']]])('an array element that is not an object (%j) is refused with its index', (element) => {
    expect(badRequest([base(), element])).toContain('events[1]');
  });

  it('refuses more than 10,000 events in one request', () => {
    const body = Array.from({ length: 10_001 }, () => base());
    const message = badRequest(body);
    expect(message).toContain('10001');
    expect(message).toContain('10000');
  });

  it('refuses an eventId over 128 characters and an empty eventId', () => {
    expect(badRequest([base({ eventId: 'a'.repeat(129) })])).toContain('events[0].eventId');
    expect(badRequest(base({ eventId: '' }))).toContain('event.eventId');
  });

  it('property: one corrupted field anywhere in a batch is reported at its own index and field', () => {
    const corruptions: Array<[string, (e: Record<string, unknown>) => void]> = [
      ['source', (e) => { delete e['source']; }],
      ['userId', (e) => { e['userId'] = 3; }],
      ['action', (e) => { e['action'] = ' '; }],
      ['decision', (e) => { e['decision'] = 'PERMIT'; }],
      ['ts', (e) => { e['ts'] = -5; }],
      ['tables', (e) => { e['tables'] = 'x'; }],
      ['tables[1]', (e) => { e['tables'] = ['ok', false]; }],
      ['eventId', (e) => { e['eventId'] = 'x'.repeat(200); }],
      ['query', (e) => { e['query'] = 12; }],
    ];
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.nat(), fc.constantFrom(...corruptions), (n, pick, [field, corrupt]) => {
        const index = pick % n;
        const body = Array.from({ length: n }, (_, i) => base({ eventId: `id-${i}`, tables: ['t'] }));
        corrupt(body[index]!);
        expect(badRequest(body).startsWith(`events[${index}].${field}`)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});

describe('validateIngestBody: over-long fields are truncated, not refused', () => {
  it('stores a query over 64 KiB truncated with the visible marker, the whole within 64 KiB', () => {
    const limit = 64 * 1024;
    const query = 'x'.repeat(limit + 1);
    const stored = one(base({ query })).query;
    const marker = truncationMarker(limit + 1);
    expect(stored.endsWith(marker)).toBe(true);
    expect(Buffer.byteLength(stored, 'utf8')).toBe(limit);
    expect(stored).toBe('x'.repeat(limit - Buffer.byteLength(marker, 'utf8')) + marker);
  });

  it('keeps a query of exactly 64 KiB intact', () => {
    const query = 'y'.repeat(64 * 1024);
    expect(one(base({ query })).query).toBe(query);
  });

  it('never splits a multi-byte character when truncating a query', () => {
    const query = '€'.repeat(30_000); // 90,000 UTF-8 bytes
    const stored = one(base({ query })).query;
    const marker = truncationMarker(90_000);
    expect(Buffer.byteLength(stored, 'utf8')).toBeLessThanOrEqual(64 * 1024);
    expect(stored.endsWith(marker)).toBe(true);
    const kept = stored.slice(0, -marker.length);
    expect(kept).toBe('€'.repeat(kept.length));
    expect(stored).not.toContain('\uFFFD');
  });

  it.each(Object.entries(FIELD_LIMIT_BYTES).filter(([f]) => f !== 'table'))('%s over its limit of %d bytes is truncated with the marker', (field, limit) => {
    const value = 'v'.repeat(limit + 10);
    const stored = one(base({ [field]: value }))[field as keyof AuditEvent] as string;
    expect(Buffer.byteLength(stored, 'utf8')).toBe(limit);
    expect(stored.endsWith(truncationMarker(limit + 10))).toBe(true);
  });

  it('truncates a single over-long table name', () => {
    const stored = one(base({ tables: ['t'.repeat(5000)] })).tables;
    expect(stored).toHaveLength(1);
    expect(Buffer.byteLength(stored[0]!, 'utf8')).toBe(FIELD_LIMIT_BYTES.table);
    expect(stored[0]!.endsWith(truncationMarker(5000))).toBe(true);
  });

  it('keeps exactly 1,000 tables unchanged', () => {
    const tables = Array.from({ length: 1000 }, (_, i) => `db.t${i}`);
    expect(one(base({ tables })).tables).toEqual(tables);
  });

  it('keeps the first 1,000 of more tables and summarises the rest in one marker entry', () => {
    const tables = Array.from({ length: 2500 }, (_, i) => `db.t${i}`);
    const stored = one(base({ tables })).tables;
    expect(stored).toHaveLength(1001);
    expect(stored.slice(0, 1000)).toEqual(tables.slice(0, 1000));
    expect(stored[1000]).toBe('…[truncated by auditlake: 1500 more tables]');
  });

  it('keeps a list already bounded as it is (its marker last), and adds to the marker what it cuts further: bounding twice is bounding once', () => {
    const tables = Array.from({ length: 2500 }, (_, i) => `db.t${i}`);
    const once = boundedTables(tables);
    expect(boundedTables(once)).toEqual(once);
    expect(one(base({ tables: once })).tables).toEqual(one(base({ tables })).tables);
    // A marked list longer than the bound: the marker counts both.
    const marked = [...Array.from({ length: 1200 }, (_, i) => `db.u${i}`), '…[truncated by auditlake: 7 more tables]'];
    expect(boundedTables(marked).at(-1)).toBe('…[truncated by auditlake: 207 more tables]');
    expect(boundedTables(marked)).toHaveLength(1001);
    // Only a marker it could have written: a count of 16 digits or more is a name like any other, cut and counted.
    const huge = `…[truncated by auditlake: ${'9'.repeat(7_000)} more tables]`;
    const cut = boundedTables(['db.a', huge]);
    expect(cut).toHaveLength(2);
    expect(Buffer.byteLength(cut[1]!, 'utf8')).toBeLessThanOrEqual(FIELD_LIMIT_BYTES.table);
    const stored = one(base({ tables: ['db.a', `…[truncated by auditlake: ${'1'.repeat(22)} more tables]`] })).tables;
    expect(boundedTables(stored)).toEqual(stored);
  });

  it('keeps the tables that fit in 64 KiB in all, in order, and summarises the rest in one marker entry', () => {
    // 100 names of 4,000 bytes (é is two): 16 fit.
    const tables = Array.from({ length: 100 }, (_, i) => `db.${String(i).padStart(2, '0')}${'é'.repeat(1996)}x`);
    const stored = one(base({ tables })).tables;
    expect(stored).toHaveLength(17);
    expect(stored.slice(0, 16)).toEqual(tables.slice(0, 16));
    expect(stored[16]).toBe('…[truncated by auditlake: 84 more tables]');
    expect(stored.slice(0, 16).reduce((n, t) => n + Buffer.byteLength(t), 0)).toBeLessThanOrEqual(TABLES_BYTES_MAX);
    // Exactly 64 KiB is kept whole.
    const whole = Array.from({ length: 16 }, (_, i) => `t${String(i).padStart(2, '0')}`.padEnd(4096, 'x'));
    expect(one(base({ tables: whole })).tables).toEqual(whole);
  });

  it('still refuses a non-string entry beyond the first 1,000 tables', () => {
    const tables: unknown[] = Array.from({ length: 1200 }, (_, i) => `db.t${i}`);
    tables[1100] = 7;
    expect(badRequest(base({ tables }))).toContain('event.tables[1100]');
  });
});

describe('validateEvent', () => {
  it('uses the given name in messages', () => {
    const err = refusal(() => validateEvent({ source: 'x', action: 'y' }, 'forwarded[7]', OPTIONS));
    expect(err.code).toBe(AuditErrorCode.BAD_REQUEST);
    expect(err.message).toBe('forwarded[7].userId is required');
  });
});

describe('redacted (the masked-value count)', () => {
  it('is kept from the stored shape, placed before timestamp, and absent when zero', () => {
    const stored = { eventId: 'e1', ...base(), query: 'password=***', timestamp: 5, redacted: 2 };
    const event = validateEvent(stored, 'forwarded event', { nowMs: 0, timeField: 'timestamp' });
    expect(event.redacted).toBe(2);
    expect(Object.keys(event).slice(-2)).toEqual(['redacted', 'timestamp']);
    expect('redacted' in validateEvent({ ...stored, redacted: 0 }, 'forwarded event', { nowMs: 0, timeField: 'timestamp' })).toBe(false);
  });

  it('is ignored in ingest input: only the node that masks sets it', () => {
    expect('redacted' in one(base({ redacted: 7 }))).toBe(false);
  });

  it('refuses a stored count that is not a non-negative integer', () => {
    const err = refusal(() => validateEvent({ eventId: 'e1', ...base(), timestamp: 5, redacted: -1 }, 'forwarded event', { nowMs: 0, timeField: 'timestamp' }));
    expect(err.message).toBe('forwarded event.redacted must be a non-negative integer: -1');
  });
});

describe('validateIngestBody: source numbering, reserved actions, well-formed text', () => {
  it('keeps sourceId and sourceSeq, placed before the event time in the stored layout', () => {
    const event = one(base({ sourceId: 'trino-plugin-3', sourceSeq: 41, ts: 5 }));
    expect(event).toMatchObject({ sourceId: 'trino-plugin-3', sourceSeq: 41, timestamp: 5 });
    expect(Object.keys(event).slice(-3)).toEqual(['sourceId', 'sourceSeq', 'timestamp']);
    expect(one(base({ sourceId: 'p' }))).not.toHaveProperty('sourceSeq');
    expect(one(base({ sourceId: null, sourceSeq: null }))).not.toHaveProperty('sourceId');
  });

  it('refuses a bad sourceId or sourceSeq, naming it', () => {
    expect(badRequest([base(), base({ sourceSeq: 3 })])).toBe('events[1].sourceSeq needs a sourceId (the source it counts events of)');
    expect(badRequest(base({ sourceId: 'p', sourceSeq: -1 }))).toBe('event.sourceSeq must be a non-negative integer: -1');
    expect(badRequest(base({ sourceId: 'p', sourceSeq: 1.5 }))).toBe('event.sourceSeq must be a non-negative integer: 1.5');
    // A wild sourceSeq would read as ~9e15 missing for ever: refused past SOURCE_SEQ_MAX (10^11 − 1).
    expect(one(base({ sourceId: 'p', sourceSeq: 99_999_999_999 })).sourceSeq).toBe(99_999_999_999);
    expect(badRequest([base({ sourceId: 'p', sourceSeq: 1 }), base({ sourceId: 'p', sourceSeq: 100_000_000_000 })])).toBe('events[1].sourceSeq must be at most 99999999999 (a source\'s own count of its events): 100000000000');
    expect(badRequest(base({ sourceId: 'p', sourceSeq: 2 ** 53 - 1 }))).toBe('event.sourceSeq must be at most 99999999999 (a source\'s own count of its events): 9007199254740991');
    // A node forwarding what it accepted (a version without the bound) is not refused after the fact.
    expect(validateEvent(base({ sourceId: 'p', sourceSeq: 2 ** 53 - 1, timestamp: 1 }), 'forwarded', { nowMs: 0, timeField: 'timestamp', allowReserved: true }).sourceSeq).toBe(2 ** 53 - 1);
    expect(badRequest(base({ sourceId: 7 }))).toBe('event.sourceId must be a string, got number');
    expect(badRequest(base({ sourceId: '' }))).toBe('event.sourceId must not be empty');
    expect(badRequest(base({ sourceId: 'x'.repeat(257) }))).toBe('event.sourceId must be at most 256 characters, got 257');
  });

  it('refuses the actions only auditlake records, from clients but not from nodes forwarding', () => {
    for (const action of ['integrity:Checkpoint', 'integrity:RegisterKey', 'audit:EraseFields']) {
      expect(badRequest([base({ source: 'auditlake', action })])).toBe(`events[0].action ${action} of source auditlake is reserved: only auditlake itself records it`);
      expect(validateEvent(base({ source: 'auditlake', action, timestamp: 1 }), 'forwarded', { nowMs: 0, timeField: 'timestamp', allowReserved: true }).action).toBe(action);
    }
    // The same actions under another source are ordinary events.
    expect(one(base({ action: 'integrity:Checkpoint' })).action).toBe('integrity:Checkpoint');
  });

  it('refuses any event of auditlake\'s own source from clients, however it is spelled, but not from nodes forwarding', () => {
    // A settings change as the node records it: a client must not be able to forge one.
    const forged = { source: 'auditlake', userId: 'admin', action: 'audit:UpdateSettings', resource: 'audit.settings', details: 'audit.retention.days: 1 → 3650' };
    expect(badRequest([base(), base(forged)])).toBe('events[1].source "auditlake" is reserved: only auditlake itself records events of source auditlake; send your events under your engine\'s name');
    // Look-alikes: a Cyrillic а, е and і, a Greek ι, a capital I or a 1 for the l, an accent.
    const lookalikes = ['\u0430uditlake', 'auditlak\u0435', 'aud\u0456tlake', 'audit\u03b9ake', 'auditIake', 'audit1ake', 'AUDITLAKE', 'aúditlake', 'a\u0301uditlake'];
    // Small capitals, kra, Cyrillic and Latin k with hooks and descenders, a retroflex d; a Braille blank and a Hangul filler.
    lookalikes.push('auditla\u0138e', 'auditla\u1d0be', 'au\u0256itlake', '\u1d00uditlake', 'auditlak\u1d07', 'auditla\u049be', 'auditla\u0199e', 'auditlake\u2800', 'audit\u3164lake', 'auditlake\u0000');
    // Letters no table here names, standing in for one of the word's.
    lookalikes.push('auditlak\uab32', 'audit\ua647ake', 'audi\ua787lake', 'auditla\ua741e', '\u4e00uditlake');
    // Punctuation and symbols around or inside the name (review).
    lookalikes.push('auditlake.', 'audit-lake', 'audit_lake', 'auditlake:', 'auditlake/', '.auditlake', '(auditlake)', 'a.u.d.i.t.l.a.k.e', 'audit|ake', '[auditlake]', 'auditlake\u3002', 'audit\u2014lake');
    for (const spelling of ['AuditLake', ' auditlake ', 'audit\u200Blake', '\u202Eauditlake', 'ａｕｄｉｔｌａｋｅ', 'audit lake', ...lookalikes]) {
      expect(badRequest(base({ ...forged, source: spelling }))).toBe(`event.source ${JSON.stringify(spelling)} is reserved: only auditlake itself records events of source auditlake; send your events under your engine's name`);
    }
    expect(validateEvent(base({ ...forged, timestamp: 1 }), 'forwarded', { nowMs: 0, timeField: 'timestamp', allowReserved: true }).source).toBe('auditlake');
    // Names that merely contain it are other sources.
    for (const source of ['auditlake-import', 'my-auditlake', 'trino', 'auditlog', 'audit\u0430', 'auditlake\u4e00', 'ауди\u0442лейк']) expect(one(base({ ...forged, source })).source).toBe(source);
  });

  it('refuses a lone surrogate in sourceId, naming the field, like every other string field', () => {
    expect(() => one(base({ sourceId: 's\uD800' }))).toThrow(/sourceId is not well-formed Unicode: a lone surrogate \(U\+D800\) at character 1/);
    expect(one(base({ sourceId: 'plugin 😀' })).sourceId).toBe('plugin 😀');
  });
});
