// Goal: search parameters parse exactly as the reference's "Search and Filters" table says, and the predicate matches a plain reference implementation.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AuditError, AuditErrorCode } from '../src/audit-error.js';
import type { AuditEvent } from '../src/event.js';
import { compileFilter, DEFAULT_SEARCH_LIMIT, inTimeRange, parseSearchParams, upperTimeMs, type SearchFilter } from '../src/search-filter.js';
import { encodeCursor, isAfterCursor, newestFirst, type EventPosition } from '../src/search-cursor.js';

const MAX_PAGE = 5000;

function badParam(params: Record<string, unknown>, maxPage = MAX_PAGE): string {
  try {
    parseSearchParams(params, maxPage);
  } catch (err) {
    expect(err).toBeInstanceOf(AuditError);
    expect((err as AuditError).code).toBe(AuditErrorCode.BAD_REQUEST);
    return (err as AuditError).message;
  }
  throw new Error(`expected AUDIT_BAD_REQUEST for ${JSON.stringify(params)}`);
}

function event(extra: Partial<AuditEvent> = {}): AuditEvent {
  return {
    eventId: 'e', userId: 'alice', source: 'trino', action: 'data:Select', resource: 'hive.sales.orders', decision: 'ALLOW',
    tables: ['hive.sales.orders'], query: 'SELECT 1', details: 'trino authz plugin', timestamp: 1000, ...extra,
  };
}

function matches(params: Record<string, string>, e: AuditEvent): boolean {
  const filter = parseSearchParams(params, MAX_PAGE);
  return compileFilter(filter)(e) && inTimeRange(filter, e.timestamp);
}

describe('parseSearchParams', () => {
  it('defaults to all actions and a limit of 200', () => {
    expect(DEFAULT_SEARCH_LIMIT).toBe(200);
    expect(parseSearchParams({}, MAX_PAGE)).toEqual({ action: 'all', limit: 200 });
  });

  it('parses every parameter', () => {
    expect(
      parseSearchParams({ user: 'alice', engine: 'Trino', table: 'sales.orders', action: 'read', q: 'ORDERS', from: '1792281600000', to: '1792368000000', limit: '50' }, MAX_PAGE),
    ).toEqual({ user: 'alice', engine: 'trino', table: 'sales.orders', action: 'read', q: 'orders', fromMs: 1792281600000, toMs: 1792368000000, limit: 50 });
  });

  it.each(['read', 'write', 'all'] as const)('accepts action=%s', (action) => {
    expect(parseSearchParams({ action }, MAX_PAGE).action).toBe(action);
  });

  it('treats empty values as absent', () => {
    expect(parseSearchParams({ user: '', engine: '', table: '', action: '', q: '', from: '', to: '', limit: '' }, MAX_PAGE)).toEqual({ action: 'all', limit: 200 });
  });

  it('keeps the user exact (case and all)', () => {
    expect(parseSearchParams({ user: 'Alice' }, MAX_PAGE).user).toBe('Alice');
  });

  it('accepts from equal to to', () => {
    expect(parseSearchParams({ from: '5', to: '5' }, MAX_PAGE)).toMatchObject({ fromMs: 5, toMs: 5 });
    expect(parseSearchParams({ from: '0' }, MAX_PAGE).fromMs).toBe(0);
  });

  it('refuses a limit above the max page, naming the cap, instead of cutting it silently', () => {
    expect(badParam({ limit: '9000' })).toBe('parameter limit must be at most 5000 (auditlake.audit.viewer.max.page): 9000; page with nextCursor or narrow the filters');
    expect(badParam({ limit: '5001' })).toMatch(/at most 5000/);
    expect(parseSearchParams({ limit: '5000' }, MAX_PAGE).limit).toBe(5000);
    expect(parseSearchParams({ limit: '1' }, MAX_PAGE).limit).toBe(1);
    expect(badParam({ limit: '150' }, 100)).toMatch(/^parameter limit must be at most 100 /);
    // The default follows a smaller cap rather than being refused.
    expect(parseSearchParams({}, 100).limit).toBe(100);
  });

  it('parses decision ALLOW, DENY and none (no decision), in any case', () => {
    expect(parseSearchParams({ decision: 'ALLOW' }, MAX_PAGE).decision).toBe('ALLOW');
    expect(parseSearchParams({ decision: 'deny' }, MAX_PAGE).decision).toBe('DENY');
    expect(parseSearchParams({ decision: 'none' }, MAX_PAGE).decision).toBe('');
    expect(parseSearchParams({ decision: '' }, MAX_PAGE).decision).toBeUndefined();
    expect(badParam({ decision: 'ABSTAIN' })).toBe('parameter decision must be ALLOW, DENY or none: ABSTAIN');
  });

  it('accepts ISO-8601 dates and date-times with a zone for from and to', () => {
    expect(parseSearchParams({ from: '2026-11-01', to: '2026-11-01T10:30Z' }, MAX_PAGE)).toMatchObject({ fromMs: Date.UTC(2026, 10, 1), toMs: Date.UTC(2026, 10, 1, 10, 30) });
    expect(parseSearchParams({ from: '2026-11-01T12:30:15.250+02:00' }, MAX_PAGE).fromMs).toBe(Date.UTC(2026, 10, 1, 10, 30, 15, 250));
    expect(parseSearchParams({ to: '2026-11-01T10:30:59.999Z' }, MAX_PAGE).toMs).toBe(Date.UTC(2026, 10, 1, 10, 30, 59, 999));
    // Without a zone the server would have to guess the caller's: refused.
    expect(badParam({ from: '2026-11-01T10:30' })).toBe('parameter from must be epoch millis or an ISO-8601 time with a zone (e.g. 2026-11-01T09:30:00Z): 2026-11-01T10:30');
    expect(badParam({ to: '2026-13-45' })).toMatch(/^parameter to must be epoch millis or an ISO-8601 time/);
    // Well formed but before any event time: said so.
    expect(badParam({ from: '1969-12-31T23:00:00Z' })).toBe('parameter from is before 1970-01-01T00:00:00Z, where event times start: 1969-12-31T23:00:00Z');
    expect(badParam({ to: '1969-12-31' })).toBe('parameter to is before 1970-01-01T00:00:00Z, where event times start: 1969-12-31');
    expect(badParam({ from: '2026-11-02Z', to: '2026-11-01' })).toMatch(/^parameter from/);
    expect(badParam({ from: '2026-11-02', to: '2026-11-01' })).toMatch(/^parameter from must not be after to/);
  });

  it('refuses a day the calendar does not have, instead of rolling it over into the next month (2026-02-30 read as March 2)', () => {
    for (const value of ['2026-02-30', '2026-02-29', '2026-04-31', '2026-02-29T10:00Z', '2026-06-31T23:00+02:00']) {
      expect(badParam({ from: value })).toBe(`parameter from names a day that does not exist: ${value}`);
    }
    expect(badParam({ to: '2026-01-01T24:00Z' })).toBe('parameter to has hour 24 (use 00 of the next day): 2026-01-01T24:00Z');
    // A leap day is a day.
    expect(parseSearchParams({ from: '2028-02-29' }, MAX_PAGE).fromMs).toBe(Date.UTC(2028, 1, 29));
    expect(parseSearchParams({ to: '2028-02-29' }, MAX_PAGE).toMs).toBe(Date.UTC(2028, 2, 1) - 1);
  });

  it('takes a bare date as to for the whole of that UTC day, as the ledger does', () => {
    const filter = parseSearchParams({ from: '2026-11-01', to: '2026-11-30' }, MAX_PAGE);
    expect(filter).toMatchObject({ fromMs: Date.UTC(2026, 10, 1), toMs: Date.UTC(2026, 10, 30, 23, 59, 59, 999) });
    expect(inTimeRange(filter, Date.UTC(2026, 10, 30, 15))).toBe(true);
    // The last millisecond of the 30th is in; the 1st of December's first is not.
    expect(inTimeRange(filter, Date.UTC(2026, 10, 30, 23, 59, 59, 999))).toBe(true);
    expect(inTimeRange(filter, Date.UTC(2026, 11, 1))).toBe(false);
    expect(inTimeRange(filter, Date.UTC(2026, 10, 1))).toBe(true);
    expect(inTimeRange(filter, Date.UTC(2026, 10, 1) - 1)).toBe(false);
    // One day as both bounds is that whole day.
    expect(parseSearchParams({ from: '2026-11-30', to: '2026-11-30' }, MAX_PAGE)).toMatchObject({ fromMs: Date.UTC(2026, 10, 30), toMs: Date.UTC(2026, 10, 31) - 1 });
    // A date-time or epoch millis as to is taken as written.
    expect(parseSearchParams({ to: '2026-11-30T00:00Z' }, MAX_PAGE).toMs).toBe(Date.UTC(2026, 10, 30));
    expect(parseSearchParams({ to: String(Date.UTC(2026, 10, 30)) }, MAX_PAGE).toMs).toBe(Date.UTC(2026, 10, 30));
  });

  it('reads back a cursor it handed out and refuses anything else', () => {
    const cursor = { timestamp: 1_790_000_000_123, ingestTs: 1_790_000_000_456, eventId: 'ev/"1"' };
    expect(parseSearchParams({ cursor: encodeCursor(cursor) }, MAX_PAGE).cursor).toEqual(cursor);
    for (const bad of ['abc', 'not+base64', Buffer.from('[1,2]').toString('base64url'), Buffer.from('[1,-2,"x"]').toString('base64url'), Buffer.from('[1,2,""]').toString('base64url'), Buffer.from('{"a":1}').toString('base64url')]) {
      expect(badParam({ cursor: bad })).toMatch(/^parameter cursor must be a nextCursor value this API returned: /);
    }
  });

  it.each([
    ['from', { from: 'abc' }],
    ['from', { from: '-1' }],
    ['from', { from: '1.5' }],
    ['from', { from: '1e3' }],
    ['to', { to: 'yesterday' }],
    ['to', { to: '99999999999999999999' }],
    ['action', { action: 'foo' }],
    ['action', { action: 'READ' }],
    ['limit', { limit: '0' }],
    ['limit', { limit: 'abc' }],
    ['limit', { limit: '-5' }],
    ['limit', { limit: '2.5' }],
    ['from', { from: '10', to: '9' }],
    ['usr', { usr: 'alice' }],
    ['user', { user: ['alice', 'bob'] }],
    ['limit', { limit: ['1', '2'] }],
    ['q', { q: ['a', 'b'] }],
  ])('refuses a bad %s, naming it', (name, params) => {
    expect(badParam(params)).toContain(name);
  });
});

describe('compileFilter semantics', () => {
  it('user is exact', () => {
    expect(matches({ user: 'alice' }, event())).toBe(true);
    expect(matches({ user: 'Alice' }, event())).toBe(false);
    expect(matches({ user: 'ali' }, event())).toBe(false);
  });

  it('engine is case-insensitive and exact', () => {
    expect(matches({ engine: 'TRINO' }, event())).toBe(true);
    expect(matches({ engine: 'trino' }, event({ source: 'Trino' }))).toBe(true);
    expect(matches({ engine: 'tri' }, event())).toBe(false);
    expect(matches({ engine: 'spark' }, event())).toBe(false);
  });

  it('table is a substring of any touched table', () => {
    const e = event({ tables: ['hive.sales.orders', 'hive.hr.people'] });
    expect(matches({ table: 'sales.orders' }, e)).toBe(true);
    expect(matches({ table: 'hr.peo' }, e)).toBe(true);
    expect(matches({ table: 'finance' }, e)).toBe(false);
    expect(matches({ table: 'hive' }, event({ tables: [] }))).toBe(false);
    // Substring of one table, not of the joined list.
    expect(matches({ table: 'orders,hive' }, e)).toBe(false);
  });

  it('action read is data:Select, write is everything else', () => {
    const select = event({ action: 'data:Select' });
    const insert = event({ action: 'data:Insert' });
    const ddl = event({ action: 'data:CreateTable' });
    expect([matches({ action: 'read' }, select), matches({ action: 'read' }, insert), matches({ action: 'read' }, ddl)]).toEqual([true, false, false]);
    expect([matches({ action: 'write' }, select), matches({ action: 'write' }, insert), matches({ action: 'write' }, ddl)]).toEqual([false, true, true]);
    expect([matches({ action: 'all' }, select), matches({ action: 'all' }, insert)]).toEqual([true, true]);
  });

  it.each([
    ['query', { query: 'SELECT * FROM Orders' }],
    ['details', { details: 'ontul: ABSTAIN on ORDERS' }],
    ['resource', { resource: 'hive.x.orders' }],
    ['userId', { userId: 'orders-bot' }],
    ['action', { action: 'data:OrdersExport' }],
    ['tables', { tables: ['a', 'hive.x.ORDERS'] }],
  ])('q matches %s case-insensitively', (_field, extra) => {
    const blank = event({ userId: 'u', action: 'data:Insert', resource: '', query: '', details: '', tables: [] });
    expect(matches({ q: 'orders' }, blank)).toBe(false);
    expect(matches({ q: 'OrDeRs' }, { ...blank, ...extra })).toBe(true);
  });

  it('q does not search the source', () => {
    const e = event({ source: 'flinkish', userId: 'u', action: 'data:Insert', resource: '', query: '', details: '', tables: [] });
    expect(matches({ q: 'flinkish' }, e)).toBe(false);
    expect(matches({ engine: 'FLINKISH' }, e)).toBe(true);
  });

  it('from and to are inclusive bounds on the event time', () => {
    const f = parseSearchParams({ from: '100', to: '200' }, MAX_PAGE);
    expect([99, 100, 150, 200, 201].map((ts) => inTimeRange(f, ts))).toEqual([false, true, true, true, false]);
    expect(inTimeRange(parseSearchParams({ from: '100' }, MAX_PAGE), Number.MAX_SAFE_INTEGER)).toBe(true);
    expect(inTimeRange(parseSearchParams({ to: '100' }, MAX_PAGE), 0)).toBe(true);
  });

  it('decision selects ALLOW, DENY, or events without one', () => {
    const [allow, deny, none] = [event({ decision: 'ALLOW' }), event({ decision: 'DENY' }), event({ decision: '' })];
    expect([allow, deny, none].map((e) => matches({ decision: 'ALLOW' }, e))).toEqual([true, false, false]);
    expect([allow, deny, none].map((e) => matches({ decision: 'DENY' }, e))).toEqual([false, true, false]);
    expect([allow, deny, none].map((e) => matches({ decision: 'none' }, e))).toEqual([false, false, true]);
  });

  it('a cursor keeps only events strictly after it in the newest-first order, and bounds the time scanned', () => {
    const cursor = { timestamp: 100, ingestTs: 50, eventId: 'm' };
    const filter = parseSearchParams({ cursor: encodeCursor(cursor) }, MAX_PAGE);
    const at = (timestamp: number, ingestTs: number, eventId: string) => compileFilter(filter)({ ...event({ eventId, timestamp }), ingestTs });
    expect(at(100, 50, 'm')).toBe(false); // the cursor's own event
    expect(at(101, 1, 'a')).toBe(false); // newer time
    expect(at(100, 51, 'a')).toBe(false); // same time, ingested later
    expect(at(100, 50, 'z')).toBe(false); // same time and ingest, larger id comes first
    expect(at(100, 50, 'a')).toBe(true);
    expect(at(100, 49, 'z')).toBe(true);
    expect(at(99, 99, 'z')).toBe(true);
    expect(upperTimeMs(filter)).toBe(100);
    expect(upperTimeMs({ ...filter, toMs: 80 })).toBe(80);
    expect(upperTimeMs({ toMs: 80 })).toBe(80);
  });

  it('combines every filter with AND', () => {
    const params = { user: 'alice', engine: 'trino', table: 'orders', action: 'read', q: 'region', from: '500', to: '1500' };
    const hit = event({ query: "SELECT * WHERE region='EU'" });
    expect(matches(params, hit)).toBe(true);
    expect(matches(params, { ...hit, userId: 'bob' })).toBe(false);
    expect(matches(params, { ...hit, source: 'spark' })).toBe(false);
    expect(matches(params, { ...hit, tables: ['hive.sales.items'] })).toBe(false);
    expect(matches(params, { ...hit, action: 'data:Insert' })).toBe(false);
    expect(matches(params, { ...hit, query: 'SELECT 1' })).toBe(false);
    expect(matches(params, { ...hit, timestamp: 1501 })).toBe(false);
  });
});

/** The reference table, read literally, over raw (unparsed) parameters. */
function referenceMatch(p: Record<string, string>, e: AuditEvent): boolean {
  const given = (name: string): string | undefined => (p[name] === undefined || p[name] === '' ? undefined : p[name]);
  const user = given('user');
  const engine = given('engine');
  const table = given('table');
  const action = given('action') ?? 'all';
  const q = given('q');
  const from = given('from');
  const to = given('to');
  if (user !== undefined && e.userId !== user) return false;
  if (engine !== undefined && e.source.toLowerCase() !== engine.toLowerCase()) return false;
  if (table !== undefined && !e.tables.some((t) => t.includes(table))) return false;
  if (action === 'read' && e.action !== 'data:Select') return false;
  if (action === 'write' && e.action === 'data:Select') return false;
  if (q !== undefined) {
    const haystacks = [e.query, e.details, e.resource, e.userId, e.action, ...e.tables];
    if (!haystacks.some((h) => h.toLowerCase().includes(q.toLowerCase()))) return false;
  }
  if (from !== undefined && e.timestamp < Number(from)) return false;
  if (to !== undefined && e.timestamp > Number(to)) return false;
  return true;
}

describe('compileFilter property', () => {
  // Small alphabets so filters and events collide often enough to exercise both outcomes.
  const word = fc.string({ unit: fc.constantFrom('a', 'b', 'A', 'B', '.', ':', 'é', 'É'), maxLength: 4 });
  const arbEvent: fc.Arbitrary<AuditEvent> = fc.record({
    eventId: fc.constant('e'),
    userId: fc.oneof(fc.constantFrom('alice', 'Alice', 'bob'), word),
    source: fc.constantFrom('trino', 'Trino', 'SPARK', 'flink', 'ontul', 'ab'),
    action: fc.constantFrom('data:Select', 'data:select', 'data:Insert', 'data:CreateTable', 'iam:Grant'),
    resource: word,
    decision: fc.constantFrom('ALLOW' as const, 'DENY' as const, '' as const),
    tables: fc.array(word, { maxLength: 3 }),
    query: word,
    details: word,
    timestamp: fc.integer({ min: 0, max: 20 }),
  });
  const arbParams: fc.Arbitrary<Record<string, string>> = fc.record(
    {
      user: fc.oneof(fc.constantFrom('alice', 'Alice', 'bob', ''), word),
      engine: fc.constantFrom('trino', 'TRINO', 'spark', 'Flink', 'ab', ''),
      table: word,
      action: fc.constantFrom('read', 'write', 'all', ''),
      q: word,
      from: fc.integer({ min: 0, max: 10 }).map(String),
      to: fc.integer({ min: 10, max: 20 }).map(String),
    },
    { requiredKeys: [] },
  );

  it('equals the reference implementation on random events and filters', () => {
    fc.assert(
      fc.property(arbParams, fc.array(arbEvent, { maxLength: 20 }), (params, events) => {
        const filter: SearchFilter = parseSearchParams(params, MAX_PAGE);
        const predicate = compileFilter(filter);
        for (const e of events) {
          expect(predicate(e) && inTimeRange(filter, e.timestamp)).toBe(referenceMatch(params, e));
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('newest-first order and cursor', () => {
  const position: fc.Arbitrary<EventPosition> = fc.record({
    timestamp: fc.integer({ min: 0, max: 3 }),
    ingestTs: fc.integer({ min: 0, max: 3 }),
    eventId: fc.constantFrom('a', 'b', 'c', 'B', 'é'),
  });

  it('is a total order, and "after the cursor" is exactly "sorts after it"', () => {
    fc.assert(
      fc.property(fc.array(position, { maxLength: 30 }), position, (events, cursor) => {
        const sorted = [...events].sort(newestFirst);
        for (let i = 1; i < sorted.length; i++) expect(newestFirst(sorted[i - 1]!, sorted[i]!)).toBeLessThanOrEqual(0);
        for (const e of events) {
          expect(newestFirst(e, e)).toBe(0);
          expect(Math.sign(newestFirst(e, cursor)) + Math.sign(newestFirst(cursor, e))).toBe(0);
          expect(isAfterCursor(cursor, e)).toBe(newestFirst(cursor, e) < 0);
        }
      }),
      { numRuns: 300 },
    );
  });
});
