// Goal: the node serves the built Admin UI at its page URLs to browsers without credentials or data, with a strict CSP, and leaves the API as it was.
import { describe, expect, it } from 'vitest';
import { startTestNode } from './test-node.js';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('Admin UI pages', () => {
  it('is what a browser gets at each page URL, without credentials and without data, from this origin only', async () => {
    const t = await startTestNode();
    await t.ingest([{ eventId: 'secret-1', source: 'trino', userId: 'ana', action: 'data:Select', query: 'SELECT salary' }]);
    let html = '';
    for (const path of ['/admin/audit', '/admin/audit/search', '/admin/audit/maintenance', '/admin/audit/search?q=x&range=24h']) {
      const res = await t.request(path, { token: null, headers: { accept: BROWSER_ACCEPT } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      html = await res.text();
      expect(html).toContain('<div id="app"></div>');
      expect(html).not.toContain('SELECT salary');
    }
    // Every asset the page names is served, hashed and cacheable; nothing is fetched from elsewhere.
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(3);
    for (const asset of assets) {
      expect(asset).toMatch(/^\/admin\/audit\/assets\/[\w.-]+\.(js|css|svg)$/);
      const res = await t.request(asset, { token: null });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^(text\/javascript|text\/css|image\/svg\+xml)/);
      expect(res.headers.get('cache-control')).toContain('immutable');
      expect(await res.text()).not.toMatch(/https?:\/\/(?!www\.w3\.org)[a-z]/);
    }
    expect((await t.request('/admin/audit/assets/nope.js', { token: null })).status).toBe(404);
    // Page views are not refused access: once a real refusal (recorded asynchronously) has
    // landed, it is the only DENY in the log.
    expect((await t.request('/admin/audit', { token: null })).status).toBe(401);
    await expect.poll(async () => (await t.stored()).filter((e) => e.decision === 'DENY').map((e) => e.resource)).toEqual(['GET /admin/audit']);
  });

  it('pages refuse framing, answers of a URL shared with the API vary by Accept, HEAD answers as GET, and 404s are neither cached nor sniffed', async () => {
    const t = await startTestNode();
    for (const path of ['/admin/audit', '/admin/audit/search', '/admin/audit/maintenance']) {
      const page = await t.request(path, { token: null, headers: { accept: BROWSER_ACCEPT } });
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      expect(page.headers.get('vary')).toMatch(/\bAccept\b/i);
      const head = await t.request(path, { method: 'HEAD', token: null, headers: { accept: BROWSER_ACCEPT } });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-type')).toMatch(/^text\/html/);
      expect(head.headers.get('content-security-policy')).toBe(page.headers.get('content-security-policy'));
      expect(head.headers.get('x-frame-options')).toBe('DENY');
      expect(await head.text()).toBe('');
    }
    // The API's answer at the page's URL varies by Accept too, refusals included.
    const api = await t.request('/admin/audit', { headers: { accept: 'application/json' } });
    expect(api.status).toBe(200);
    expect(api.headers.get('vary')).toMatch(/\bAccept\b/i);
    expect((await t.request('/admin/audit', { token: null, headers: { accept: 'application/json' } })).headers.get('vary')).toMatch(/\bAccept\b/i);
    const notFound = [
      await t.request('/nope', { token: null }),
      await t.request('/admin/audit/assets/nope.js', { token: null }),
      await t.request('/nope', { method: 'POST', token: null, headers: { 'content-type': 'application/json' }, body: '{}' }),
    ];
    for (const res of notFound) {
      expect(res.status).toBe(404);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
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
    // A page URL without an API answers a non-browser caller with a page too (it holds nothing).
    expect((await t.request('/admin/audit/search', { token: null })).status).toBe(200);
  });
});
