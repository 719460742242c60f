// Goal: the endpoints that answer without credentials and tell the node's state (/health,
// /metrics) answer only under a Host the node knows — an IP address, localhost, its own
// --host or advertised name, or auditlake.http.allowed.hosts — so a web page cannot read them
// through DNS rebinding (its requests carry the page's own name as Host). A refusal is a 403
// AUDIT_HOST_NOT_ALLOWED naming the Host and the key that allows it, and holds none of the
// metrics. Peers, probes and scrapers by address keep working, and so do routes that need
// credentials (a rebound page has none to send).
import { describe, expect, it } from 'vitest';
import { rawGet } from './raw-get.js';
import { ADMIN_TOKEN, startTestNode, type TestNode } from './test-node.js';

/** GET with an explicit Host header over a real connection (fetch decides Host itself). */
async function get(t: TestNode, path: string, host: string, token?: string): Promise<{ status: number; body: string }> {
  const address = t.node.app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const headers: Record<string, string> = { host };
  if (token !== undefined) headers['authorization'] = `Token ${token}`;
  const { status, body } = await rawGet(port, path, headers);
  return { status, body: body.toString('utf8') };
}

describe('Host names of the open endpoints', () => {
  it('refuses /health and /metrics under a foreign Host (DNS rebinding) and answers known ones', async () => {
    const t = await startTestNode({ props: { 'auditlake.http.allowed.hosts': 'metrics.example.internal, Prom.Example.' }, node: { advertiseUrl: 'http://node-a.cluster.internal:7070' } });
    const port = '7070'; // only the port a Host header names; the request goes to the node's own
    for (const path of ['/metrics', '/health']) {
      for (const host of [`rebind.attacker.example:${port}`, 'rebind.attacker.example', `127.0.0.1.attacker.example:${port}`, `localhost.attacker.example:${port}`, `metrics.example.internal.attacker.example`]) {
        const res = await get(t, path, host);
        expect({ path, host, status: res.status }).toEqual({ path, host, status: 403 });
        const body = JSON.parse(res.body) as { code: string; error: string };
        expect(body.code).toBe('AUDIT_HOST_NOT_ALLOWED');
        expect(body.error).toBe(
          `${path} is not answered for Host ${JSON.stringify(host)}: it answers an IP address, localhost, this node's --host or advertised name, or a name in auditlake.http.allowed.hosts (now: metrics.example.internal, prom.example); a web page may be reaching this node through DNS rebinding — if the name is yours, add it to auditlake.http.allowed.hosts`,
        );
        expect(res.body).not.toContain('auditlake_');
        expect(res.body).not.toContain('leader');
      }
      const known = [`127.0.0.1:${port}`, '127.0.0.1', `localhost:${port}`, 'LocalHost.', `ui.localhost:${port}`, `[::1]:${port}`, `10.1.2.3:${port}`, 'metrics.example.internal', `METRICS.example.internal.:${port}`, 'prom.example', `node-a.cluster.internal:${port}`];
      for (const host of known) expect({ path, host, status: (await get(t, path, host)).status }).toEqual({ path, host, status: 200 });
    }
    expect((await get(t, '/metrics', `127.0.0.1:${port}`)).body).toContain('auditlake_events_ingested_total');
    // A route that needs credentials is not rebinding's to read: answered whatever the Host.
    expect((await get(t, '/admin/audit/settings', `rebind.attacker.example:${port}`, ADMIN_TOKEN)).status).toBe(200);
    expect((await get(t, '/admin/audit/settings', `rebind.attacker.example:${port}`)).status).toBe(401);
  });

  it('answers to nothing but addresses, localhost and its own names when none is configured', async () => {
    const t = await startTestNode();
    const port = new URL(t.node.url).port;
    expect((await get(t, '/metrics', `127.0.0.1:${port}`)).status).toBe(200);
    expect((await get(t, '/metrics', `auditlake.example:${port}`)).status).toBe(403);
    expect(JSON.parse((await get(t, '/health', `auditlake.example:${port}`)).body)).toMatchObject({ code: 'AUDIT_HOST_NOT_ALLOWED', error: expect.stringContaining('(now: none)') });
  });
});
