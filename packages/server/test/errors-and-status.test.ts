// Goal: error codes say what happened and retryable ones tell the client when to retry; a single node refuses ack=replicated before storing anything and reports itself in /admin/cluster and the cluster gauges; at auditlake.http.connections.max a new connection replaces one that is not in a request, else one whose client stopped reading its answer, or is closed when every one is in a request being answered; past auditlake.http.connections.per.client.max from one client it is closed as it arrives; request bodies are bounded in bytes held at once and in time.
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, createServer, get } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import Fastify from 'fastify';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { describe, expect, it, onTestFinished } from 'vitest';
import { guardRequestBodies } from '../src/body-guard.js';
import { clientOf, limitConnections } from '../src/connection-limits.js';
import { toHttpError } from '../src/http-errors.js';
import { event, startTestNode } from './test-node.js';

describe('error mapping', () => {
  it('gives retryable errors a Retry-After and keeps the code that says what happened', () => {
    expect(toHttpError(new AuditError(AuditErrorCode.REPLICATION_TIMEOUT, 'not confirmed', { retryable: true }))).toEqual({
      statusCode: 503,
      body: { status: 'error', error: 'not confirmed', code: 'AUDIT_REPLICATION_TIMEOUT' },
      retryAfterSeconds: 1,
    });
    expect(toHttpError(new AuditError(AuditErrorCode.STORE_WRITE_FAILED, 'disk full', { retryable: true })).statusCode).toBe(503);
    expect(toHttpError(new AuditError(AuditErrorCode.TABLE_INVALID, 'tiered file is not readable Parquet'))).toEqual({
      statusCode: 502,
      body: { status: 'error', error: 'tiered file is not readable Parquet', code: 'AUDIT_TABLE_INVALID' },
    });
    expect(toHttpError(new AuditError(AuditErrorCode.BAD_REQUEST, 'bad')).retryAfterSeconds).toBeUndefined();
  });

  it("never answers a framework's own error code: a request without a content type is AUDIT_UNSUPPORTED_MEDIA_TYPE", async () => {
    const t = await startTestNode();
    // A byte body: fetch sets no content type for it.
    const res = await t.request('/v1/api/audit', { method: 'POST', token: 'ingest-secret-for-tests', body: new TextEncoder().encode(JSON.stringify([event({ eventId: 'untyped' })])) });
    expect(res.status).toBe(415);
    expect(await res.json()).toEqual({ status: 'error', error: 'request body must be JSON: send Content-Type: application/json (got none)', code: 'AUDIT_UNSUPPORTED_MEDIA_TYPE' });
    const ndjson = await t.request('/v1/api/audit', { method: 'POST', token: 'ingest-secret-for-tests', headers: { 'content-type': 'application/x-ndjson' }, body: JSON.stringify(event({ eventId: 'lines' })) });
    expect(ndjson.status).toBe(415);
    expect(((await ndjson.json()) as { error: string }).error).toBe('request body must be JSON: send Content-Type: application/json (got "application/x-ndjson")');
    expect(await t.stored()).toEqual([]);
    expect(toHttpError(Object.assign(new Error('odd'), { statusCode: 400, code: 'FST_SOMETHING' })).body.code).toBe('AUDIT_BAD_REQUEST');
  });
});

describe('a single node (no --coordinator)', () => {
  it('refuses ack=replicated with a 400 before storing anything', async () => {
    const t = await startTestNode();
    const res = await t.request('/v1/api/audit?ack=replicated', { method: 'POST', token: 'ingest-secret-for-tests', headers: { 'content-type': 'application/json' }, body: JSON.stringify([event({ eventId: 'lonely' })]) });
    expect(res.status).toBe(400);
    expect(res.headers.get('retry-after')).toBeNull();
    expect(await res.json()).toMatchObject({ code: 'AUDIT_BAD_REQUEST', error: expect.stringMatching(/^ack=replicated needs a standby.*nothing was stored/) });
    expect(await t.stored()).toEqual([]);
  });

  it('lists itself as the leader in /admin/cluster and in the cluster gauges', async () => {
    const t = await startTestNode();
    await t.ingest([event({ eventId: 'one' }), event({ eventId: 'two' })]);
    const status = (await (await t.request('/admin/cluster')).json()) as Record<string, unknown>;
    expect(status).toEqual({ nodeId: t.node.nodeId, role: 'leader', term: 0, leader: { nodeId: t.node.nodeId, url: t.node.url }, nodes: [{ nodeId: t.node.nodeId, url: t.node.url, role: 'leader', appliedSeq: 2, lagMs: 0, lastHeardMs: 0 }], erasedIdsOwed: false, erasedIdsTakenThrough: 0 });
    const metrics = await (await t.request('/metrics')).text();
    expect(metrics).toMatch(/^auditlake_cluster_leader 1$/m);
    expect(metrics).toMatch(/^auditlake_cluster_term 0$/m);
    expect(metrics).toContain(`auditlake_cluster_node_applied_seq{node="${t.node.nodeId}"} 2`);
    expect(metrics).toContain(`auditlake_cluster_node_reachable{node="${t.node.nodeId}"} 1`);
    expect(metrics).toContain(`auditlake_cluster_node_last_heard_seconds{node="${t.node.nodeId}"} 0`);
    expect(metrics).toMatch(/^auditlake_outbox_events 0$/m);
  });
});

const health = (port: number, agent: Agent | false) =>
  new Promise<number>((resolve, reject) => get({ host: '127.0.0.1', port, path: '/health', agent }, (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0))).on('error', reject));
const openConnections = (t: { node: { app: { server: { getConnections(cb: (err: Error | null, n: number) => void): void } } } }) =>
  new Promise<number>((resolve) => t.node.app.server.getConnections((_err, n) => resolve(n)));

describe('auditlake.http.connections.max', () => {

  it('at the cap, a new connection takes the place of the oldest that never sent a whole request (slow headers), and open ones keep working', async () => {
    const t = await startTestNode({ props: { 'auditlake.http.connections.max': '20' } });
    const port = Number(new URL(t.node.url).port);
    const slow: Socket[] = [];
    onTestFinished(() => slow.forEach((socket) => socket.destroy()));
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    onTestFinished(() => agent.destroy());
    expect(await health(port, agent)).toBe(200);
    // 19 connections that send half a header block and then nothing: the cap is reached.
    for (let i = 0; i < 19; i++) {
      const socket = connect(port, '127.0.0.1');
      await once(socket, 'connect');
      socket.on('error', () => undefined);
      socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      slow.push(socket);
    }
    await expect.poll(() => openConnections(t)).toBe(20);
    const firstClosed = once(slow[0] as Socket, 'close');
    // A new client is served: the oldest slow connection made room for it.
    for (let i = 0; i < 5; i++) expect(await health(port, false)).toBe(200);
    await firstClosed;
    // The open keep-alive connection is still there and answers.
    expect(await health(port, agent)).toBe(200);
    expect(await openConnections(t)).toBeLessThanOrEqual(20);
  });

  it('counts a client right when its new connection replaces one of its own', async () => {
    const t = await startTestNode({ props: { 'auditlake.http.connections.max': '5', 'auditlake.http.connections.per.client.max': '6' } });
    const port = Number(new URL(t.node.url).port);
    const all: Socket[] = [];
    onTestFinished(() => all.forEach((socket) => socket.destroy()));
    const openSlow = async () => {
      const socket = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.9' });
      await once(socket, 'connect');
      socket.on('error', () => undefined);
      const closed = once(socket, 'close').then(() => true);
      socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      all.push(socket);
      await new Promise((resolve) => setTimeout(resolve, 50));
      return { socket, closed: () => Promise.race([closed, new Promise((resolve) => setTimeout(() => resolve(false), 300))]) };
    };
    // Five fill the cap; a sixth of the same client replaces its oldest.
    const first = [];
    for (let i = 0; i < 6; i++) first.push(await openSlow());
    expect(await first[0]!.closed()).toBe(true);
    expect(await first[5]!.closed()).toBe(false);
    first.forEach(({ socket }) => socket.destroy());
    await expect.poll(() => openConnections(t)).toBe(0);
    // Again: counted right, the sixth is taken once more (a count left one too high refused it).
    const second = [];
    for (let i = 0; i < 6; i++) second.push(await openSlow());
    expect(await second[0]!.closed()).toBe(true);
    expect(await second[5]!.closed()).toBe(false);
  });

  it('closes a new connection only when every open one is in a request', async () => {
    const t = await startTestNode({ props: { 'auditlake.http.connections.max': '5' } });
    const port = Number(new URL(t.node.url).port);
    const busy: Socket[] = [];
    onTestFinished(() => busy.forEach((socket) => socket.destroy()));
    // Five requests whose bodies are still coming: each connection is in a request.
    for (let i = 0; i < 5; i++) {
      const socket = connect(port, '127.0.0.1');
      await once(socket, 'connect');
      socket.on('error', () => undefined);
      socket.write('POST /v1/api/audit HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token ingest-secret-for-tests\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n[');
      busy.push(socket);
    }
    await expect.poll(() => openConnections(t)).toBe(5);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await expect(health(port, false)).rejects.toMatchObject({ code: 'ECONNRESET' });
    // Room again once one ends.
    busy.shift()?.destroy();
    await expect.poll(() => health(port, false).catch(() => 0)).toBe(200);
  });
});

describe('answers a client does not read', () => {
  it('at the cap, a connection whose client stopped reading its answer (pipelined requests for a large open asset) makes room for a new one', { timeout: 60_000 }, async () => {
    const t = await startTestNode({ props: { 'auditlake.http.connections.max': '8', 'auditlake.http.connections.per.client.max': '8' } });
    const port = Number(new URL(t.node.url).port);
    const dist = join(import.meta.dirname, '../../ui/dist/assets');
    const asset = readdirSync(dist).find((name) => name.endsWith('.js')) as string;
    const stalled: Socket[] = [];
    onTestFinished(() => stalled.forEach((socket) => socket.destroy()));
    for (let i = 0; i < 8; i++) {
      const socket = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
      await once(socket, 'connect');
      socket.on('error', () => undefined);
      socket.pause(); // never reads
      // No credentials needed: the Admin UI's script is open. More answers than the socket buffers hold.
      socket.write(`GET /admin/audit/assets/${asset} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`.repeat(32));
      stalled.push(socket);
    }
    await expect.poll(() => openConnections(t)).toBe(8);
    // Until their pipelines stall, each is idle for a moment between two answers (and replaced so):
    // given time to fill the socket buffers, all are in a request whose answer waits.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    // Once their answers are seen to take no byte, a new client takes one's place (before, every
    // new connection was closed for as long as these stayed open).
    await expect.poll(() => health(port, false).catch(() => 0), { timeout: 10_000, interval: 250 }).toBe(200);
  });
});

describe('an answer that takes no byte', () => {
  it('has its connection closed after stalledAnswerCloseMs, whatever the count, while a client that reads is served', { timeout: 30_000 }, async () => {
    const body = Buffer.alloc(1 << 20, 'a');
    const server = createServer((_request, response) => response.end(body));
    limitConnections(server, { max: 100, perClientMax: 100, stalledAnswerCloseMs: 2_000 });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as AddressInfo).port;
    const count = () => new Promise<number>((resolve) => server.getConnections((_err, n) => resolve(n)));
    const stalled = connect(port, '127.0.0.1');
    onTestFinished(() => {
      stalled.destroy();
    });
    await once(stalled, 'connect');
    stalled.on('error', () => undefined);
    stalled.pause(); // never reads: 8 MiB of answers asked for, more than the socket buffers hold
    stalled.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(8));
    await expect.poll(count).toBe(1);
    // A client that reads its (as large) answer is served meanwhile.
    expect(await health(port, false)).toBe(200);
    await expect.poll(count, { timeout: 10_000, interval: 250 }).toBe(0);
  });
});

describe('auditlake.http.connections.per.client.max', () => {
  it('closes a connection from an address that holds the most already, while other addresses are served', async () => {
    const t = await startTestNode({ props: { 'auditlake.http.connections.per.client.max': '5' } });
    const port = Number(new URL(t.node.url).port);
    const fresh = (localAddress: string) =>
      new Promise<number>((resolve, reject) => get({ host: '127.0.0.1', port, path: '/health', agent: false, localAddress }, (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0))).on('error', reject));
    const idle: Socket[] = [];
    onTestFinished(() => idle.forEach((socket) => socket.destroy()));
    for (let i = 0; i < 5; i++) {
      const socket = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.3' });
      await once(socket, 'connect');
      idle.push(socket);
    }
    await expect(fresh('127.0.0.3')).rejects.toMatchObject({ code: 'ECONNRESET' });
    // Another client is not locked out by this one.
    expect(await fresh('127.0.0.4')).toBe(200);
    idle.splice(0).forEach((socket) => socket.destroy());
    await expect.poll(() => fresh('127.0.0.3').catch(() => 0)).toBe(200);
  });

  it('counts an IPv6 client by its /64 (one host is handed a whole /64), an IPv4 one by its address', () => {
    expect(clientOf('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(clientOf('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(clientOf('2001:0db8:0001:0003::9')).toBe('2001:db8:1:3::/64');
    expect(clientOf('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(clientOf('::1')).toBe('0:0:0:0::/64');
    expect(clientOf('::ffff:127.0.0.3')).toBe('127.0.0.3');
    expect(clientOf('127.0.0.3')).toBe('127.0.0.3');
  });
});

/** A raw connection that sends `head` (request line and headers) and `body`, and keeps what it receives. */
async function rawRequest(port: number, head: string, body = '', localAddress = '127.0.0.1') {
  const socket = connect({ port, host: '127.0.0.1', localAddress });
  await once(socket, 'connect');
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
  socket.on('error', () => undefined);
  const closed = once(socket, 'close').then(() => true);
  socket.write(`${head}\r\n\r\n${body}`);
  onTestFinished(() => {
    socket.destroy();
  });
  return { socket, received: () => received, closed };
}

describe('request bodies (auditlake.http.body.inflight.max.bytes, auditlake.http.body.timeout.ms)', () => {
  const ingestHead = (length: number) => `POST /v1/api/audit HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token ingest-secret-for-tests\r\nContent-Type: application/json\r\nContent-Length: ${length}`;

  it('refuses a body past the bytes all bodies may hold at once, retryable, nothing stored; the room comes back when a held body ends', async () => {
    const t = await startTestNode({ props: { 'auditlake.http.body.limit.bytes': '100000', 'auditlake.http.body.inflight.max.bytes': '140000' } });
    const port = Number(new URL(t.node.url).port);
    // Two bodies of 70,000 bytes declared, a few bytes of each sent: 140,000 held.
    const first = await rawRequest(port, ingestHead(70_000), '[');
    const second = await rawRequest(port, ingestHead(70_000), '[');
    await expect.poll(() => first.socket.bytesWritten > 0 && second.socket.bytesWritten > 0).toBe(true);
    const refused = async () => t.ingest([event({ eventId: 'past-the-budget' })]);
    await expect.poll(async () => (await refused()).status).toBe(429);
    const res = await t.request('/v1/api/audit', { method: 'POST', token: 'ingest-secret-for-tests', headers: { 'content-type': 'application/json' }, body: JSON.stringify([event({ eventId: 'past-the-budget' })]) });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ code: 'AUDIT_LIMIT_EXCEEDED', error: expect.stringContaining('auditlake.http.body.inflight.max.bytes (140000)') as unknown });
    // A request without a body is not held back.
    expect((await t.request('/admin/audit')).status).toBe(200);
    expect(await t.stored()).toEqual([]);
    first.socket.destroy();
    await expect.poll(async () => (await t.ingest([event({ eventId: 'room-again' })])).status).toBe(200);
    expect((await t.stored()).map((e) => e.eventId)).toEqual(['room-again']);
  });

  it('keeps one client to its share of the bytes (auditlake.http.body.inflight.per.client.max.bytes), while other clients are served', async () => {
    const t = await startTestNode({ props: { 'auditlake.http.body.limit.bytes': '200000', 'auditlake.http.body.inflight.per.client.max.bytes': '100000' } });
    const port = Number(new URL(t.node.url).port);
    const body = JSON.stringify([event({ eventId: 'from-a-client' })]);
    const post = async (localAddress: string) => {
      const sent = await rawRequest(port, ingestHead(body.length), body, localAddress);
      await expect.poll(() => /^HTTP\/1\.1 \d+/.test(sent.received())).toBe(true);
      return sent.received();
    };
    // 99,990 bytes declared and one sent, from 127.0.0.6: that client's share is nearly spent.
    const held = await rawRequest(port, ingestHead(99_990), '[', '127.0.0.6');
    await expect.poll(async () => (await post('127.0.0.6')).slice(0, 12)).toBe('HTTP/1.1 429');
    expect(await post('127.0.0.6')).toContain('auditlake.http.body.inflight.per.client.max.bytes (100000)');
    // Another client is served.
    expect(await post('127.0.0.7')).toMatch(/^HTTP\/1\.1 200 /);
    expect((await t.stored()).map((e) => e.eventId)).toEqual(['from-a-client']);
    held.socket.destroy();
    await expect.poll(async () => (await post('127.0.0.6')).slice(0, 12)).toBe('HTTP/1.1 200');
  });

  it('a pipelined request queued behind another returns its reservation when the connection closes before it is answered', async () => {
    // A large whole request (still being parsed and stored when the connection goes), then the
    // headers and a byte of a second one on the same connection: its answer is queued behind.
    const first = JSON.stringify(Array.from({ length: 10_000 }, (_, i) => event({ eventId: `pipelined-${i}`, query: 'SELECT 1 '.repeat(20) })));
    const second = 2_000_000;
    const t = await startTestNode({ props: { 'auditlake.http.body.inflight.max.bytes': String(first.length + second + 5_000) } });
    const port = Number(new URL(t.node.url).port);
    const pipelined = await rawRequest(port, ingestHead(first.length), `${first}${ingestHead(second)}\r\n\r\n[`);
    const held = async () => Number(/^auditlake_http_body_held_bytes (\d+)$/m.exec(await (await t.request('/metrics')).text())?.[1]);
    // Both are counted (the second's headers are in) while the first is still being handled.
    await expect.poll(held, { interval: 1 }).toBe(first.length + second);
    pipelined.socket.destroy();
    await pipelined.closed;
    await expect.poll(async () => (await t.stored()).filter((e) => e.eventId.startsWith('pipelined-')).length, { timeout: 15_000 }).toBe(10_000);
    await expect.poll(held).toBe(0);
    // A body as large as the first held on another connection: with the second's kept for good, the budget would be spent.
    const holding = await rawRequest(port, ingestHead(first.length + 10_000), '[');
    await expect.poll(held).toBe(first.length + 10_000);
    expect((await t.ingest([event({ eventId: 'after-the-pipeline' })])).status).toBe(200);
    holding.socket.destroy();
  });

  it('answers a body sent to no route at once, without reading it or counting it against the budget, and closes its connection', async () => {
    const t = await startTestNode({ props: { 'auditlake.http.body.limit.bytes': '100000', 'auditlake.http.body.inflight.max.bytes': '100000' } });
    const port = Number(new URL(t.node.url).port);
    const stray = await rawRequest(port, 'POST /no-such-route HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 99000', '[');
    expect(await stray.closed).toBe(true);
    expect(stray.received()).toMatch(/^HTTP\/1\.1 404 /);
    const other = await rawRequest(port, 'POST /v1/api/audit/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 99000', '[', '127.0.0.8');
    expect(await other.closed).toBe(true);
    expect((await t.ingest([event({ eventId: 'not-crowded-out' })])).status).toBe(200);
  });

  it("counts a body at its own route's limit when the route takes more than the node's (a standby's forwarded batch)", async () => {
    // The node's limit is 100,000 bytes; one route takes 1,000,000, as the cluster's forward route takes 64 MiB.
    const app = Fastify({ bodyLimit: 100_000 });
    const bodies = guardRequestBodies(app, { inflightMaxBytes: 2_000_000, inflightPerClientMaxBytes: 10_000_000, bodyLimitBytes: 100_000, bodyTimeoutMs: 60_000 });
    app.setErrorHandler((err, _request, reply) => reply.code(err instanceof AuditError && err.code === AuditErrorCode.LIMIT_EXCEEDED ? 429 : 500).send({ error: String(err) }));
    app.post('/large', { bodyLimit: 1_000_000 }, async () => ({ status: 'ok' }));
    app.post('/small', async () => ({ status: 'ok' }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    onTestFinished(() => app.close());
    const port = (app.server.address() as AddressInfo).port;
    const head = (path: string, length: string) => `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${length}`;
    // A declared length past the node's limit but within the route's is held whole, not cut to the node's limit.
    const declared = await rawRequest(port, head('/large', 'Content-Length: 600000'), '[');
    await expect.poll(() => bodies.heldBytes()).toBe(600_000);
    // A chunked body there counts as the route's limit.
    const chunked = await rawRequest(port, head('/large', 'Transfer-Encoding: chunked'), '1\r\n[\r\n');
    await expect.poll(() => bodies.heldBytes()).toBe(1_600_000);
    // With 1,600,000 held, a third body of 500,000 would pass the 2,000,000 budget; a small route's chunked body still counts 100,000.
    const third = await rawRequest(port, head('/large', 'Content-Length: 500000'), '[');
    await expect.poll(() => /^HTTP\/1\.1 \d+/.test(third.received())).toBe(true);
    expect(third.received()).toMatch(/^HTTP\/1\.1 429 /);
    chunked.socket.destroy();
    await expect.poll(() => bodies.heldBytes()).toBe(600_000);
    const small = await rawRequest(port, head('/small', 'Transfer-Encoding: chunked'), '1\r\n[\r\n');
    await expect.poll(() => bodies.heldBytes()).toBe(700_000);
    declared.socket.destroy();
    small.socket.destroy();
    await expect.poll(() => bodies.heldBytes()).toBe(0);
  });

  it('closes the connection of a body that does not arrive within the timeout, and stores nothing of it', async () => {
    const t = await startTestNode({ props: { 'auditlake.http.body.timeout.ms': '300' } });
    const port = Number(new URL(t.node.url).port);
    const body = JSON.stringify([event({ eventId: 'never-finished' })]);
    const stalled = await rawRequest(port, ingestHead(body.length), body.slice(0, 10));
    const started = performance.now();
    expect(await stalled.closed).toBe(true);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(stalled.received()).toBe('');
    // A body sent at once is not cut.
    expect((await t.ingest([event({ eventId: 'in-time' })])).status).toBe(200);
    expect((await t.stored()).map((e) => e.eventId)).toEqual(['in-time']);
  });

  it('ends the connection of a refused request with its answer, while the client still sends a body', async () => {
    const t = await startTestNode();
    const port = Number(new URL(t.node.url).port);
    const refused = await rawRequest(port, 'POST /v1/api/audit HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token wrong\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked', '1\r\n[\r\n');
    const trickle = setInterval(() => refused.socket.write('1\r\n \r\n'), 50);
    onTestFinished(() => clearInterval(trickle));
    expect(await refused.closed).toBe(true);
    expect(refused.received()).toMatch(/^HTTP\/1\.1 401 /);
    expect(refused.received().toLowerCase()).toContain('connection: close');
  });
});
