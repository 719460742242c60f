// Goal: the Admin UI works in a real browser (Debian chromium via playwright-core) against a real `auditlake start`:
// every page and interaction an operator uses, at desktop and 420 px widths, light and dark, with screenshots kept.
import { createHmac } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startNodeProcess, tempDir, type NodeProcess } from '@auditlake/testkit';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';

const TOKEN = 'ui-admin-token';
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const ARTIFACTS = join(import.meta.dirname, 'artifacts', 'ui');
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const TRUNCATION = (n: number) => `Showing the newest ${n} matching events — narrow the time range or filters to see older ones`;
/**
 * The most one browser step or request may take. Every Playwright wait in a session's context has it as
 * its default (Playwright's own is 30 s, and an expect.poll whose callback waits that long twice outlasts
 * the 60 s test timeout); the waits Playwright gives no deadline (page.evaluate, download.path(), count(),
 * allTextContents(), new contexts and pages) and fetch get it through within(). So a hung step fails on its
 * own, naming itself, well inside the test timeout.
 */
const STEP_MS = 15_000;

let browser: Browser;
let node: NodeProcess;

/** `work`, or a failure naming `step` once `ms` have passed without an answer. */
async function within<T>(step: string, work: Promise<T>, ms = STEP_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${step}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

beforeAll(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  const dir = await tempDir();
  node = await startNodeProcess({ dataDir: dir.path, env: { AUDITLAKE_ADMIN_TOKEN: TOKEN } });
  return async () => {
    await node.kill();
    await dir.remove();
  };
});
afterAll(async () => {
  await browser.close();
});

async function ingest(events: unknown[]): Promise<void> {
  const res = await within(
    'ingest: POST /v1/api/audit',
    fetch(`${node.url}/v1/api/audit`, { method: 'POST', headers: { authorization: `Token ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(events) }),
  );
  expect(res.status).toBe(200);
}

interface Session {
  context: BrowserContext;
  page: Page;
  /** Page errors, CSP violations and console errors seen so far. */
  problems: string[];
  /** Every URL the page requested. */
  urls: string[];
}

/** A fresh browser context (its own sessionStorage), watching for errors, CSP violations and tokens in URLs. */
async function session(options: { width?: number; colorScheme?: 'light' | 'dark' } = {}): Promise<Session> {
  const context = await within(
    'browser.newContext',
    browser.newContext({
      viewport: { width: options.width ?? 1280, height: 900 },
      colorScheme: options.colorScheme ?? 'light',
      timezoneId: 'America/New_York',
      acceptDownloads: true,
    }),
  );
  onTestFinished(() => within('context.close', context.close()));
  context.setDefaultTimeout(STEP_MS);
  context.setDefaultNavigationTimeout(STEP_MS);
  await within('context.grantPermissions(clipboard)', context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: node.url }));
  const page = await within('context.newPage', context.newPage());
  const problems: string[] = [];
  const urls: string[] = [];
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
  });
  page.on('request', (req) => urls.push(req.url()));
  return { context, page, problems, urls };
}

async function signIn(page: Page, path = '/admin/audit'): Promise<void> {
  await page.goto(node.url + path);
  await page.fill('#token', TOKEN);
  await page.click('form.sign-in button[type=submit]');
  await page.waitForSelector('form.sign-in', { state: 'detached' });
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** No page error, CSP violation or console error (but the browser's note of an expected refusal), and no token in any URL. */
function clean(s: Session, expectedStatuses: number[] = []): void {
  const expected = (p: string) => expectedStatuses.some((status) => p === `console: Failed to load resource: the server responded with a status of ${status} (${status === 401 ? 'Unauthorized' : 'Bad Request'})`);
  expect(s.problems.filter((p) => !expected(p))).toEqual([]);
  for (const url of s.urls) expect(url).not.toContain(TOKEN);
}

const rowUsers = (page: Page) => page.locator('table.events tbody tr.event-row td.user').allTextContents();

describe('Admin UI (real browser, real node)', () => {
  it('Overview: counters, graph and histogram of the window; a click on a node drills down; reload keeps it', async () => {
    const now = Date.now();
    await ingest([
      { eventId: 'g1', source: 'trino', userId: 'gina', action: 'data:Select', decision: 'ALLOW', tables: ['hive.gx.orders'], query: 'SELECT * FROM hive.gx.orders', ts: now - 5 * MIN },
      { eventId: 'g2', source: 'trino', userId: 'gina', action: 'data:Select', decision: 'ALLOW', tables: ['hive.gx.orders', 'hive.gx.items'], query: 'SELECT 2', ts: now - 4 * MIN },
      { eventId: 'g3', source: 'spark', userId: 'gus', action: 'data:Insert', decision: 'DENY', tables: ['hive.gx.orders'], query: 'INSERT INTO hive.gx.orders', details: 'no grant', ts: now - 3 * MIN },
      { eventId: 'g4', source: 'Flink', userId: 'gus', action: 'data:Write', decision: 'ALLOW', tables: ['lake.gx.clicks'], query: '', ts: now - 2 * MIN },
    ]);
    const s = await session();
    await signIn(s.page, '/admin/audit?range=1h');
    // Only the last hour: exactly the four events above (older tests' events are days old or other users).
    await s.page.locator('[data-counter=events] .value').filter({ hasText: /^\d+$/ }).waitFor();
    const counter = async (name: string) => s.page.locator(`[data-counter=${name}] .value`).textContent();
    await expect.poll(() => counter('events')).toBe('4');
    expect([await counter('users'), await counter('engines'), await counter('tables'), await counter('reads'), await counter('writes')]).toEqual(['2', '3', '3', '2', '2']);
    for (const id of ['user:gina', 'user:gus', 'engine:trino', 'engine:spark', 'engine:flink', 'table:hive.gx.orders', 'table:hive.gx.items', 'table:lake.gx.clicks']) {
      expect(await s.page.locator(`[data-node="${id}"]`).count()).toBe(1);
    }
    expect(await s.page.locator('.graph .links line').count()).toBe(3 + 4);
    // The histogram is drawn (uPlot canvas) with ALLOW and DENY in its legend.
    expect(await s.page.locator('.histogram canvas').count()).toBeGreaterThan(0);
    expect(await s.page.locator('.histogram .u-legend').textContent()).toMatch(/DENY.*ALLOW/);
    await shot(s.page, 'overview');

    await s.page.click('[data-node="user:gus"]');
    await expect.poll(() => rowUsers(s.page)).toEqual(['gus', 'gus']);
    expect(s.page.url()).toContain('focus=user%3Agus');
    // The query text and details open below a row.
    await s.page.locator('.drill-down tr.event-row button[aria-expanded=false]').last().click();
    expect(await s.page.locator('.drill-down pre.event-json').textContent()).toContain('"details": "no grant"');
    await shot(s.page, 'overview-drill-down');

    // Reload: the token is still in this tab's sessionStorage, the window and the node in the URL.
    await s.page.reload();
    await expect.poll(() => rowUsers(s.page)).toEqual(['gus', 'gus']);
    expect(await s.page.locator('select[name=range]').inputValue()).toBe('1h');

    // Keyboard: Tab reaches the graph's nodes, Enter drills down.
    for (let i = 0; i < 40 && (await s.page.evaluate(() => document.activeElement?.getAttribute('data-node'))) !== 'engine:trino'; i++) await s.page.keyboard.press('Tab');
    expect(await s.page.evaluate(() => document.activeElement?.getAttribute('data-node'))).toBe('engine:trino');
    await s.page.keyboard.press('Enter');
    await expect.poll(() => rowUsers(s.page)).toEqual(['gina', 'gina']);
    clean(s);
  });

  it('Search: every time range option (a relative one ends now: an event dated ahead is only in Any time), custom From/To in local time with the whole To minute, deep links', async () => {
    const now = Date.now();
    const minuteStart = Math.floor((now - 3 * DAY) / MIN) * MIN;
    await ingest([
      { eventId: 't+2h', source: 'trino', userId: 'tim', action: 'data:Select', ts: now + 2 * HOUR },
      { eventId: 't-10m', source: 'trino', userId: 'tim', action: 'data:Select', ts: now - 10 * MIN },
      { eventId: 't-2h', source: 'trino', userId: 'tim', action: 'data:Select', ts: now - 2 * HOUR },
      { eventId: 't-2d', source: 'trino', userId: 'tim', action: 'data:Select', ts: now - 2 * DAY },
      { eventId: 't-10d', source: 'trino', userId: 'tim', action: 'data:Select', ts: now - 10 * DAY },
      { eventId: 't-40d', source: 'trino', userId: 'tim', action: 'data:Select', ts: now - 40 * DAY },
      { eventId: 'c-in', source: 'trino', userId: 'tim', action: 'data:Select', ts: minuteStart + 59_000 },
      { eventId: 'c-out', source: 'trino', userId: 'tim', action: 'data:Select', ts: minuteStart + MIN },
    ]);
    const s = await session();
    await signIn(s.page, '/admin/audit/search?user=tim');
    const options = await s.page.locator('select[name=range] option').allTextContents();
    expect(options).toEqual(['Any time', 'Last hour', 'Last 24h', 'Last 7 days', 'Last 30 days', 'Custom range…']);
    expect(await s.page.locator('select[name=max] option').allTextContents()).toEqual(['100', '400', '1000', '5000']);
    expect(await s.page.locator('select[name=max]').inputValue()).toBe('400');
    const ids = () => s.page.locator('table.events tbody tr.event-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event-id')));
    const expected: Record<string, string[]> = {
      any: ['t+2h', 't-10m', 't-2h', 't-2d', 'c-out', 'c-in', 't-10d', 't-40d'],
      '1h': ['t-10m'],
      '24h': ['t-10m', 't-2h'],
      '7d': ['t-10m', 't-2h', 't-2d', 'c-out', 'c-in'],
      '30d': ['t-10m', 't-2h', 't-2d', 'c-out', 'c-in', 't-10d'],
    };
    for (const [range, want] of Object.entries(expected)) {
      await s.page.selectOption('select[name=range]', range);
      await s.page.click('button[type=submit]:has-text("Search")');
      await expect.poll(ids).toEqual(want);
    }
    // Custom: From and To are the browser's local time (New York here), to the minute; To's whole minute counts.
    await s.page.selectOption('select[name=range]', 'custom');
    const local = await s.page.evaluate((ms) => {
      const d = new Date(ms);
      const p = (n: number) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
    }, minuteStart);
    await s.page.fill('input[name=from]', local);
    await s.page.fill('input[name=to]', local);
    await s.page.click('button[type=submit]:has-text("Search")');
    await expect.poll(ids).toEqual(['c-in']);
    expect(s.urls.some((u) => u.includes(`from=${minuteStart}&to=${minuteStart + MIN - 1}`))).toBe(true);
    await shot(s.page, 'search-custom-range');

    // A deep link opens with its filters filled in and applied.
    await s.page.goto(`${node.url}/admin/audit/search?user=tim&range=24h&max=100`);
    await expect.poll(ids).toEqual(['t-10m', 't-2h']);
    expect(await s.page.inputValue('input[name=user]')).toBe('tim');
    expect(await s.page.locator('select[name=max]').inputValue()).toBe('100');
    clean(s);
  });

  it('Search: the truncation sentence, red DENY and green ALLOW badges, Load older to the end, export, copy', async () => {
    const now = Date.now();
    await ingest(Array.from({ length: 230 }, (_, i) => ({ eventId: `p${String(i).padStart(3, '0')}`, source: i % 2 ? 'spark' : 'trino', userId: 'pat', action: 'data:Select', decision: i % 10 === 0 ? 'DENY' : 'ALLOW', query: i === 0 ? '=HYPERLINK("x")' : `SELECT ${i}`, ts: now - DAY - Math.floor(i / 3) * MIN })));
    const s = await session();
    await signIn(s.page, '/admin/audit/search?user=pat&max=100');
    await expect.poll(() => s.page.locator('p.truncation').textContent()).toBe(TRUNCATION(100));
    const deny = s.page.locator('.badge.decision-deny').first();
    const allow = s.page.locator('.badge.decision-allow').first();
    expect(await deny.textContent()).toBe('DENY');
    expect(await deny.evaluate((el) => getComputedStyle(el).backgroundColor)).toBe('rgb(185, 28, 28)');
    expect(await allow.textContent()).toBe('ALLOW');
    expect(await allow.evaluate((el) => getComputedStyle(el).backgroundColor)).toBe('rgb(21, 128, 61)');
    expect(await s.page.locator('table.events tbody tr.event-row').count()).toBe(100);
    await shot(s.page, 'search-truncated');

    // Load older with the cursor, to the end: every event once, newest first.
    await s.page.click('button.load-older');
    await expect.poll(() => s.page.locator('table.events tbody tr.event-row').count()).toBe(200);
    expect(await s.page.locator('p.truncation').textContent()).toBe(TRUNCATION(200));
    await s.page.click('button.load-older');
    await expect.poll(() => s.page.locator('table.events tbody tr.event-row').count()).toBe(230);
    expect(await s.page.locator('button.load-older').count()).toBe(0);
    expect(await s.page.locator('p.truncation').count()).toBe(0);
    const ids = await s.page.locator('table.events tbody tr.event-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event-id')));
    expect(ids).toEqual(Array.from({ length: 230 }, (_, i) => `p${String(i).padStart(3, '0')}`).sort((a, b) => (Math.floor(Number(a.slice(1)) / 3) - Math.floor(Number(b.slice(1)) / 3)) || (a < b ? 1 : -1)));

    // Export what is shown, as NDJSON and as CSV.
    const [ndjson] = await Promise.all([s.page.waitForEvent('download'), s.page.click('button:has-text("Export NDJSON")')]);
    expect(ndjson.suggestedFilename()).toMatch(/^auditlake-events-.*\.ndjson$/);
    const lines = (await readFile(await ndjson.path(), 'utf8')).trimEnd().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { eventId: string }).eventId)).toEqual(ids);
    const [csv] = await Promise.all([s.page.waitForEvent('download'), s.page.click('button:has-text("Export CSV")')]);
    const csvText = await readFile(await csv.path(), 'utf8');
    expect(csvText.split('\r\n')[0]).toBe('eventId,timestamp,time,ingestTs,userId,source,action,decision,resource,tables,query,details');
    expect(csvText.split('\r\n')).toHaveLength(232);
    expect(csvText).toContain(`"'=HYPERLINK(""x"")"`);

    // A row opens to its full JSON, which can be copied.
    const first = s.page.locator('table.events tbody tr.event-row').first();
    await first.locator('button[aria-expanded=false]').click();
    await s.page.click('button:has-text("Copy JSON")');
    await expect.poll(() => s.page.locator('.details-actions [role=status]').textContent()).toBe('Copied');
    expect(JSON.parse(await s.page.evaluate(() => navigator.clipboard.readText())) as unknown).toMatchObject({ eventId: ids[0], userId: 'pat' });
    clean(s);
  });

  it('shows hostile text as text, and signs out', async () => {
    await ingest([{ eventId: 'h1', source: 'spark', userId: 'hal', action: 'data:Insert', decision: 'DENY', query: HOSTILE, tables: ['hive.hr.salaries'] }]);
    const s = await session();
    await signIn(s.page, '/admin/audit/search?user=hal');
    await expect.poll(() => s.page.locator('td.query').first().textContent()).toBe(HOSTILE);
    expect(await s.page.locator('table.events img').count()).toBe(0);
    expect(await s.page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await s.page.evaluate(() => sessionStorage.getItem('auditlake.adminToken'))).toBe(TOKEN);
    await s.page.click('button.sign-out');
    await s.page.waitForSelector('form.sign-in');
    expect(await s.page.evaluate(() => sessionStorage.getItem('auditlake.adminToken'))).toBeNull();
    // A wrong token is refused with the API's message, and nothing is shown.
    await s.page.fill('#token', 'not-the-token');
    await s.page.click('form.sign-in button[type=submit]');
    await expect.poll(() => s.page.locator('form.sign-in [role=alert]').textContent()).toMatch(/^The token was refused: authentication required/);
    expect(await s.page.locator('table.events').count()).toBe(0);
    clean(s, [401]);
  });

  it('never puts the token in a URL: a native form submission (scripts bypassed) posts no token, and without JavaScript there is no form at all', async () => {
    const s = await session();
    await s.page.goto(`${node.url}/admin/audit`);
    await s.page.fill('#token', TOKEN);
    // What a browser does when the script's submit handler never ran: the form's own submission.
    const [submitted] = await Promise.all([
      s.page.waitForRequest((req) => req.isNavigationRequest() && req.url().startsWith(node.url)),
      s.page.evaluate(() => HTMLFormElement.prototype.submit.call(document.querySelector('form.sign-in'))),
    ]);
    expect(submitted.method()).toBe('POST');
    expect(submitted.url()).not.toContain(TOKEN);
    expect(submitted.url()).not.toContain('token=');
    expect(submitted.postData() ?? '').not.toContain(TOKEN);
    expect(s.urls.some((url) => url.includes(TOKEN))).toBe(false);

    const context = await browser.newContext({ javaScriptEnabled: false });
    onTestFinished(() => context.close());
    const page = await context.newPage();
    await page.goto(`${node.url}/admin/audit`);
    expect(await page.locator('form, input').count()).toBe(0);
    expect(await page.locator('noscript').count()).toBe(1);
  });

  it('Storage & Retention: saves through the settings API, and shows a 400 verbatim beside its field with nothing saved', async () => {
    const s = await session();
    await signIn(s.page);
    await s.page.waitForSelector('form.storage-panel');
    await s.page.fill('#setting-audit-retention-days', '30');
    await s.page.click('form.storage-panel button[type=submit]');
    await expect.poll(() => s.page.locator('form.storage-panel .form-actions [role=status]').textContent()).toBe('Saved');
    const settings = async () => (await (await fetch(`${node.url}/admin/audit/settings`, { headers: { authorization: `Token ${TOKEN}` } })).json()) as Record<string, unknown>;
    expect(await settings()).toMatchObject({ 'audit.retention.days': 30 });

    await s.page.selectOption('#setting-audit-tier-mode', 'iceberg');
    await s.page.fill('#setting-audit-tier-iceberg-table', 'nosuchcat.x.audit_events');
    await s.page.click('form.storage-panel button[type=submit]');
    const message = "audit tier target nosuchcat.x.audit_events is not usable: No catalog config for audit tier catalog 'nosuchcat'";
    await expect.poll(() => s.page.locator('[data-setting="audit.tier.iceberg.table"] .field-error').textContent()).toBe(message);
    expect(await s.page.locator('#setting-audit-tier-iceberg-table').getAttribute('aria-invalid')).toBe('true');
    expect(await settings()).toMatchObject({ 'audit.tier.mode': 'none', 'audit.retention.days': 30 });
    await shot(s.page, 'storage-refused');

    // Tier health from tierStatus.
    expect(await s.page.locator('.tier-health [data-field=lastError]').textContent()).toBe('none');
    expect(await s.page.locator('.tier-health [data-field=lastSuccess]').textContent()).toBe('never');
    expect(await s.page.locator('.tier-health [data-field=completeness]').textContent()).toBe('no source counts its events (sourceSeq)');
    // The cluster: this single node leads.
    expect(await s.page.locator('section.cluster tbody tr').count()).toBe(1);
    expect(await s.page.locator('section.cluster tbody td').nth(1).textContent()).toBe('leader');
    clean(s, [400]);
  });

  it('Maintenance: the registered table with its schedule, Run now and its figures; the schedule saved, or refused verbatim beside its field', async () => {
    // Its own node, tiering to the default Iceberg table on the embedded S3 endpoint.
    const dir = await tempDir();
    const lake = await startNodeProcess({
      dataDir: dir.path,
      args: ['--embedded-s3', '--embedded-s3-port', '0', ...['auditlake.audit.tier.interval.ms=100', 'auditlake.audit.tier.ingest.settle.ms=0'].flatMap((kv) => ['--set', kv])],
      env: { AUDITLAKE_ADMIN_TOKEN: TOKEN },
    });
    onTestFinished(async () => {
      await lake.kill();
      await dir.remove();
    });
    const call = async (path: string, body?: unknown) => {
      const res = await fetch(lake.url + path, { method: body === undefined ? 'GET' : 'POST', headers: { authorization: `Token ${TOKEN}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      expect(res.status).toBe(200);
      return (await res.json()) as Record<string, unknown>;
    };
    await call('/admin/audit/settings', { 'audit.tier.mode': 'iceberg' });
    // Three sweeps, so the table has small files for compaction to merge.
    for (let round = 0; round < 3; round++) {
      const before = ((await call('/admin/audit/settings')) as { tierStatus: { watermark: { seq: number } } }).tierStatus.watermark.seq;
      await call('/v1/api/audit', Array.from({ length: 20 }, (_, i) => ({ source: 'trino', userId: `m${round}`, action: 'data:Select', tables: ['hive.m.t'], ts: Date.now() - i * MIN })));
      await expect.poll(async () => ((await call('/admin/audit/settings')) as { tierStatus: { watermark: { seq: number } } }).tierStatus.watermark.seq, { timeout: 30_000 }).toBeGreaterThan(before);
    }

    const s = await session();
    await s.page.goto(lake.url + '/admin/audit/maintenance');
    await s.page.fill('#token', TOKEN);
    await s.page.click('form.sign-in button[type=submit]');
    const card = s.page.locator('section.maintenance-table[data-table="local.ops.audit_events"]');
    await card.waitFor();
    expect(await card.locator('dd code').textContent()).toBe('0 * * * *');
    expect(await card.locator('[data-field=nextRun]').textContent()).toMatch(/\d/);
    expect(await card.locator('.hint').textContent()).toBe('No run yet.');

    await card.locator('button:has-text("Run now")').click();
    await expect.poll(() => card.locator('.form-actions [role=status]').textContent(), { timeout: 60_000 }).toMatch(/^Finished in /);
    await expect.poll(() => card.locator('table.runs tbody tr').count()).toBe(1);
    const cells = await card.locator('table.runs tbody tr td').allTextContents();
    // Started, took, result, trigger (the admin principal), files rewritten, added, snapshots expired, files deleted, orphans deleted, checkpoints packed, markers packed, size.
    expect(cells[2]).toBe('OK');
    expect(cells[3]).toBe(((await call('/admin/audit/maintenance')) as { registrations: { runs: { trigger: string }[] }[] }).registrations[0]!.runs[0]!.trigger);
    expect(Number(cells[4])).toBeGreaterThan(0);
    expect(cells[9]).toBe('0');
    // Commit markers are a Parquet tier's: an Iceberg table's run has no such figure.
    expect(cells[10]).toBe('—');
    expect(cells[11]).toMatch(/^[\d.]+ (B|KiB|MiB) → [\d.]+ (B|KiB|MiB)$/);
    await shot(s.page, 'maintenance');

    // A bad schedule: the 400 verbatim beside the cron field, nothing saved.
    await s.page.fill('#setting-audit-tier-maintenance-cron', 'every hour');
    await s.page.click('form.maintenance-settings button[type=submit]');
    const refusal = s.page.locator('[data-setting="audit.tier.maintenance.cron"] .field-error');
    await expect.poll(() => refusal.textContent()).toMatch(/^audit\.tier\.maintenance\.cron .*: every hour$/);
    expect(await call('/admin/audit/settings')).toMatchObject({ 'audit.tier.maintenance.cron': '0 * * * *' });
    // A good one is saved, and the table is registered again on it.
    await s.page.fill('#setting-audit-tier-maintenance-cron', '*/5 * * * *');
    await s.page.click('form.maintenance-settings button[type=submit]');
    await expect.poll(() => s.page.locator('form.maintenance-settings .form-actions [role=status]').textContent()).toBe('Saved');
    await expect.poll(() => card.locator('dd code').textContent()).toBe('*/5 * * * *');
    expect(await call('/admin/audit/settings')).toMatchObject({ 'audit.tier.maintenance.cron': '*/5 * * * *' });
    clean(s, [400]);
  });

  it('Search: a hostile event (1,000-character user, 50 tables of 300 characters) keeps every column in place and its row bounded; the full values stay reachable', async () => {
    const now = Date.now();
    const longUser = `u${'W'.repeat(999)}`;
    const longTables = Array.from({ length: 50 }, (_, i) => `hive.lay.t${String(i).padStart(2, '0')}_${'x'.repeat(287)}`);
    expect(longTables.every((t) => t.length === 300)).toBe(true);
    await ingest([
      { eventId: 'lay-normal', source: 'trino', userId: 'lena', action: 'data:Select', decision: 'DENY', tables: ['hive.lay.orders'], query: 'SELECT * FROM hive.lay.orders', ts: now - 2 * DAY - MIN },
      { eventId: 'lay-hostile', source: 'spark', userId: longUser, action: 'data:Select', decision: 'ALLOW', resource: 'r'.repeat(4000), tables: longTables, query: `SELECT ${'y'.repeat(20_000)}`, ts: now - 2 * DAY },
    ]);
    const s = await session();
    const columns = () =>
      s.page.locator('table.events thead th').evaluateAll((ths) => ths.map((th) => ({ left: Math.round(th.getBoundingClientRect().left), width: Math.round(th.getBoundingClientRect().width) })));
    // The columns with the normal event alone...
    await signIn(s.page, '/admin/audit/search?table=hive.lay.orders&range=7d');
    await expect.poll(() => s.page.locator('table.events tbody tr.event-row').count()).toBe(1);
    const alone = await columns();
    const normalAlone = (await s.page.locator('tr.event-row[data-event-id="lay-normal"]').boundingBox())!;
    // ...and next to the hostile one: the same columns, at the same places.
    await s.page.goto(`${node.url}/admin/audit/search?table=hive.lay.&range=7d`);
    await expect.poll(() => s.page.locator('table.events tbody tr.event-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event-id')))).toEqual(['lay-hostile', 'lay-normal']);
    expect(await columns()).toEqual(alone);
    // Nothing runs off sideways: the page and the table's own box are no wider than the window.
    expect(await s.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280);
    const scroller = await s.page.locator('.table-scroll').evaluate((el) => ({ scrollWidth: el.scrollWidth, clientWidth: el.clientWidth, right: el.getBoundingClientRect().right }));
    expect(scroller.scrollWidth).toBeLessThanOrEqual(scroller.clientWidth);
    for (const th of alone) expect(th.left + th.width).toBeLessThanOrEqual(scroller.right);
    // Every cell of the hostile row stays inside its column.
    const cells = await s.page.locator('tr.event-row[data-event-id="lay-hostile"] > td').evaluateAll((tds) => tds.map((td) => ({ left: Math.round(td.getBoundingClientRect().left), width: Math.round(td.getBoundingClientRect().width) })));
    expect(cells).toEqual(alone);
    // The hostile row is a few lines tall, like its neighbour, and the older event below it is in view.
    const hostile = (await s.page.locator('tr.event-row[data-event-id="lay-hostile"]').boundingBox())!;
    const normal = (await s.page.locator('tr.event-row[data-event-id="lay-normal"]').boundingBox())!;
    expect(Math.abs(normal.height - normalAlone.height)).toBeLessThan(1);
    expect(hostile.height).toBeLessThanOrEqual(6 * normal.height);
    expect(normal.y + normal.height).toBeLessThanOrEqual(900);
    await shot(s.page, 'search-hostile-layout');
    // Bounded, not lost: three tables shown, each whole in its title, then "+47 more"; the user and query whole in theirs.
    const row = s.page.locator('tr.event-row[data-event-id="lay-hostile"]');
    expect(await row.locator('td.tables .table-name').evaluateAll((els) => els.map((el) => el.getAttribute('title')))).toEqual(longTables.slice(0, 3));
    expect(await row.locator('td.tables .more-tables').textContent()).toBe('+47 more');
    expect(await row.locator('td.user').getAttribute('title')).toBe(longUser);
    expect(await row.locator('td.query').getAttribute('title')).toBe(`SELECT ${'y'.repeat(20_000)}`);
    // "+47 more" opens the full event, which holds every value whole.
    await row.locator('td.tables .more-tables').click();
    const json = JSON.parse((await s.page.locator('tr.event-details pre.event-json').textContent())!) as { userId: string; tables: string[]; resource: string };
    expect(json.userId).toBe(longUser);
    expect(json.tables).toEqual(longTables);
    expect(json.resource).toBe('r'.repeat(4000));
    // Open, the detail stays within the table's width too.
    expect(await columns()).toEqual(alone);
    expect(await s.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280);
    await shot(s.page, 'search-hostile-layout-open');
    clean(s);
  });

  it('shows Unicode direction controls as visible marks, each value isolated, and exports and copies them unchanged', async () => {
    const RLO = '\u202E';
    const CONTROLS = ['\u202A', '\u202B', '\u202C', '\u202D', '\u202E', '\u2066', '\u2067', '\u2068', '\u2069', '\u200E', '\u200F', '\u061C'];
    const MARKS = ['202A', '202B', '202C', '202D', '202E', '2066', '2067', '2068', '2069', '200E', '200F', '061C'].map((c) => `⟨U+${c}⟩`);
    const spoofed = `hive.sales.${RLO}sredro`;
    await ingest([
      { eventId: 'bidi-1', source: 'trino', userId: 'bidi-mallory', action: 'data:Select', decision: 'ALLOW', resource: spoofed, tables: [spoofed, 'hive.sales.orders'], query: `SELECT * FROM hive.sales."${RLO}sredro"`, details: CONTROLS.join('x'), ts: Date.now() - 2 * HOUR },
      { eventId: 'bidi-2', source: `trino${RLO}`, userId: 'bidi-mallory', action: `data:Drop${'\u2067'}`, decision: 'DENY', resource: '', tables: [], query: '', ts: Date.now() - 2 * HOUR - MIN },
    ]);
    const s = await session();
    await signIn(s.page, '/admin/audit/search?user=bidi-mallory');
    const first = s.page.locator('tr.event-row[data-event-id="bidi-1"]');
    await first.waitFor();
    // hive.sales.‮sredro does not pass for hive.sales.orders: the control is a visible mark.
    expect(await first.locator('td.query').textContent()).toBe('SELECT * FROM hive.sales."⟨U+202E⟩sredro"');
    expect(await first.locator('td.tables').textContent()).toContain('hive.sales.⟨U+202E⟩sredro');
    expect(await within('table names: allTextContents()', first.locator('td.tables .table-name').allTextContents())).toEqual(['hive.sales.⟨U+202E⟩sredro', 'hive.sales.orders']);
    expect(await first.locator('td.query').getAttribute('title')).toBe('SELECT * FROM hive.sales."⟨U+202E⟩sredro"');
    const second = s.page.locator('tr.event-row[data-event-id="bidi-2"]');
    expect(await second.locator('td.action').textContent()).toBe('data:Drop⟨U+2067⟩');
    expect(await second.locator('.badge.engine').textContent()).toBe('trino⟨U+202E⟩');
    // Each value is isolated from its neighbours.
    for (const value of [first.locator('td.tables bdi.table-name').first(), first.locator('td.query bdi'), first.locator('td.user bdi'), second.locator('td.action bdi'), second.locator('.badge.engine bdi')]) {
      expect(await value.evaluate((el) => getComputedStyle(el).unicodeBidi)).toBe('isolate');
    }
    // The full event shows every control as its mark.
    await first.locator('button[aria-expanded=false]').click();
    expect(await s.page.locator('pre.event-json').textContent()).toContain(`"details": "${MARKS.join('x')}"`);
    const noControls = (where: string) =>
      within(
        `${where}: page.evaluate looking for direction controls`,
        s.page.evaluate((controls) => controls.filter((c) => document.body.innerText.includes(c) || Array.from(document.querySelectorAll('[title], [aria-label]')).some((el) => (el.getAttribute('title') ?? '').includes(c) || (el.getAttribute('aria-label') ?? '').includes(c))), CONTROLS),
      );
    expect(await noControls('Search')).toEqual([]);
    await shot(s.page, 'search-bidi');
    // Display only: the copied JSON and both exports carry the values exactly.
    await s.page.click('button:has-text("Copy JSON")');
    await expect.poll(() => s.page.locator('.details-actions [role=status]').textContent()).toBe('Copied');
    expect(JSON.parse(await within('Copy JSON: navigator.clipboard.readText()', s.page.evaluate(() => navigator.clipboard.readText()))) as unknown).toMatchObject({ eventId: 'bidi-1', tables: [spoofed, 'hive.sales.orders'], details: CONTROLS.join('x') });
    const [csv] = await Promise.all([s.page.waitForEvent('download'), s.page.click('button:has-text("Export CSV")')]);
    expect(await readFile(await within('Export CSV: download.path()', csv.path()), 'utf8')).toContain(`"${spoofed};hive.sales.orders"`);
    const [ndjson] = await Promise.all([s.page.waitForEvent('download'), s.page.click('button:has-text("Export NDJSON")')]);
    expect(await readFile(await within('Export NDJSON: download.path()', ndjson.path()), 'utf8')).toContain(JSON.stringify(CONTROLS.join('x')));

    // The Overview: the graph's label and name, the drill-down's heading and rows.
    await s.page.goto(`${node.url}/admin/audit?range=24h&focus=${encodeURIComponent(`table:${spoofed}`)}`);
    const graphNode = s.page.locator(`[data-node="table:${spoofed}"]`);
    await graphNode.waitFor();
    expect(await graphNode.locator('text').textContent()).toContain('⟨U+202E⟩');
    expect(await graphNode.getAttribute('aria-label')).toBe('table hive.sales.⟨U+202E⟩sredro: 1 events');
    await expect.poll(() => s.page.locator('#drill-title q').textContent()).toBe('hive.sales.⟨U+202E⟩sredro');
    await expect.poll(() => s.page.locator('.drill-down td.tables .table-name').first().textContent()).toBe('hive.sales.⟨U+202E⟩sredro');
    expect(await noControls('Overview')).toEqual([]);
    await shot(s.page, 'overview-bidi');

    // Maintenance: a refusal that quotes the operator's value shows its control as a mark, and the field keeps the value as typed.
    await s.page.goto(`${node.url}/admin/audit/maintenance`);
    await s.page.locator('#setting-audit-tier-maintenance-cron').waitFor();
    await s.page.fill('#setting-audit-tier-maintenance-cron', `every ${RLO}ruoh`);
    await s.page.click('form.maintenance-settings button[type=submit]');
    const refusal = s.page.locator('[data-setting="audit.tier.maintenance.cron"] .field-error');
    await expect.poll(() => refusal.textContent()).toMatch(/: every ⟨U\+202E⟩ruoh$/);
    expect(await s.page.inputValue('#setting-audit-tier-maintenance-cron')).toBe(`every ${RLO}ruoh`);
    // The field shows the value reordered, so a note under it shows the control as a mark.
    expect(await s.page.locator('[data-setting="audit.tier.maintenance.cron"] .bidi-note').textContent()).toBe('holds direction controls: every ⟨U+202E⟩ruoh');
    expect(await noControls('Maintenance')).toEqual([]);

    // A search opened with a spoofed table name: the filter field keeps it exactly, and says what it holds.
    await s.page.goto(`${node.url}/admin/audit/search?table=${encodeURIComponent(spoofed)}`);
    await s.page.locator('tr.event-row[data-event-id="bidi-1"]').waitFor();
    expect(await s.page.inputValue('input[name=table]')).toBe(spoofed);
    expect(await s.page.locator('input[name=table] + .bidi-note').textContent()).toBe('holds direction controls: hive.sales.⟨U+202E⟩sredro');
    expect(await within('.bidi-note: count()', s.page.locator('.bidi-note').count())).toBe(1);
    clean(s, [400]);
  });

  it('Maintenance: a run triggered by a principal whose name holds direction controls shows them as marks', async () => {
    const JWT_SECRET = 'ui-jwt-secret-for-tests';
    const dir = await tempDir();
    const lake = await startNodeProcess({
      dataDir: dir.path,
      args: ['--embedded-s3', '--embedded-s3-port', '0', ...[`auditlake.auth.jwt.secret=${JWT_SECRET}`].flatMap((kv) => ['--set', kv])],
      env: { AUDITLAKE_ADMIN_TOKEN: TOKEN },
    });
    onTestFinished(async () => {
      await lake.kill();
      await dir.remove();
    });
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const sub = 'ops\u202Enimda';
    const head = b64({ alg: 'HS256', typ: 'JWT' });
    const body = b64({ sub, role: 'admin', exp: Math.floor(Date.now() / 1000) + 3600 });
    const jwt = `${head}.${body}.${createHmac('sha256', JWT_SECRET).update(`${head}.${body}`).digest('base64url')}`;
    const call = async (auth: string, path: string, payload?: unknown) => {
      const res = await fetch(lake.url + path, { method: payload === undefined ? 'GET' : 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, ...(payload === undefined ? {} : { body: JSON.stringify(payload) }) });
      expect(res.status).toBe(200);
      return (await res.json()) as Record<string, unknown>;
    };
    await call(`Token ${TOKEN}`, '/admin/audit/settings', { 'audit.tier.mode': 'iceberg' });
    const run = await call(`Bearer ${jwt}`, '/admin/audit/maintenance/run', { table: 'local.ops.audit_events' });
    expect(run).toMatchObject({ trigger: sub });

    const s = await session();
    await s.page.goto(lake.url + '/admin/audit/maintenance');
    await s.page.fill('#token', TOKEN);
    await s.page.click('form.sign-in button[type=submit]');
    const card = s.page.locator('section.maintenance-table[data-table="local.ops.audit_events"]');
    await expect.poll(() => card.locator('table.runs tbody tr').count()).toBe(1);
    const trigger = card.locator('table.runs tbody tr td').nth(3);
    expect(await trigger.textContent()).toBe('ops⟨U+202E⟩nimda');
    expect(await trigger.locator('bdi').evaluate((el) => getComputedStyle(el).unicodeBidi)).toBe('isolate');
    expect(await s.page.evaluate(() => document.body.innerText.includes('\u202E'))).toBe(false);
    await shot(s.page, 'maintenance-bidi');
    clean(s);
  });

  it('is usable at 420 px and in dark mode, on every page', async () => {
    const s = await session({ width: 420, colorScheme: 'dark' });
    await signIn(s.page, '/admin/audit?range=30d');
    await s.page.waitForSelector('.counters');
    await s.page.waitForSelector('.graph svg');
    expect(await s.page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(11, 17, 32)');
    for (const path of ['/admin/audit?range=30d', '/admin/audit/search?user=pat&max=100', '/admin/audit/maintenance']) {
      await s.page.goto(node.url + path);
      await s.page.waitForSelector('main h2');
      await s.page.waitForTimeout(300);
      // Nothing sticks out sideways: wide tables scroll inside their own box.
      expect(await s.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(420);
      for (const control of await s.page.locator('main button, main select, main input').all()) {
        const box = await control.boundingBox();
        if (box) expect(box.x + box.width).toBeLessThanOrEqual(420);
      }
      await shot(s.page, `narrow-dark-${path.split('?')[0]!.split('/').pop()}`);
    }
    clean(s);
  });
});
