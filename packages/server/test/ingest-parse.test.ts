import { readEventText, RecordHasher } from '@auditlake/integrity';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { decodeParsedEvents, encodeParsedEvents, parseIngestBody, transferable } from '../src/ingest-parse.js';
import { IngestParsePool, WORKER_RESTART_PAUSE_MS } from '../src/ingest-parse-pool.js';
import { startTestNode } from './test-node.js';

const NOW = 1_700_000_000_000;
const body = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8');
const events = [
  { eventId: 'a', source: 'trino', userId: 'ana', action: 'data:Select', query: 'SELECT 1\n-- "ü"', ts: 5 },
  { eventId: 'b', source: 'trino', userId: 'bo', action: 'data:Select', decision: 'deny' },
  { source: 'spark', userId: 'cy', action: 'data:Insert', tables: ['x.y.z'] },
];

function pool(threads: number): IngestParsePool {
  const p = new IngestParsePool(threads);
  onTestFinished(() => p.close());
  return p;
}

describe('ingest parsing', () => {
  it('gives in a worker exactly what it gives inline, ids assigned and flagged fresh', async () => {
    const inline = parseIngestBody(body(events), NOW);
    const inWorker = await pool(1).parse(body(events), NOW);
    expect(inline.ok && inWorker.ok).toBe(true);
    if (!inline.ok || !inWorker.ok) return;
    const withoutAssignedId = (list: typeof inline.events) => list.map((e) => (e.freshId ? { ...e, eventId: '', json: e.json.replace(e.eventId, '') } : e));
    expect(withoutAssignedId(inWorker.events)).toEqual(withoutAssignedId(inline.events));
    expect(inWorker.events.map((e) => [e.freshId, e.subjectToSampling])).toEqual([
      [false, true],
      [false, false], // a DENY is never sampled out
      [true, false],
    ]);
    expect(JSON.parse(inWorker.events[0]!.json)).toMatchObject({ eventId: 'a', query: 'SELECT 1\n-- "ü"', timestamp: 5 });
  });

  it('refuses in a worker with the inline message and the number of events refused', async () => {
    const bad = [...events, { source: 'x', userId: 'u', action: 'a', ts: -1 }];
    const expected = { ok: false, code: 'AUDIT_BAD_REQUEST', message: 'events[3].ts must be a non-negative integer (epoch millis): -1', refused: 4 };
    expect(parseIngestBody(body(bad), NOW)).toEqual(expected);
    expect(await pool(1).parse(body(bad), NOW)).toEqual(expected);
    expect(await pool(1).parse(Buffer.from('[{"source":'), NOW)).toMatchObject({ ok: false, message: expect.stringMatching(/^request body is not valid JSON/) as unknown });
  });

  it('refuses a request with no body with 400, and a body declared as text with 415 (not JSON), on every route that takes one', async () => {
    const t = await startTestNode();
    const none = await t.request('/v1/api/audit', { method: 'POST' });
    expect(none.status).toBe(400);
    expect(((await none.json()) as { error: string }).error).toBe('request body must be an audit event object or an array of them, sent as JSON (Content-Type: application/json)');
    for (const path of ['/v1/api/audit', '/admin/audit/settings', '/admin/audit/erase']) {
      const res = await t.request(path, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '[]' });
      expect([path, res.status, await res.json()]).toEqual([path, 415, { status: 'error', error: 'request body must be JSON: send Content-Type: application/json (got "text/plain")', code: 'AUDIT_UNSUPPORTED_MEDIA_TYPE' }]);
    }
    expect(await t.stored()).toEqual([]);
  });

  it('reads a body that starts with a UTF-8 byte order mark as the JSON after it (what tools on Windows write), over HTTP too', async () => {
    const withMark = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body(events)]);
    const parsed = parseIngestBody(withMark, NOW);
    expect(parsed.ok).toBe(true);
    if (parsed.ok) expect(parsed.events.map((e) => e.eventId).slice(0, 2)).toEqual(['a', 'b']);
    const t = await startTestNode();
    const res = await t.request('/v1/api/audit', { method: 'POST', headers: { 'content-type': 'application/json' }, body: withMark });
    expect(res.status).toBe(200);
    expect((await t.stored()).map((e) => e.eventId)).toEqual(expect.arrayContaining(['a', 'b']));
  });

  it('parses inline with no threads', async () => {
    const p = pool(0);
    expect(p.threads).toBe(0);
    expect(await p.parse(body(events), NOW)).toMatchObject({ ok: true, events: [{ eventId: 'a' }, { eventId: 'b' }, { freshId: true }] });
  });

  it('copies a small Buffer instead of detaching the slab it shares with other Buffers', async () => {
    // Two Buffers over one ArrayBuffer, as Node's pool hands out small Buffers.
    const slab = new ArrayBuffer(8192);
    const text = JSON.stringify(events.slice(0, 1));
    const small = Buffer.from(slab, 0, Buffer.byteLength(text));
    small.write(text);
    const neighbour = Buffer.from(slab, 4096, 10);
    neighbour.write('still here');
    expect(await pool(1).parse(small, NOW)).toMatchObject({ ok: true });
    expect(neighbour.toString()).toBe('still here');
    expect(small.buffer.byteLength).toBeGreaterThan(0); // not detached
    const own = new Uint8Array(16);
    expect(transferable(own)).toBe(own.buffer);
  });

  it('fails the requests of a worker that dies, parses inline meanwhile, and replaces it after a pause', async () => {
    const p = pool(1);
    const [before] = p.workerThreadIds;
    // A body that keeps the worker busy for hundreds of ms (10,000 events of 2 KiB queries),
    // so the crash lands long before its answer could.
    const large = body(Array.from({ length: 10_000 }, (_, i) => ({ ...events[2], eventId: `e${i}`, query: 'q'.repeat(2048) })));
    const pending = expect(p.parse(large, NOW)).rejects.toThrow(/exited/);
    await p.crashWorkerForTest(0);
    await pending;
    expect(p.workerThreadIds).toEqual([]);
    expect(await p.parse(body(events), NOW)).toMatchObject({ ok: true }); // inline while none runs
    await expect.poll(() => p.workerThreadIds.length, { timeout: WORKER_RESTART_PAUSE_MS * 5 }).toBe(1);
    expect(p.workerThreadIds[0]).not.toBe(before);
    expect(await p.parse(body(events), NOW)).toMatchObject({ ok: true });
  });

  it('closes: pending requests fail, later ones are refused', async () => {
    const p = new IngestParsePool(2);
    const pending = expect(p.parse(body(events), NOW)).rejects.toThrow(/closed/);
    await p.close();
    await pending;
    await expect(p.parse(body(events), NOW)).rejects.toThrow(/closed/);
    expect(p.workerThreadIds).toEqual([]);
  });

  it('never holds its process open: a process whose only work was a parse ends by itself, pool not closed', () => {
    // The built module, in a process that does nothing else (a worker cannot load TypeScript).
    const dir = mkdtempSync(join(tmpdir(), 'parse-pool-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'parse-once.mjs');
    writeFileSync(
      file,
      `import { IngestParsePool } from ${JSON.stringify(new URL('../dist/ingest-parse-pool.js', import.meta.url).href)};
      const pool = new IngestParsePool(1);
      const keepAlive = setInterval(() => undefined, 1000); // the work a node would be doing
      const outcome = await pool.parse(new TextEncoder().encode(${JSON.stringify(JSON.stringify(events))}), ${NOW});
      console.log(outcome.ok ? 'parsed' : 'refused');
      clearInterval(keepAlive);
      setTimeout(() => { console.log('still running'); process.exit(5); }, 15_000).unref();`,
    );
    // Once the parse is answered nothing holds the process: it ends (it ran on, exit 5, when the worker was unref'd before its 'message' listener).
    const run = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 30_000 });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('parsed');
    expect(run.status).toBe(0);
  });

  it('with the record chain, gives each event the content part the leader would read from its JSON, inline and in a worker', async () => {
    const inline = parseIngestBody(body(events), NOW, [], true);
    const inWorker = await pool(1).parse(body(events), NOW, [], true);
    if (!inline.ok || !inWorker.ok) throw new Error('expected a parse');
    const hasher = new RecordHasher();
    const salts = new Set<string>();
    for (const event of [...inline.events, ...inWorker.events]) {
      // Each event under a key of its own (content format v3), which travels with its content part.
      const salt = event.chainContent?.salt as string;
      expect(salt).toMatch(/^[A-Za-z0-9_-]{22}$/);
      salts.add(salt);
      expect(event.chainContent).toEqual({ ...hasher.content({ ...readEventText(event.json)!, salt }), salt });
    }
    expect(salts.size).toBe(inline.events.length + inWorker.events.length);
    expect(decodeParsedEvents(encodeParsedEvents(inline.events))).toEqual(inline.events);
    const without = parseIngestBody(body(events), NOW);
    if (!without.ok) throw new Error('expected a parse');
    expect(without.events.map((e) => e.chainContent)).toEqual([undefined, undefined, undefined]);
  });

  it('carries parsed events across threads unchanged', () => {
    const parsed = parseIngestBody(body(events), NOW);
    if (!parsed.ok) throw new Error('expected a parse');
    expect(decodeParsedEvents(encodeParsedEvents(parsed.events))).toEqual(parsed.events);
    expect(decodeParsedEvents(encodeParsedEvents([]))).toEqual([]);
  });

  it('ingests over HTTP through a parse worker too (auditlake.ingest.parse.threads=1)', async () => {
    const t = await startTestNode({ props: { 'auditlake.ingest.parse.threads': '1' } });
    expect(await t.ingest(events)).toEqual({ status: 200, json: { status: 'ok', ingested: 3 } });
    expect((await t.stored()).map((e) => e.userId).sort()).toEqual(['ana', 'bo', 'cy']);
    const refused = await t.ingest([{ source: 'x' }]);
    expect(refused.status).toBe(400);
    expect(refused.json['error']).toBe('events[0].userId is required');
  });
});
