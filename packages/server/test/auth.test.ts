// Goal: only the right principals get in; refusals are 401/403 and are themselves audited, rate-bounded.
import { describe, expect, it } from 'vitest';
import { signHs256 } from '../src/index.js';
import { INGEST_TOKEN, event, startTestNode, type TestNode } from './test-node.js';

const JWT_SECRET = 'jwt-secret-for-tests';
const authProps = {
  'auditlake.auth.jwt.secret': JWT_SECRET,
  'auditlake.auth.tokens': 'ops:admin:ops-token,plugin:ingest:plugin-token',
  'auditlake.auth.access.keys': 'AKIDTEST:admin:s3cr3t:with:colons',
};

async function denials(t: TestNode) {
  return (await t.stored()).filter((e) => e.source === 'auditlake' && e.decision === 'DENY');
}

function withAuth(header: string) {
  return { headers: { authorization: header } };
}

describe('authentication and roles', () => {
  it('answers 401 without credentials and records a DENY auth:Authenticate event with reason and client address', async () => {
    const t = await startTestNode();
    const res = await t.request('/admin/audit', { token: null });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Token, Bearer, AccessKey');
    expect(await res.json()).toEqual({ status: 'error', error: 'authentication required: no credentials (Authorization header missing)', code: 'AUDIT_UNAUTHENTICATED' });
    await expect.poll(async () => (await denials(t)).length).toBe(1);
    expect((await denials(t))[0]).toMatchObject({
      userId: 'anonymous',
      action: 'auth:Authenticate',
      resource: 'GET /admin/audit',
      details: 'HTTP 401: no credentials (Authorization header missing); client 127.0.0.1',
    });
  });

  it('answers 401 to an unknown token, an unknown scheme and an empty credential', async () => {
    const t = await startTestNode();
    for (const [header, reason] of [
      ['Token nope', 'unknown token'],
      ['Basic YWxpY2U6eA==', 'unsupported Authorization scheme (use Token, Bearer or AccessKey)'],
      ['Token ', 'empty token credential'],
    ] as const) {
      const res = await t.request('/admin/audit', withAuth(header));
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: string }).error).toBe(`authentication required: ${reason}`);
    }
  });

  it('answers 403 to an ingest principal on admin endpoints and records the refused action', async () => {
    const t = await startTestNode();
    for (const [method, path, action] of [
      ['GET', '/admin/audit', 'audit:Search'],
      ['GET', '/admin/audit/settings', 'audit:ReadSettings'],
      ['POST', '/admin/audit/settings', 'audit:UpdateSettings'],
      ['GET', '/admin/cluster', 'audit:ReadCluster'],
    ] as const) {
      const res = await t.request(path, { method, token: INGEST_TOKEN, headers: { 'content-type': 'application/json' }, ...(method === 'POST' ? { body: '{"audit.retention.days":1}' } : {}) });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: string }).error).toBe(`forbidden: role ingest may not ${action} (needs admin)`);
    }
    await expect.poll(async () => (await denials(t)).length).toBe(4);
    const recorded = await denials(t);
    expect(recorded.map((e) => e.action).sort()).toEqual(['audit:ReadCluster', 'audit:ReadSettings', 'audit:Search', 'audit:UpdateSettings']);
    expect(recorded.every((e) => e.userId === 'ingest')).toBe(true);
    // The refused settings write changed nothing.
    expect(((await (await t.request('/admin/audit/settings')).json()) as Record<string, unknown>)['audit.retention.days']).toBe(90);
  });

  it('accepts configured tokens with their roles', async () => {
    const t = await startTestNode({ props: authProps });
    expect((await t.request('/admin/audit', withAuth('Token ops-token'))).status).toBe(200);
    expect((await t.request('/admin/audit', withAuth('Token plugin-token'))).status).toBe(403);
    expect((await t.ingest(event(), 'plugin-token')).status).toBe(200);
  });

  it('accepts HS256 JWTs with sub and role, and refuses bad signatures, expired tokens, alg none and unknown roles', async () => {
    const t = await startTestNode({ props: authProps });
    const nowSec = Math.floor(Date.now() / 1000);
    const admin = signHs256({ sub: 'dana', role: 'admin', exp: nowSec + 60 }, JWT_SECRET);
    expect((await t.request('/admin/audit', withAuth(`Bearer ${admin}`))).status).toBe(200);

    const settings = await t.request('/admin/audit/settings', { method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: '{"audit.retention.days":60}' });
    expect(settings.status).toBe(200);
    expect((await t.stored()).find((e) => e.action === 'audit:UpdateSettings')?.userId).toBe('dana');

    const ingestOnly = signHs256({ sub: 'trino-plugin', role: 'ingest' }, JWT_SECRET);
    expect((await t.request('/admin/audit', withAuth(`Bearer ${ingestOnly}`))).status).toBe(403);

    const refusals: Array<[string, string]> = [
      [signHs256({ sub: 'dana', role: 'admin' }, 'other-secret'), 'JWT signature does not verify'],
      [signHs256({ sub: 'dana', role: 'admin', exp: nowSec - 1 }, JWT_SECRET), 'JWT expired'],
      [signHs256({ sub: 'dana', role: 'root' }, JWT_SECRET), 'JWT role must be admin or ingest: root'],
      [signHs256({ role: 'admin' }, JWT_SECRET), 'JWT has no sub claim'],
      [`${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"sub":"x","role":"admin"}').toString('base64url')}.`, 'JWT alg must be HS256'],
      ['not-a-jwt', 'malformed JWT'],
    ];
    for (const [jwt, reason] of refusals) {
      const res = await t.request('/admin/audit', withAuth(`Bearer ${jwt}`));
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: string }).error).toBe(`authentication required: ${reason}`);
    }
  });

  it('refuses Bearer tokens when no JWT secret is configured', async () => {
    const t = await startTestNode();
    const res = await t.request('/admin/audit', withAuth(`Bearer ${signHs256({ sub: 'x', role: 'admin' }, 'anything')}`));
    expect(res.status).toBe(401);
  });

  it('accepts AccessKey id:secret (secrets may contain colons) and refuses a wrong secret or unknown id', async () => {
    const t = await startTestNode({ props: authProps });
    expect((await t.request('/admin/audit', withAuth('AccessKey AKIDTEST:s3cr3t:with:colons'))).status).toBe(200);
    expect((await t.request('/admin/audit', withAuth('AccessKey AKIDTEST:wrong'))).status).toBe(401);
    expect((await t.request('/admin/audit', withAuth('AccessKey NOPE:s3cr3t:with:colons'))).status).toBe(401);
    expect((await t.request('/admin/audit', withAuth('AccessKey no-colon'))).status).toBe(401);
  });

  it('leaves /health and /metrics open and never audits them', async () => {
    const t = await startTestNode();
    const health = await t.request('/health', { token: null });
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok', role: 'leader' });
    expect((await t.request('/metrics', { token: 'garbage' })).status).toBe(200);
    expect(await t.stored()).toEqual([]);
  });

  it('bounds how many refusals are recorded, and counts the rest', async () => {
    const t = await startTestNode({ props: { 'auditlake.auth.deny.audit.per.second': '5' } });
    const results = await Promise.all(Array.from({ length: 50 }, () => t.request('/admin/audit', withAuth('Token flood'))));
    expect(results.every((r) => r.status === 401)).toBe(true);
    const metrics = await (await t.request('/metrics', { token: null })).text();
    expect(metrics).toMatch(/^auditlake_access_denied_total\{status="401"\} 50$/m);
    const unrecorded = Number(/^auditlake_access_denied_unrecorded_total (\d+)$/m.exec(metrics)?.[1]);
    // Recording is asynchronous (the 401 does not wait for it): every refusal is either stored or counted.
    await expect.poll(async () => (await denials(t)).length + unrecorded).toBe(50);
    // A burst of 5 plus whatever refilled while the 50 requests ran (well under a second here).
    const recorded = (await denials(t)).length;
    expect(recorded).toBeGreaterThanOrEqual(5);
    expect(recorded).toBeLessThan(50);
  });

  it('never writes a presented token into the log', async () => {
    const lines: string[] = [];
    const stream = { write: (line: string) => lines.push(line) };
    const t = await startTestNode({ node: { logger: { level: 'trace', stream } } });
    await t.request('/admin/audit', withAuth('Token leaked-secret-value'));
    await t.ingest(event());
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toContain('leaked-secret-value');
    expect(lines.join('\n')).not.toContain(INGEST_TOKEN);
  });
});
