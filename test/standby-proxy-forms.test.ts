// Goal: a standby passes an admin request to the leader as the client sent it. The settings body
// goes as its text: re-serialised from the parsed value, `1e400` (parsed as Infinity) went on as
// `null`, which the leader takes as "unset this key" — a save the leader refuses (400, nothing
// saved) was carried out as another change when sent to a standby. And an absolute-form target
// (`GET http://host/path`) goes by its path: appended whole to the leader's URL it made no URL, so
// a read was answered from the stale replica and a write 504 "it may have carried it out" though
// the leader never saw it. (Found by a security review.) Two real `auditlake start` processes,
// real redis-server.
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ADMIN, startCluster, type Cluster } from './cluster-harness.js';

function postRaw(url: string, body: string): Promise<Response> {
  return fetch(`${url}/admin/audit/settings`, { method: 'POST', headers: { authorization: `Token ${ADMIN}`, 'content-type': 'application/json' }, body });
}

async function retentionOn(cluster: Cluster, i: number): Promise<unknown> {
  const res = await fetch(`${cluster.node(i).url}/admin/audit/settings`, { headers: { authorization: `Token ${ADMIN}` } });
  return ((await res.json()) as Record<string, unknown>)['audit.retention.days'];
}

function rawRequest(url: string, text: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let out = '';
    socket.on('data', (d) => (out += d.toString('utf8')));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
    socket.write(text);
  });
}

describe('standby passing admin requests to the leader', () => {
  it('refuses a settings value the leader refuses, instead of sending it on as null (unset)', { timeout: 120_000 }, async () => {
    const cluster = await startCluster({ size: 2 });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    await cluster.waitForLeaderKnownBy(standby);

    expect((await postRaw(cluster.node(leader).url, '{"audit.retention.days":7}')).status).toBe(200);
    expect(await retentionOn(cluster, leader)).toBe(7);

    // Sent to the leader itself: refused, nothing saved.
    const direct = await postRaw(cluster.node(leader).url, '{"audit.retention.days":1e400}');
    expect(direct.status).toBe(400);
    expect(await retentionOn(cluster, leader)).toBe(7);

    // The same bytes sent to the standby.
    const viaStandby = await postRaw(cluster.node(standby).url, '{"audit.retention.days":1e400}');
    expect(viaStandby.status).toBe(400);
    expect(viaStandby.headers.get('x-auditlake-proxied')).toBe(cluster.node(leader).url);
    expect(((await viaStandby.json()) as { code?: string }).code).toBe('AUDIT_SETTINGS_INVALID');
    expect(await retentionOn(cluster, leader)).toBe(7);
  });

  // RFC 9112 §3.2.2: every server must accept a request target in absolute form.
  it('passes an absolute-form request on to the leader like its origin form', { timeout: 120_000 }, async () => {
    const cluster = await startCluster({ size: 2 });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;
    await cluster.waitForLeaderKnownBy(standby);
    const origin = await fetch(`${cluster.node(standby).url}/admin/audit/settings`, { headers: { authorization: `Token ${ADMIN}` } });
    expect(origin.headers.get('x-auditlake-proxied')).toBe(cluster.node(leader).url);
    await origin.text();
    const abs = await rawRequest(
      cluster.node(standby).url,
      `GET http://evil.example/admin/audit/settings HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token ${ADMIN}\r\nConnection: close\r\n\r\n`,
    );
    const absPost = await rawRequest(
      cluster.node(standby).url,
      `POST http://evil.example/admin/audit/settings HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token ${ADMIN}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
    );

    expect(abs).toMatch(/x-auditlake-proxied: /i);
    expect(abs).not.toMatch(/"stale":true/);
    expect(absPost.split('\r\n')[0]).not.toContain('504');
  });
});
