// Goal: POST /v1/api/audit stores valid events exactly as the contract says and refuses bad input whole.
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, INGEST_TOKEN, event, startTestNode } from './test-node.js';

describe('ingest', () => {
  it('stores one event or an array and answers {"status":"ok","ingested":N}', async () => {
    const t = await startTestNode();
    expect(await t.ingest(event({ eventId: 'single' }))).toEqual({ status: 200, json: { status: 'ok', ingested: 1 } });
    const res = await t.ingest([event({ eventId: 'a1' }), event({ eventId: 'a2', decision: 'DENY', action: 'data:CreateTable' })]);
    expect(res).toEqual({ status: 200, json: { status: 'ok', ingested: 2 } });
    const stored = await t.stored();
    expect(stored.map((e) => e.eventId).sort()).toEqual(['a1', 'a2', 'single']);
  });

  it('normalises: decision upper-cased, optional fields empty, ts defaults to server time, seq and ingestTs assigned', async () => {
    const t = await startTestNode();
    const before = Date.now();
    await t.ingest([{ source: 'spark', userId: 'bob', action: 'data:Insert', decision: 'deny' }, { source: 'spark', userId: 'bob', action: 'data:Insert', ts: 1234 }]);
    const after = Date.now();
    const [first, second] = (await t.stored()).sort((a, b) => a.seq - b.seq);
    expect(first).toMatchObject({ decision: 'DENY', resource: '', query: '', details: '', tables: [], seq: 1 });
    expect(first!.timestamp).toBeGreaterThanOrEqual(before);
    expect(first!.timestamp).toBeLessThanOrEqual(after);
    expect(first!.eventId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(second).toMatchObject({ decision: '', timestamp: 1234, seq: 2 });
    expect(second!.ingestTs).toBeGreaterThanOrEqual(first!.ingestTs);
    expect(first!.ingestTs).toBeGreaterThanOrEqual(before);
  });

  it('returns events in the output shape of the contract', async () => {
    const t = await startTestNode();
    await t.ingest(event({ eventId: 'shape', decision: 'allow', details: 'trino authz plugin', ts: 1792288263000 }));
    const { json } = await t.search();
    expect(Object.keys(json.events[0]!).sort()).toEqual(
      ['eventId', 'userId', 'source', 'action', 'resource', 'decision', 'tables', 'query', 'details', 'timestamp', 'ingestTs'].sort(),
    );
    expect(json.events[0]).toMatchObject({ eventId: 'shape', decision: 'ALLOW', timestamp: 1792288263000, tables: ['hive.sales.orders'] });
  });

  it('is idempotent by client eventId: a retried request reports the events, counts them as duplicates and stores them once', async () => {
    const t = await startTestNode();
    const batch = [event({ eventId: 'r1' }), event({ eventId: 'r2' })];
    expect((await t.ingest(batch)).json).toEqual({ status: 'ok', ingested: 2 });
    expect((await t.ingest(batch)).json).toEqual({ status: 'ok', ingested: 2, duplicates: 2 });
    // A repeat inside one request is stored once as well.
    expect((await t.ingest([event({ eventId: 'r3' }), event({ eventId: 'r3' })])).json).toEqual({ status: 'ok', ingested: 2, duplicates: 1 });
    expect((await t.ingest([event({ eventId: 'r1' }), event({ eventId: 'r4' })])).json).toEqual({ status: 'ok', ingested: 2, duplicates: 1 });
    const ids = (await t.stored()).map((e) => e.eventId).sort();
    expect(ids).toEqual(['r1', 'r2', 'r3', 'r4']);
    expect(await t.node.store.getByEventId('r1')).toMatchObject({ eventId: 'r1', seq: 1 });
  });

  it('keeps one event when the same eventId arrives in concurrent requests', async () => {
    const t = await startTestNode();
    const results = await Promise.all(Array.from({ length: 20 }, () => t.ingest([event({ eventId: 'race' })])));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect((await t.stored()).filter((e) => e.eventId === 'race')).toHaveLength(1);
  });

  const refusals: Array<[string, unknown, RegExp]> = [
    ['a missing required field', [event(), { source: 'trino', action: 'data:Select' }], /^events\[1\]\.userId is required$/],
    ['a wrong type', [event({ userId: 42 })], /^events\[0\]\.userId must be a string, got number$/],
    ['a decision other than ALLOW/DENY', [event(), event(), event({ decision: 'MAYBE' })], /^events\[2\]\.decision must be ALLOW or DENY: MAYBE$/],
    ['a negative ts', [event({ ts: -1 })], /^events\[0\]\.ts must be a non-negative integer/],
    ['a fractional ts', [event({ ts: 1.5 })], /^events\[0\]\.ts must be a non-negative integer/],
    ['a string ts', [event({ ts: '1792288263000' })], /^events\[0\]\.ts must be a non-negative integer/],
    ['a ts past year 9999', [event(), event({ ts: 253_402_300_800_000 })], /^events\[1\]\.ts must be at most 253402300799999 \(9999-12-31T23:59:59\.999Z\): 253402300800000$/],
    ['a ts more than a day ahead of the node clock', [event(), event({ ts: Date.UTC(9000, 0, 1) })], /^events\[1\]\.ts 221845392000000 \(9000-01-01T00:00:00\.000Z\) is more than a day ahead of this node's clock \(\d{4}-.*Z\): an event cannot have happened yet$/],
    ['a ts a JavaScript Date holds but no four-digit year does', [event({ ts: 8_640_000_000_000_000 })], /^events\[0\]\.ts must be at most 253402300799999/],
    ['tables that are not an array', [event({ tables: 'hive.a' })], /^events\[0\]\.tables must be an array of strings, got string$/],
    ['a non-string table', [event({ tables: ['hive.a', 7] })], /^events\[0\]\.tables\[1\] must be a string, got number$/],
    ['an array element that is not an object', [event(), 'x'], /^events\[1\] must be a JSON object, got string$/],
    ['a single object with a bad field', event({ action: '' }), /^event\.action must not be empty$/],
    ['a JSON shape that is neither object nor array', 42, /^request body must be an audit event object or an array of them, got number$/],
    ['invalid JSON', '[{"source":', /^request body is not valid JSON/],
    ['arrays nested 200,000 deep (seconds of parsing)', `[${'['.repeat(200_000)}${']'.repeat(200_000)}]`, /^request body nests arrays and objects deeper than 64 levels: an audit event is an object of strings and numbers with one array \(tables\)$/],
    ['an event with a field of objects nested 100 deep', JSON.stringify(Array.from({ length: 1_500 }, () => ({ ...event(), extra: JSON.parse('{"a":'.repeat(100) + '1' + '}'.repeat(100)) as unknown }))), /^request body nests arrays and objects deeper than 64 levels/],
  ];

  for (const [what, body, message] of refusals) {
    it(`refuses ${what} with 400 naming it, and stores nothing from the request`, async () => {
      const t = await startTestNode();
      const res = await t.ingest(body);
      expect(res.status).toBe(400);
      expect(res.json['status']).toBe('error');
      expect(res.json['error']).toMatch(message);
      expect(await t.stored()).toEqual([]);
    });
  }

  it('refuses more than 10,000 events with 400 and accepts exactly 10,000', async () => {
    const t = await startTestNode();
    const tooMany = await t.ingest(Array.from({ length: 10_001 }, () => event()));
    expect(tooMany.status).toBe(400);
    expect(tooMany.json['error']).toBe('too many events in one request: 10001 (at most 10000)');
    expect(await t.stored()).toHaveLength(0);
    const exact = await t.ingest(Array.from({ length: 10_000 }, () => event()));
    expect(exact.json).toEqual({ status: 'ok', ingested: 10_000 });
    expect(await t.stored()).toHaveLength(10_000);
  });

  it('refuses a body over 8 MiB with 413 and stores nothing', async () => {
    const t = await startTestNode();
    const big = [event({ query: 'x'.repeat(60_000) })];
    const body = JSON.stringify(Array.from({ length: 150 }, () => big[0]));
    expect(body.length).toBeGreaterThan(8 * 1024 * 1024);
    const res = await t.ingest(body);
    expect(res.status).toBe(413);
    expect(res.json['error']).toBe('request body is larger than the limit of 8388608 bytes (8 MiB); nothing was stored (send fewer events per request)');
    expect(await t.stored()).toHaveLength(0);
    const metrics = await (await t.request('/metrics', { token: null })).text();
    expect(metrics).toMatch(/^auditlake_events_refused_total 1$/m);
  });

  it('stores an over-long query truncated with a visible marker instead of dropping the event', async () => {
    const t = await startTestNode();
    const query = 'SELECT ' + 'é'.repeat(40_000);
    expect((await t.ingest(event({ eventId: 'long', query }))).json).toEqual({ status: 'ok', ingested: 1 });
    const stored = await t.node.store.getByEventId('long');
    expect(Buffer.byteLength(stored!.query)).toBeLessThanOrEqual(64 * 1024);
    expect(stored!.query.startsWith('SELECT éé')).toBe(true);
    expect(stored!.query).toMatch(/…\[truncated by auditlake: 80007 bytes\]$/);
  });

  it('ignores __proto__ and constructor keys in a body without polluting anything', async () => {
    const t = await startTestNode();
    const body = '[{"source":"trino","userId":"u","action":"data:Insert","eventId":"proto","__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}]';
    expect((await t.ingest(body)).json).toEqual({ status: 'ok', ingested: 1 });
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    const stored = await t.node.store.getByEventId('proto');
    expect(Object.keys(stored!).sort()).toEqual(['action', 'chainHash', 'decision', 'details', 'eventId', 'fieldCheck', 'ingestTs', 'query', 'recordHash', 'resource', 'salt', 'seq', 'source', 'tables', 'term', 'timestamp', 'userId']);
    const settings = await t.request('/admin/audit/settings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"__proto__":{"audit.retention.days":"1"}}' });
    expect(settings.status).toBe(400);
    expect(((await settings.json()) as { error: string }).error).toMatch(/^unknown setting: __proto__/);
  });

  it('answers an operating error (the store is not open) with 503 and one log line naming it, without a stack trace', async () => {
    const lines: string[] = [];
    const t = await startTestNode({ node: { logger: { level: 'info', stream: { write: (line: string) => lines.push(line) } } } });
    await t.node.store.close();
    const res = await t.request('/v1/api/audit', { method: 'POST', token: INGEST_TOKEN, headers: { 'content-type': 'application/json' }, body: JSON.stringify([event({ eventId: 'closed' })]) });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await res.json()) as { code: string; error: string })).toMatchObject({ code: 'AUDIT_STORE_NOT_OPEN', error: expect.stringMatching(/^the audit store at .* is closed/) });
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const logged = entries.filter((entry) => entry['code'] === 'AUDIT_STORE_NOT_OPEN');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: 40, route: '/v1/api/audit', status: 503, msg: expect.stringMatching(/^the audit store at /) });
    // Nothing about the request carries a stack (background work on the closed store is not the request's).
    expect(JSON.stringify(entries.filter((entry) => entry['reqId'] !== undefined))).not.toMatch(/"stack"|\\n\s+at /);
  });

  it('accepts the admin token for ingest too', async () => {
    const t = await startTestNode();
    expect((await t.ingest(event(), ADMIN_TOKEN)).status).toBe(200);
  });

  it('counts ingested events in /metrics', async () => {
    const t = await startTestNode();
    await t.ingest([event({ eventId: 'm1' }), event({ eventId: 'm2' })]);
    await t.ingest([event({ eventId: 'm1' })]);
    const metrics = await (await t.request('/metrics', { token: null })).text();
    expect(metrics).toMatch(/^auditlake_events_ingested_total 2$/m);
    expect(metrics).toMatch(/^auditlake_events_duplicate_total 1$/m);
    expect(metrics).toMatch(/^auditlake_http_request_duration_seconds_count\{method="POST",route="\/v1\/api\/audit",status_code="200"\} 2$/m);
    expect(metrics).toMatch(/^auditlake_store_size_bytes [1-9]\d*$/m);
  });
});
