// Goal: search parameters parse exactly as the reference's "Search and Filters" table says, and the predicate matches a plain reference implementation.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AuditError, AuditErrorCode } from '../src/audit-error.js';
import type { AuditEvent } from '../src/event.js';
import { compileFilter, DEFAULT_SEARCH_LIMIT, inTimeRange, parseSearchParams, type SearchFilter } from '../src/search-filter.js';

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

  it('caps limit at the max page instead of refusing it', () => {
    expect(parseSearchParams({ limit: '9000' }, MAX_PAGE).limit).toBe(5000);
    expect(parseSearchParams({ limit: '5000' }, MAX_PAGE).limit).toBe(5000);
    expect(parseSearchParams({ limit: '1' }, MAX_PAGE).limit).toBe(1);
    expect(parseSearchParams({ limit: '150' }, 100).limit).toBe(100);
    expect(parseSearchParams({}, 100).limit).toBe(100);
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
