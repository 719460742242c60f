import { describe, expect, it } from 'vitest';
import { startTestNode } from './test-node.js';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('Admin UI page', () => {
  it('is what a browser gets at /admin/audit and /admin/audit/search, without credentials and without data', async () => {
    const t = await startTestNode();
    await t.ingest([{ eventId: 'secret-1', source: 'trino', userId: 'ana', action: 'data:Select', query: 'SELECT salary' }]);
    for (const path of ['/admin/audit', '/admin/audit/search']) {
      const res = await t.request(path, { token: null, headers: { accept: BROWSER_ACCEPT } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
      const html = await res.text();
      expect(html).toContain('<form id="search">');
      expect(html).not.toContain('SELECT salary');
    }
    const script = await t.request('/admin/audit/ui.js', { token: null });
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    // Page views are not refused access: once a real refusal (recorded asynchronously) has
    // landed, it is the only DENY in the log.
    expect((await t.request('/admin/audit', { token: null })).status).toBe(401);
    await expect.poll(async () => (await t.stored()).filter((e) => e.decision === 'DENY').map((e) => e.resource)).toEqual(['GET /admin/audit']);
  });

  it('leaves the API as it was: JSON callers still need credentials, and get JSON with them', async () => {
    const t = await startTestNode();
    expect((await t.request('/admin/audit', { token: null })).status).toBe(401);
    expect((await t.request('/admin/audit', { token: null, headers: { accept: 'application/json' } })).status).toBe(401);
    // Both refusals are recorded (asynchronously) as DENY events; the API then returns them.
    await expect.poll(async () => (await t.stored()).length).toBe(2);
    const res = await t.request('/admin/audit', { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { events: Array<{ action: string; decision: string }>; count: number; truncated: boolean };
    expect(answer).toMatchObject({ count: 2, truncated: false });
    expect(answer.events.map((e) => [e.action, e.decision])).toEqual([
      ['auth:Authenticate', 'DENY'],
      ['auth:Authenticate', 'DENY'],
    ]);
  });
});
