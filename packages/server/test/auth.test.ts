// Goal: only the right principals get in; refusals are 401/403 and are themselves audited, rate-bounded.
import { describe, expect, it } from 'vitest';
import { signHs256 } from '../src/index.js';
import { ADMIN_TOKEN, INGEST_TOKEN, event, startTestNode, type TestNode } from './test-node.js';

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

  it('marks every API answer, refusals too, as not to be cached or content-sniffed (they hold audit records and settings)', async () => {
    const t = await startTestNode();
    for (const [path, token, status] of [
      ['/admin/audit', ADMIN_TOKEN, 200],
      ['/admin/audit/settings', ADMIN_TOKEN, 200],
      ['/admin/audit', null, 401],
      ['/admin/audit/settings', INGEST_TOKEN, 403],
    ] as const) {
      const res = await t.request(path, { token });
      expect(res.status).toBe(status);
      expect([res.headers.get('cache-control'), res.headers.get('x-content-type-options')]).toEqual(['no-store', 'nosniff']);
    }
  });

  it('answers 401 to an unknown token, an unknown scheme and an empty credential', async () => {
    const t = await startTestNode();
    for (const [header, reason] of [
      ['Token nope', 'unknown token'],
      ['Basic YWxpY2U6eA==', 'unsupported Authorization scheme (use Token, Bearer or AccessKey)'],
      ['Token ', 'empty Token credential'],
      ['constructor x', 'unsupported Authorization scheme (use Token, Bearer or AccessKey)'],
      ['__proto__ x', 'unsupported Authorization scheme (use Token, Bearer or AccessKey)'],
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

    const ingestOnly = signHs256({ sub: 'trino-plugin', role: 'ingest', exp: nowSec + 60 }, JWT_SECRET);
    expect((await t.request('/admin/audit', withAuth(`Bearer ${ingestOnly}`))).status).toBe(403);

    const refusals: Array<[string, string]> = [
      [signHs256({ sub: 'dana', role: 'admin', exp: nowSec + 60 }, 'other-secret'), 'JWT signature does not verify'],
      // 60 s of clock skew are allowed: expired 61 s ago is refused.
      [signHs256({ sub: 'dana', role: 'admin', exp: nowSec - 61 }, JWT_SECRET), 'JWT expired'],
      [signHs256({ sub: 'dana', role: 'admin' }, JWT_SECRET), 'JWT has no exp claim (an expiry time is required)'],
      [signHs256({ sub: 'dana', role: 'admin', exp: String(nowSec + 60) }, JWT_SECRET), 'JWT exp claim must be a number (seconds since the epoch), got string'],
      [signHs256({ sub: 'dana', role: 'admin', exp: null }, JWT_SECRET), 'JWT exp claim must be a number (seconds since the epoch), got null'],
      [signHs256({ sub: 'dana', role: 'admin', exp: nowSec + 600, nbf: nowSec + 120 }, JWT_SECRET), 'JWT not yet valid (nbf is in the future)'],
      [signHs256({ sub: 'dana', role: 'admin', exp: nowSec + 600, nbf: 'soon' }, JWT_SECRET), 'JWT nbf claim must be a number (seconds since the epoch), got string'],
      [signHs256({ sub: 'dana', role: 'admin', exp: nowSec + 600, iat: nowSec + 120 }, JWT_SECRET), "JWT issued in the future (iat is ahead of this node's clock)"],
      [signHs256({ sub: 'dana', role: 'root', exp: nowSec + 60 }, JWT_SECRET), 'JWT role must be admin or ingest: root'],
      [signHs256({ role: 'admin', exp: nowSec + 60 }, JWT_SECRET), 'JWT has no sub claim'],
      [`${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(`{"sub":"x","role":"admin","exp":${nowSec + 60}}`).toString('base64url')}.`, 'JWT alg must be HS256'],
      [`${Buffer.from('{"alg":"HS512"}').toString('base64url')}.${Buffer.from(`{"sub":"x","role":"admin","exp":${nowSec + 60}}`).toString('base64url')}.x`, 'JWT alg must be HS256'],
      ['not-a-jwt', 'malformed JWT (it must be three base64url parts separated by dots)'],
      // A sub that is a configured token's or access key's name: audit records and source
      // bindings name principals by it, so the JWT would be recorded and bound as that credential.
      [signHs256({ sub: 'ops', role: 'admin', exp: nowSec + 60 }, JWT_SECRET), 'JWT sub "ops" is the name of a configured token or access key: a JWT may not act as that principal'],
      [signHs256({ sub: 'AKIDTEST', role: 'ingest', exp: nowSec + 60 }, JWT_SECRET), 'JWT sub "AKIDTEST" is the name of a configured token or access key: a JWT may not act as that principal'],
    ];
    for (const [jwt, reason] of refusals) {
      const res = await t.request('/admin/audit', withAuth(`Bearer ${jwt}`));
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: string }).error).toBe(`authentication required: ${reason}`);
    }
    // Within the 60 s skew: expired 30 s ago, nbf and iat 30 s ahead are still accepted.
    for (const claims of [{ exp: nowSec - 30 }, { exp: nowSec + 600, nbf: nowSec + 30, iat: nowSec + 30 }]) {
      expect((await t.request('/admin/audit', withAuth(`Bearer ${signHs256({ sub: 'dana', role: 'admin', ...claims }, JWT_SECRET)}`))).status).toBe(200);
    }
  });

  it('takes a JWT signature only in the exact unpadded base64url spelling it was issued in (padded, with junk characters, in the +/ alphabet or with a spare bit flipped: 401)', async () => {
    const t = await startTestNode({ props: authProps });
    const jwt = signHs256({ sub: 'eve', role: 'admin', exp: Math.floor(Date.now() / 1000) + 600 }, JWT_SECRET);
    const [h, p, sig] = jwt.split('.') as [string, string, string];
    expect((await t.request('/admin/audit/settings', withAuth(`Bearer ${jwt}`))).status).toBe(200);
    // The last of 43 characters carries 4 bits of the MAC and 2 spare ones.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const spareFlipped = sig.slice(0, -1) + alphabet[alphabet.indexOf(sig.at(-1) as string) ^ 1];
    const variants = [`${sig}=`, `${sig}!!`, `${sig.slice(0, 10)}*${sig.slice(10)}`, sig.replace(/-/g, '+').replace(/_/g, '/'), spareFlipped].filter((variant) => variant !== sig);
    expect(variants.length).toBeGreaterThanOrEqual(4);
    for (const variant of variants) expect((await t.request('/admin/audit/settings', withAuth(`Bearer ${h}.${p}.${variant}`))).status, variant).toBe(401);
  });

  it('with auditlake.auth.jwt.issuer and .audience, refuses a JWT the same secret signed for another issuer or audience', async () => {
    const t = await startTestNode({ props: { ...authProps, 'auditlake.auth.jwt.issuer': 'https://idp.example', 'auditlake.auth.jwt.audience': 'auditlake' } });
    const nowSec = Math.floor(Date.now() / 1000);
    const claims = { sub: 'dana', role: 'admin', exp: nowSec + 60 };
    for (const aud of ['auditlake', ['grafana', 'auditlake']]) {
      expect((await t.request('/admin/audit', withAuth(`Bearer ${signHs256({ ...claims, iss: 'https://idp.example', aud }, JWT_SECRET)}`))).status, JSON.stringify(aud)).toBe(200);
    }
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ ...claims, aud: 'auditlake' }, 'JWT has no iss claim (auditlake.auth.jwt.issuer requires one)'],
      [{ ...claims, iss: 'https://other.example', aud: 'auditlake' }, 'JWT iss claim is not the issuer auditlake.auth.jwt.issuer names'],
      [{ ...claims, iss: 'https://idp.example' }, 'JWT has no aud claim (auditlake.auth.jwt.audience requires one)'],
      [{ ...claims, iss: 'https://idp.example', aud: 'grafana' }, 'JWT aud claim does not name the audience auditlake.auth.jwt.audience names'],
      [{ ...claims, iss: 'https://idp.example', aud: ['grafana', 'AUDITLAKE'] }, 'JWT aud claim does not name the audience auditlake.auth.jwt.audience names'],
    ];
    for (const [refused, reason] of refusals) {
      const res = await t.request('/admin/audit', withAuth(`Bearer ${signHs256(refused, JWT_SECRET)}`));
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
    const t = await startTestNode({ props: { 'auditlake.auth.deny.audit.per.second': '5', 'auditlake.auth.refusals.per.client.max': '100' } });
    const results = await Promise.all(Array.from({ length: 50 }, () => t.request('/admin/audit', withAuth('Token flood'))));
    expect(results.every((r) => r.status === 401)).toBe(true);
    const metrics = await (await t.request('/metrics', { token: null })).text();
    expect(metrics).toMatch(/^auditlake_access_denied_total\{status="401"\} 50$/m);
    const unrecorded = Number(/^auditlake_access_denied_unrecorded_total (\d+)$/m.exec(metrics)?.[1]);
    // Recording is asynchronous (the 401 does not wait for it): every refusal is either stored
    // one by one or counted, and those counted are stored as one summary about a second later.
    const oneByOne = async () => (await denials(t)).filter((e) => e.details.startsWith('HTTP 401'));
    await expect.poll(async () => (await oneByOne()).length + unrecorded).toBe(50);
    // A burst of 5 plus whatever refilled while the 50 requests ran (well under a second here).
    const recorded = (await oneByOne()).length;
    expect(recorded).toBeGreaterThanOrEqual(5);
    expect(recorded).toBeLessThan(50);
    const summary = async () => (await denials(t)).find((e) => e.resource === 'refusals not recorded one by one');
    await expect.poll(summary, { timeout: 5_000 }).toBeDefined();
    expect(await summary()).toMatchObject({ userId: 'anonymous', action: 'auth:Authenticate', details: expect.stringMatching(new RegExp(`^${unrecorded} refused requests without valid credentials between `)) as unknown });
    expect(await denials(t)).toHaveLength(recorded + 1);
  });

  it('never repeats a presented credential: not in the 401 body, not in the stored DENY event (scheme and a short fingerprint only)', async () => {
    const t = await startTestNode({ props: authProps });
    const secret = 'tok-9f8e7d6c5b4a39281706';
    const jwt = signHs256({ sub: 'dana', role: 'admin', exp: 1 }, JWT_SECRET);
    const headers = [secret, `Token\t${secret}x`, `Token  ${secret}y`, `${secret} ${secret}`, `Basic ${secret}`, `Bearer ${jwt}`, `AccessKey AKIDTEST:${secret}`, `token\t\t${secret}x`];
    const bodies: string[] = [];
    for (const header of headers) {
      const res = await t.request('/admin/audit', withAuth(header));
      expect(res.status, header).toBe(401);
      bodies.push(await res.text());
    }
    await expect.poll(async () => (await denials(t)).length).toBe(headers.length);
    const stored = JSON.stringify(await denials(t));
    for (const text of [...bodies, stored]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(jwt.split('.')[2]!);
    }
    const details = (await denials(t)).map((e) => e.details);
    expect(details.filter((d) => /^HTTP 401: unsupported Authorization scheme \(use Token, Bearer or AccessKey\); credential fingerprint [0-9a-f]{8}; client 127\.0\.0\.1$/.test(d))).toHaveLength(3);
    expect(details.filter((d) => /^HTTP 401: unknown token; scheme Token; credential fingerprint [0-9a-f]{8}; client 127\.0\.0\.1$/.test(d))).toHaveLength(3);
    expect(details.some((d) => /^HTTP 401: JWT expired; scheme Bearer; credential fingerprint [0-9a-f]{8}; client /.test(d))).toBe(true);
    // The same credential twice (`…x` after a tab and after two) has one fingerprint; `…y` another.
    const tokenFingerprints = details.filter((d) => d.startsWith('HTTP 401: unknown token')).map((d) => /fingerprint ([0-9a-f]{8})/.exec(d)?.[1]);
    expect(new Set(tokenFingerprints).size).toBe(2);
  });

  it('answers a client past 20 refusals in a minute with 429 and Retry-After, records one summary instead of each, and still serves valid credentials from the same address', async () => {
    const t = await startTestNode();
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 60; i++) {
      last = await t.request('/admin/audit', withAuth(`Token flood-${i}`));
      statuses.push(last.status);
      if (i === 30) expect((await t.request('/admin/audit')).status).toBe(200); // legitimate, same 127.0.0.1
    }
    expect(statuses.slice(0, 20).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(20).every((s) => s === 429)).toBe(true);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(last!.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(await last!.json()).toMatchObject({ status: 'error', code: 'AUDIT_LIMIT_EXCEEDED', error: expect.stringMatching(/^too many refused requests from 127\.0\.0\.1; retry after \d+ s \(authentication required: unknown token\)$/) as unknown });
    // Ingest keeps working for the legitimate client too.
    expect((await t.ingest(event({ eventId: 'legit' }))).status).toBe(200);
    await expect.poll(async () => (await denials(t)).length).toBe(20);
    // Closing ends the window: its 40 limited refusals become one summary event.
    await t.node.close();
    const again = await startTestNode({ dataDir: t.dataDir });
    const recorded = await denials(again);
    expect(recorded).toHaveLength(21);
    expect(recorded.filter((e) => e.resource === 'client 127.0.0.1').map((e) => e.details)).toEqual([
      expect.stringMatching(/^40 refused requests from 127\.0\.0\.1 between \S+ and \S+, answered 429 after the first 20 \(recorded one by one\); this summary stands for them$/),
    ]);
    expect((await again.stored()).some((e) => e.eventId === 'legit')).toBe(true);
  });

  it('never writes a presented token into the log', async () => {
    const lines: string[] = [];
    const stream = { write: (line: string) => lines.push(line) };
    const t = await startTestNode({ node: { logger: { level: 'trace', stream } } });
    await t.request('/admin/audit', withAuth('Token leaked-secret-value'));
    await t.request('/admin/audit', withAuth('leaked-secret-bare'));
    // Credentials some clients put in URLs: masked in the request line that is logged.
    await t.request('/admin/audit?token=leaked-in-url-1&limit=5');
    await t.request('/admin/audit?limit=5&access_token=leaked-in-url-2');
    await t.request('/v1/api/audit?X-Amz-Signature=leaked-in-url-3&apiKey=leaked-in-url-4', { method: 'POST', token: null, headers: { 'content-type': 'application/json' }, body: '{}' });
    await t.request('/no/such/path?client_secret=leaked-in-url-5', { token: null });
    await t.ingest(event());
    expect(lines.length).toBeGreaterThan(0);
    const log = lines.join('\n');
    for (const secret of ['leaked-secret-value', 'leaked-secret-bare', 'leaked-in-url', INGEST_TOKEN, ADMIN_TOKEN]) expect(log, secret).not.toContain(secret);
    expect(log).toContain('/admin/audit?token=[REDACTED]&limit=5');
    expect(log).toContain('/admin/audit?limit=5&access_token=[REDACTED]');
  });
});

describe('secrets short enough to guess', () => {
  it('are warned about at start, naming the principal and never the secret; long ones are not', async () => {
    const lines: string[] = [];
    const props = { 'auditlake.auth.tokens': 'ops:admin:hunter2,robot:ingest:0123456789abcdef0123456789abcdef', 'auditlake.auth.access.keys': 'etl:ingest:short-key', 'auditlake.auth.jwt.secret': 'tiny' };
    await startTestNode({ props, node: { logger: { level: 'warn', stream: { write: (line: string) => lines.push(line) } } } });
    const warnings = lines.map((line) => (JSON.parse(line) as { msg: string }).msg).filter((msg) => msg.includes('short enough to be found by guessing'));
    expect(warnings).toEqual([
      'the token of principal "ops" is 7 characters, short enough to be found by guessing: use 32 or more random characters (e.g. openssl rand -hex 32)',
      'the secret of access key "etl" is 9 characters, short enough to be found by guessing: use 32 or more random characters (e.g. openssl rand -hex 32)',
      'auditlake.auth.jwt.secret is 4 characters, short enough to be found by guessing: use 32 or more random characters (e.g. openssl rand -hex 32)',
    ]);
    expect(lines.join('\n')).not.toMatch(/hunter2|short-key|"tiny"/);
  });
});
