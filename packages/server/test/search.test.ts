// Goal: GET /admin/audit filters, orders and limits exactly as the reference's search table says; a page of large events is cut by size and the cursor carries on.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { tableFromIPC } from 'apache-arrow';
import { describe, expect, it, onTestFinished } from 'vitest';
import { PAGE_CHARS_MAX } from '../src/audit-search.js';
import { ADMIN_TOKEN, event, startTestNode } from './test-node.js';

const DAY = 86_400_000;
const T0 = 1_792_281_600_000; // 2026-10-18T00:00:00Z

const corpus = [
  event({ eventId: 'e1', userId: 'alice', source: 'trino', action: 'data:Select', tables: ['hive.sales.orders'], query: 'SELECT id FROM hive.sales.orders', ts: T0 + 1000 }),
  event({ eventId: 'e2', userId: 'bob', source: 'Spark', action: 'data:Insert', tables: ['hive.sales.orders', 'hive.stage.raw'], query: 'INSERT INTO hive.sales.orders SELECT * FROM hive.stage.raw', ts: T0 + 2000 }),
  event({ eventId: 'e3', userId: 'carol', source: 'flink', action: 'data:Write', resource: 'kafka.clicks', tables: ['lake.web.clicks'], query: '', details: 'SUBMIT STREAMING job', ts: T0 + DAY }),
  event({ eventId: 'e4', userId: 'alice', source: 'trino', action: 'data:CreateTable', decision: 'DENY', tables: ['hive.sales.secret'], query: 'CREATE TABLE hive.sales.secret (x int)', details: 'trino authz plugin (ontul: ABSTAIN)', ts: T0 + 2 * DAY }),
  event({ eventId: 'e5', userId: 'alice', source: 'TRINO', action: 'data:Select', resource: 'hive.hr.salaries', tables: ['hive.hr.salaries'], query: 'select * from hive.hr.salaries', ts: T0 + 2 * DAY }),
];

async function corpusNode(props: Record<string, string> = {}) {
  const t = await startTestNode({ props });
  expect((await t.ingest(corpus)).status).toBe(200);
  return t;
}

const ids = (json: { events: Array<{ eventId: string }> }) => json.events.map((e) => e.eventId);

describe('search', () => {
  it('returns everything newest first by event time, ties broken by ingest order (later first)', async () => {
    const t = await corpusNode();
    const { status, json } = await t.search();
    expect(status).toBe(200);
    expect(ids(json)).toEqual(['e5', 'e4', 'e3', 'e2', 'e1']);
    expect(json).toMatchObject({ count: 5, truncated: false });
  });

  const cases: Array<[string, string[]]> = [
    ['?user=alice', ['e5', 'e4', 'e1']],
    ['?user=ALICE', []],
    ['?engine=trino', ['e5', 'e4', 'e1']],
    ['?engine=SPARK', ['e2']],
    ['?table=sales.orders', ['e2', 'e1']],
    ['?table=stage', ['e2']],
    ['?action=read', ['e5', 'e1']],
    ['?action=write', ['e4', 'e3', 'e2']],
    ['?action=all', ['e5', 'e4', 'e3', 'e2', 'e1']],
    ['?q=ABSTAIN', ['e4']],
    ['?q=streaming', ['e3']],
    ['?q=kafka.clicks', ['e3']],
    ['?q=hr.salaries', ['e5']],
    ['?q=carol', ['e3']],
    ['?q=createtable', ['e4']],
    ['?q=flink', []],
    [`?from=${T0 + DAY}`, ['e5', 'e4', 'e3']],
    [`?to=${T0 + DAY}`, ['e3', 'e2', 'e1']],
    [`?from=${T0 + 2000}&to=${T0 + 2000}`, ['e2']],
    [`?engine=trino&action=read&q=orders&limit=200`, ['e1']],
    [`?from=${T0}&to=${T0 + 2 * DAY}&table=sales.orders`, ['e2', 'e1']],
  ];
  for (const [query, expected] of cases) {
    it(`filters ${query}`, async () => {
      const t = await corpusNode();
      const { json } = await t.search(query);
      expect(ids(json)).toEqual(expected);
    });
  }

  it('matches free text containing quotes, backslashes, control characters and non-ASCII letters', async () => {
    const t = await startTestNode();
    await t.ingest([
      event({ eventId: 'quoted', query: 'SELECT * FROM t WHERE name = "Ölaf" AND path LIKE \'C:\\temp%\'' }),
      event({ eventId: 'tabbed', details: 'col\tsep ÉCOLE' }),
      event({ eventId: 'other', query: 'SELECT 2' }),
    ]);
    for (const [q, expected] of [
      ['"ölaf"', ['quoted']],
      ['c:\\temp', ['quoted']],
      ['col\tsep', ['tabbed']],
      ['école', ['tabbed']],
      ['\\', ['quoted']],
    ] as const) {
      const { json } = await t.search(`?q=${encodeURIComponent(q)}`);
      expect(ids(json)).toEqual(expected);
    }
  });

  it('answers in exactly the API shape, as JSON.stringify writes it: toEventOutput fields in order, no seq or term, a masked count where one was', async () => {
    const t = await corpusNode({ 'auditlake.audit.redact.keys': 'password' });
    expect((await t.ingest([event({ eventId: 'r1', query: 'SET password = \'x"y\\z\'', details: 'tab\there ünï', ts: T0 + 3 * DAY })])).status).toBe(200);
    for (const query of ['', '?user=alice', '?q=password', '?limit=2']) {
      const res = await t.request(`/admin/audit${query}`);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      const text = await res.text();
      const body = JSON.parse(text) as { events: Array<Record<string, unknown>>; count: number };
      expect(text, query).toBe(JSON.stringify(body));
      expect(body.count).toBe(body.events.length);
      for (const e of body.events) {
        const keys = Object.keys(e).filter((k) => k !== 'redacted');
        expect(keys).toEqual(['eventId', 'userId', 'source', 'action', 'resource', 'decision', 'tables', 'query', 'details', 'timestamp', 'ingestTs']);
      }
    }
    const masked = (await t.search('?q=password')).json.events[0] as unknown as Record<string, unknown>;
    expect(masked).toMatchObject({ eventId: 'r1', redacted: 1 });
    expect(Object.keys(masked).slice(-3)).toEqual(['redacted', 'timestamp', 'ingestTs']);
  });

  it('cuts to limit and says truncated when more matched', async () => {
    const t = await corpusNode();
    const { json } = await t.search('?limit=2');
    expect(ids(json)).toEqual(['e5', 'e4']);
    expect(json).toMatchObject({ count: 2, truncated: true });
    const exact = await t.search('?limit=5');
    expect(exact.json).toMatchObject({ count: 5, truncated: false });
  });

  it('defaults limit to 200 and refuses one above auditlake.audit.viewer.max.page, naming the cap', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.viewer.max.page': '250' } });
    await t.ingest(Array.from({ length: 300 }, (_, i) => event({ ts: T0 + i })));
    expect((await t.search()).json).toMatchObject({ count: 200, truncated: true });
    expect((await t.search('?limit=250')).json).toMatchObject({ count: 250, truncated: true });
    const refused = await t.search('?limit=1000');
    expect(refused.status).toBe(400);
    expect(refused.json.error).toBe('parameter limit must be at most 250 (auditlake.audit.viewer.max.page): 1000; page with nextCursor or narrow the filters');
  });

  it('filters by decision: ALLOW, DENY, or none', async () => {
    const t = await startTestNode();
    await t.ingest([event({ eventId: 'a', decision: 'ALLOW', ts: T0 + 3 }), event({ eventId: 'd', decision: 'DENY', ts: T0 + 2 }), event({ eventId: 'n', ts: T0 + 1 })]);
    expect(ids((await t.search('?decision=ALLOW')).json)).toEqual(['a']);
    expect(ids((await t.search('?decision=DENY')).json)).toEqual(['d']);
    expect(ids((await t.search('?decision=none')).json)).toEqual(['n']);
    expect((await t.search('?decision=maybe')).status).toBe(400);
  });

  it('accepts ISO-8601 from and to', async () => {
    const t = await corpusNode();
    const iso = (ms: number) => new Date(ms).toISOString();
    expect(ids((await t.search(`?from=${iso(T0 + DAY)}`)).json)).toEqual(['e5', 'e4', 'e3']);
    expect(ids((await t.search(`?from=2026-10-18&to=${encodeURIComponent('2026-10-18T02:00:02.500+02:00')}`)).json)).toEqual(['e2', 'e1']);
  });

  const badParams: Array<[string, RegExp]> = [
    ['?from=yesterday', /^parameter from must be epoch millis or an ISO-8601 time with a zone \(e\.g\. 2026-11-01T09:30:00Z\): yesterday$/],
    ['?cursor=nonsense', /^parameter cursor must be a nextCursor value this API returned: nonsense$/],
    ['?to=-5', /^parameter to must be epoch millis/],
    ['?action=foo', /^parameter action must be read, write or all: foo$/],
    ['?limit=0', /^parameter limit must be a positive integer: 0$/],
    ['?limit=ten', /^parameter limit must be a positive integer: ten$/],
    ['?from=10&to=5', /^parameter from must not be after to/],
    ['?usr=alice', /^unknown parameter: usr/],
    ['?user=a&user=b', /^parameter user must be given once$/],
  ];
  for (const [query, message] of badParams) {
    it(`refuses ${query} with 400 naming the parameter`, async () => {
      const t = await corpusNode();
      const { status, json } = await t.search(query);
      expect(status).toBe(400);
      expect(json.error).toMatch(message);
    });
  }

  it('streams NDJSON for Accept: application/x-ndjson, one event per line, same order and limit', async () => {
    const t = await corpusNode();
    const res = await t.request('/admin/audit?limit=3', { headers: { accept: 'application/x-ndjson' } });
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const lines = (await res.text()).trimEnd().split('\n').map((l) => JSON.parse(l) as { eventId?: string; nextCursor?: string });
    expect(lines.slice(0, 3).map((l) => l.eventId)).toEqual(['e5', 'e4', 'e3']);
    // Cut at the limit: a last line says where the next page starts.
    expect(lines).toHaveLength(4);
    expect(lines[3]).toEqual({ nextCursor: expect.any(String) });
  });

  it('streams a large NDJSON answer completely', async () => {
    const t = await startTestNode();
    const big = 'q'.repeat(2000);
    for (let b = 0; b < 5; b++) await t.ingest(Array.from({ length: 1000 }, (_, i) => event({ ts: T0 + b * 1000 + i, query: big })));
    const res = await t.request('/admin/audit?limit=5000', { headers: { accept: 'application/x-ndjson' } });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    const decoder = new TextDecoder();
    let chunks = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks++;
      text += decoder.decode(value, { stream: true });
    }
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(5000);
    // Arrives in many chunks: the answer is written as it is read, not assembled first.
    expect(chunks).toBeGreaterThan(1);
    const timestamps = lines.map((l) => (JSON.parse(l) as { timestamp: number }).timestamp);
    expect(timestamps).toEqual([...timestamps].sort((a, b) => b - a));
  });
});

describe('paging with the cursor', () => {
  type Page = { events: Array<{ eventId: string }>; truncated: boolean; nextCursor?: string };

  it('pages JSON newest to oldest, each event once, under the same filters, while new events arrive', async () => {
    const t = await startTestNode();
    // Many events share an event time and an ingest time: the order must still be total.
    await t.ingest(Array.from({ length: 23 }, (_, i) => event({ eventId: `p${String(i).padStart(2, '0')}`, ts: T0 + (i % 4) * 1000, userId: i % 3 === 0 ? 'bob' : 'alice' })));
    const all = ids((await t.search('?user=alice&limit=100')).json);
    expect(all).toHaveLength(15);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; ; pages++) {
      expect(pages).toBeLessThan(20);
      const { json } = (await t.search(`?user=alice&limit=4${cursor ? `&cursor=${cursor}` : ''}`)) as unknown as { json: Page };
      seen.push(...ids(json));
      // Newer events arriving between pages are not "older than the cursor": never returned here.
      await t.ingest([event({ eventId: `late-${pages}`, ts: Date.now(), userId: 'alice' })]);
      if (!json.truncated) {
        expect(json.nextCursor).toBeUndefined();
        break;
      }
      expect(typeof json.nextCursor).toBe('string');
      cursor = json.nextCursor;
    }
    expect(seen).toEqual(all);
  });

  it('ends a cut NDJSON answer with a nextCursor line that continues it', async () => {
    const t = await corpusNode();
    const ndjson = async (query: string) => {
      const res = await t.request(`/admin/audit${query}`, { headers: { accept: 'application/x-ndjson' } });
      expect(res.status).toBe(200);
      return (await res.text()).trimEnd().split('\n').map((l) => JSON.parse(l) as { eventId?: string; nextCursor?: string });
    };
    const first = await ndjson('?limit=3');
    expect(first.slice(0, 3).map((l) => l.eventId)).toEqual(['e5', 'e4', 'e3']);
    expect(Object.keys(first[3]!)).toEqual(['nextCursor']);
    const second = await ndjson(`?limit=3&cursor=${first[3]!.nextCursor!}`);
    // The last page is not cut: no cursor line.
    expect(second.map((l) => l.eventId)).toEqual(['e2', 'e1']);
    const exact = await ndjson('?limit=5');
    expect(exact).toHaveLength(5);
  });
});

describe('a page of large events', () => {
  it.each([
    ['its own event time', (i: number) => T0 + i],
    ['one event time for all (a client may send them so)', () => T0],
  ])('with %s, is cut once it passes PAGE_CHARS_MAX characters, marked truncated with a cursor, and the pages together hold every event once (JSON and Arrow)', async (_name, timeOf) => {
    const t = await startTestNode();
    // Each event at its fields' limits: ~150,000 characters, so about 220 fill a page.
    const big = (i: number) =>
      event({ eventId: `big-${i}`, userId: 'planter', ts: timeOf(i), query: 'q'.repeat(64 * 1024), details: 'd'.repeat(16 * 1024), resource: 'r'.repeat(4096), tables: Array.from({ length: 16 }, (_, k) => `t${k}`.padEnd(4096, 'x')) });
    for (let b = 0; b < 6; b++) expect((await t.ingest(Array.from({ length: 50 }, (_, i) => big(b * 50 + i)))).status).toBe(200);

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await t.request(`/admin/audit?user=planter&limit=300${cursor === undefined ? '' : `&cursor=${cursor}`}`);
      const json = (await res.json()) as { events: Array<{ eventId: string }>; count: number; truncated: boolean; nextCursor?: string };
      expect(res.status).toBe(200);
      expect(JSON.stringify(json.events).length).toBeLessThan(PAGE_CHARS_MAX + 200_000);
      seen.push(...json.events.map((e) => e.eventId));
      cursor = json.nextCursor;
      if (cursor !== undefined) expect(json.truncated).toBe(true);
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(2);
    expect(new Set(seen).size).toBe(300);
    expect(seen).toHaveLength(300);

    const arrow = await t.request('/admin/audit?user=planter&limit=300', { headers: { accept: 'application/vnd.apache.arrow.stream' } });
    expect(arrow.status).toBe(200);
    expect(arrow.headers.get('x-auditlake-next-cursor')).toEqual(expect.any(String));
    expect(tableFromIPC(new Uint8Array(await arrow.arrayBuffer())).numRows).toBeLessThan(300);
  }, 120_000);
});

describe('a search past auditlake.audit.search.timeout.ms', () => {
  it('is stopped: a 503 AUDIT_SEARCH_TIMEOUT naming the key (JSON, stats), and an NDJSON answer ends with that error as its last line', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.search.timeout.ms': '1' } });
    // Every event holds each trigram of the needle, none the needle: the search reads them all.
    for (let b = 0; b < 6; b++) {
      expect((await t.ingest(Array.from({ length: 5000 }, (_, i) => event({ eventId: `s${b}-${i}`, ts: T0 + b * 5000 + i, query: `foo bar; bar foo ${i}` })))).status).toBe(200);
    }
    const slow = await t.request('/admin/audit?q=foo%20bar%20foo&limit=10');
    expect(slow.status).toBe(503);
    expect(await slow.json()).toMatchObject({ code: 'AUDIT_SEARCH_TIMEOUT', error: expect.stringMatching(/^the search read for longer than 1 ms \(auditlake\.audit\.search\.timeout\.ms\) and was stopped/) });
    expect((await t.request('/admin/audit/stats?q=foo%20bar%20foo&limit=10')).status).toBe(503);
    const streamed = await t.request('/admin/audit?q=foo%20bar%20foo&limit=10', { headers: { accept: 'application/x-ndjson' } });
    expect(streamed.status).toBe(200);
    const lines = (await streamed.text()).trimEnd().split('\n');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ code: 'AUDIT_SEARCH_TIMEOUT' });
  }, 120_000);
});

describe('an answer its client stops reading', () => {
  it.each(['application/x-ndjson', 'application/json', 'application/vnd.apache.arrow.stream'])('(%s) is given up at the search deadline: the connection is closed rather than held with its buffers', async (accept) => {
    const t = await startTestNode({ props: { 'auditlake.audit.search.timeout.ms': '1500' } });
    for (let b = 0; b < 4; b++) expect((await t.ingest(Array.from({ length: 100 }, (_, i) => event({ eventId: `n${b}-${i}`, ts: T0 + b * 100 + i, query: 'q'.repeat(64 * 1024) })))).status).toBe(200);
    const { port } = new URL(t.node.url);
    // The node's side of this connection: the next one it accepts.
    const accepted = once(t.node.app.server, 'connection') as Promise<[Socket]>;
    const socket = connect(Number(port), '127.0.0.1');
    onTestFinished(() => void socket.destroy());
    await once(socket, 'connect');
    // Asks for ~26 MB and reads none of it.
    socket.write(`GET /admin/audit?limit=400 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token ${ADMIN_TOKEN}\r\nAccept: ${accept}\r\n\r\n`);
    socket.pause();
    const [nodeSide] = await accepted;
    expect(nodeSide.destroyed).toBe(false);
    // The node's side of the connection is closed (the paused client sees it only once it reads).
    await expect.poll(() => nodeSide.destroyed, { timeout: 15_000 }).toBe(true);
  }, 60_000);
});
