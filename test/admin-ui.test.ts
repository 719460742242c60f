// Goal: the Admin UI works in a real browser (Debian chromium via playwright-core) against a real
// `auditlake start` process: a token, a search, filters, denials marked, hostile text shown as text.
import { startNodeProcess, tempDir } from '@auditlake/testkit';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';

const TOKEN = 'ui-admin-token';
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const HOSTILE = '<img src=x onerror="window.__pwned=1">';

let browser: Browser;

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser.close();
});

async function startNode() {
  const dir = await tempDir();
  onTestFinished(() => dir.remove());
  const node = await startNodeProcess({ dataDir: dir.path, env: { AUDITLAKE_ADMIN_TOKEN: TOKEN } });
  onTestFinished(() => node.kill());
  await expect.poll(() => node.output()).toMatch(/listening on/);
  return node;
}

describe('Admin UI (real browser, real node)', () => {
  it('searches with the admin token, filters, marks denials, and shows hostile text as text', async () => {
    const node = await startNode();
    const events = [
      { eventId: 'u1', source: 'trino', userId: 'ana', action: 'data:Select', decision: 'ALLOW', query: 'SELECT * FROM sales.orders', tables: ['hive.sales.orders'], ts: Date.UTC(2026, 10, 1, 10) },
      { eventId: 'u2', source: 'spark', userId: 'bo', action: 'data:Insert', decision: 'DENY', query: HOSTILE, tables: ['hive.hr.salaries'], ts: Date.UTC(2026, 10, 2, 10) },
    ];
    const ingest = await fetch(`${node.url}/v1/api/audit`, { method: 'POST', headers: { authorization: `Token ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(events) });
    expect(ingest.status).toBe(200);

    const page = await browser.newPage();
    onTestFinished(() => page.close());
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    // A browser navigating to the API URL gets the page (docs/http-api.md), without credentials.
    const nav = await page.goto(`${node.url}/admin/audit`);
    expect(nav?.status()).toBe(200);
    expect(nav?.headers()['content-type']).toMatch(/^text\/html/);

    await page.fill('#token', TOKEN);
    await page.click('button[type=submit]');
    await expect.poll(() => page.textContent('#status')).toBe('2 events');
    const rows = page.locator('#results tbody tr');
    expect(await rows.count()).toBe(2);
    // Newest first; the denial is marked; the hostile query is text, not markup.
    expect(await rows.nth(0).locator('td').nth(1).textContent()).toBe('bo');
    expect(await rows.nth(0).getAttribute('class')).toBe('deny');
    expect(await rows.nth(0).locator('td.query').textContent()).toBe(HOSTILE);
    expect(await page.locator('#results img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();

    await page.fill('input[name=user]', 'ana');
    await page.click('button[type=submit]');
    await expect.poll(() => page.textContent('#status')).toBe('1 event');
    expect(await rows.nth(0).locator('td').nth(1).textContent()).toBe('ana');

    await page.fill('input[name=user]', '');
    await page.selectOption('select[name=action]', 'write');
    await page.click('button[type=submit]');
    await expect.poll(() => page.textContent('#status')).toBe('1 event');
    expect(await rows.nth(0).locator('td').nth(1).textContent()).toBe('bo');
    expect(errors).toEqual([]);
  });

  it('shows the API error for a wrong token and shows no events', async () => {
    const node = await startNode();
    const page = await browser.newPage();
    onTestFinished(() => page.close());
    await page.goto(`${node.url}/admin/audit/search`);
    await page.fill('#token', 'not-the-token');
    await page.click('button[type=submit]');
    await expect.poll(() => page.textContent('#status')).toMatch(/^Error 401: authentication required/);
    expect(await page.locator('#results').isHidden()).toBe(true);
  });
});
