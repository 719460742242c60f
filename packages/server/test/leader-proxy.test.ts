// Goal: a standby passing a request to its leader waits for the answer's start only (a long
// NDJSON answer streams through whole), never answers a write the leader may have carried out
// with its own refusal, and answers from its replica only when the leader cannot have served it.
// Two real HTTP servers on 127.0.0.1: the "leader" with routes that answer slowly, the
// "standby" with the real proxy in front of a local answer.
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { toHttpError } from '../src/http-errors.js';
import { proxyToLeader } from '../src/leader-proxy.js';

const TIMEOUT_MS = 300;
const apps: FastifyInstance[] = [];

afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

async function listen(app: FastifyInstance): Promise<string> {
  apps.push(app);
  app.setErrorHandler(async (err, _request, reply) => {
    const mapped = toHttpError(err);
    return reply.code(mapped.statusCode).send(mapped.body);
  });
  return app.listen({ host: '127.0.0.1', port: 0 });
}

/** A leader whose routes answer as each test needs; `writes` counts the POSTs it carried out. */
async function startLeader(): Promise<{ url: string; writes: () => number }> {
  const app = Fastify();
  let writes = 0;
  app.post('/write', async () => {
    await sleep(TIMEOUT_MS * 2);
    writes++;
    return { saved: true };
  });
  app.get('/slow', async () => {
    await sleep(TIMEOUT_MS * 2);
    return { from: 'leader' };
  });
  app.get('/stream', async (_request, reply) => {
    // Headers at once, then lines over three timeouts.
    reply.type('application/x-ndjson');
    reply.raw.writeHead(200, { 'content-type': 'application/x-ndjson' });
    for (let i = 0; i < 6; i++) {
      reply.raw.write(`{"line":${i}}\n`);
      await sleep(TIMEOUT_MS / 2);
    }
    reply.raw.end();
    return reply;
  });
  app.get('/stepped-down', async (_request, reply) => reply.code(503).send({ status: 'error', error: 'not the leader', code: 'AUDIT_NOT_LEADER' }));
  app.get('/search-timeout', async (_request, reply) => reply.code(503).header('retry-after', '1').send({ status: 'error', error: 'search stopped', code: 'AUDIT_SEARCH_TIMEOUT' }));
  return { url: await listen(app), writes: () => writes };
}

/** A standby that passes every request to `leaderUrl` and otherwise answers `{from: 'replica'}`. */
async function startStandby(leaderUrl: string): Promise<string> {
  const app = Fastify();
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    if (await proxyToLeader(leaderUrl, request, reply, { timeoutMs: TIMEOUT_MS })) return reply;
    return { from: 'replica' };
  };
  app.get('/*', handler);
  app.post('/*', handler);
  return listen(app);
}

describe('proxyToLeader', () => {
  it('streams an answer that lasts longer than the timeout through whole', async () => {
    const leader = await startLeader();
    const standby = await startStandby(leader.url);
    const res = await fetch(`${standby}/stream`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-auditlake-proxied')).toBe(leader.url);
    const lines = (await res.text()).trim().split('\n');
    expect(lines).toEqual([0, 1, 2, 3, 4, 5].map((i) => `{"line":${i}}`));
  });

  it('answers a read from the replica when the leader does not answer in time', async () => {
    const leader = await startLeader();
    const standby = await startStandby(leader.url);
    const res = await fetch(`${standby}/slow`);
    expect(await res.json()).toEqual({ from: 'replica' });
  });

  it('does not answer a write the leader may have carried out with the local answer', async () => {
    const leader = await startLeader();
    const standby = await startStandby(leader.url);
    const res = await fetch(`${standby}/write`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(504);
    const body = (await res.json()) as { code: string; error: string };
    expect(body.code).toBe('AUDIT_LEADER_NO_ANSWER');
    expect(body.error).toBe(
      `this node passed the request to the leader (${leader.url}), which gave no answer within ${TIMEOUT_MS} ms: it may have carried it out, so look (GET the same resource, or search the audit log for the record it writes) before sending it again`,
    );
    // And the leader did carry it out.
    await sleep(TIMEOUT_MS * 2);
    expect(leader.writes()).toBe(1);
  });

  it('answers a write locally when the leader refused the connection (it cannot have seen it)', async () => {
    const leader = await startLeader();
    const gone = leader.url;
    await (apps.shift() as FastifyInstance).close();
    const standby = await startStandby(gone);
    const res = await fetch(`${standby}/write`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(await res.json()).toEqual({ from: 'replica' });
  });

  it('answers from the replica when the leader stepped down, and passes on any other 503 with its Retry-After', async () => {
    const leader = await startLeader();
    const standby = await startStandby(leader.url);
    expect(await (await fetch(`${standby}/stepped-down`)).json()).toEqual({ from: 'replica' });
    const timedOut = await fetch(`${standby}/search-timeout`);
    expect(timedOut.status).toBe(503);
    expect(timedOut.headers.get('retry-after')).toBe('1');
    expect(((await timedOut.json()) as { code: string }).code).toBe('AUDIT_SEARCH_TIMEOUT');
  });
});
