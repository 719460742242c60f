// Goal: a real `auditlake start` process starts, prints how to reach it (never the coordinator's password), survives kill -9 with every acknowledged event, stops (exit 1) when its store fails a write with every acknowledged event kept, starts on the empty files a crash can leave at first start, and stops cleanly.
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { auditlakeBin, freePort, startNodeProcess, startRedis, tempDir } from '@auditlake/testkit';
import { describe, expect, it, onTestFinished } from 'vitest';

async function dataDir(): Promise<string> {
  const dir = await tempDir();
  onTestFinished(() => dir.remove());
  return dir.path;
}

async function start(options: Parameters<typeof startNodeProcess>[0]) {
  const node = await startNodeProcess(options);
  onTestFinished(() => node.kill());
  return node;
}

function post(url: string, token: string, body: unknown) {
  return fetch(`${url}/v1/api/audit`, { method: 'POST', headers: { authorization: `Token ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function allEvents(url: string, token: string): Promise<Array<{ eventId: string }>> {
  const res = await fetch(`${url}/admin/audit?limit=5000`, { headers: { authorization: `Token ${token}`, accept: 'application/x-ndjson' } });
  expect(res.status).toBe(200);
  const text = await res.text();
  return text.trimEnd() === '' ? [] : text.trimEnd().split('\n').map((l) => JSON.parse(l) as { eventId: string });
}

async function runToExit(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [auditlakeBin(), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, output };
}

describe('auditlake start (real process)', () => {
  it('generates an admin token on first start, prints it once with the admin URL, and keeps it', async () => {
    const dir = await dataDir();
    const first = await start({ dataDir: dir });
    await expect.poll(() => first.output()).toMatch(/admin token \(generated now/);
    const token = /shown only this once\): (\S+)/.exec(first.output())?.[1];
    expect(token).toBeDefined();
    expect(first.output()).toContain(`admin UI: ${first.url}/admin/audit`);
    expect((await readFile(join(dir, 'admin-token'), 'utf8')).trim()).toBe(token);
    expect((await fetch(`${first.url}/admin/audit`, { headers: { authorization: `Token ${token!}` } })).status).toBe(200);
    expect(await first.stop()).toBe(0);

    const second = await start({ dataDir: dir });
    await expect.poll(() => second.output()).toMatch(/admin token: kept in/);
    expect(second.output()).not.toContain(token!);
    expect((await fetch(`${second.url}/admin/audit`, { headers: { authorization: `Token ${token!}` } })).status).toBe(200);
  });

  it('with --embedded-s3: generates the endpoint key pair (0600), prints it once, refuses unsigned requests; env overrides it', async () => {
    const dir = await dataDir();
    const env = { AUDITLAKE_ADMIN_TOKEN: 'adm' };
    const first = await start({ dataDir: dir, env, args: ['--embedded-s3', '--embedded-s3-port', '0'] });
    await expect.poll(() => first.output()).toMatch(/embedded S3 credentials \(generated now/);
    const [, accessKey, secretKey] = /shown only this once\): access key (\S+) secret key (\S+)/.exec(first.output()) ?? [];
    const file = await readFile(join(dir, 'embedded-s3-credentials'), 'utf8');
    expect(file).toBe(`AUDITLAKE_EMBEDDED_S3_ACCESS_KEY=${accessKey!}\nAUDITLAKE_EMBEDDED_S3_SECRET_KEY=${secretKey!}\n`);
    expect((await stat(join(dir, 'embedded-s3-credentials'))).mode & 0o777).toBe(0o600);
    const endpoint = /embedded S3 endpoint: (http:\/\/127\.0\.0\.1:\d+) /.exec(first.output())?.[1];
    expect(endpoint).toBeDefined();
    expect((await fetch(`${endpoint!}/auditlake?list-type=2`)).status).toBe(403);
    expect(await first.stop()).toBe(0);

    const second = await start({ dataDir: dir, env, args: ['--embedded-s3', '--embedded-s3-port', '0'] });
    await expect.poll(() => second.output()).toMatch(/embedded S3 credentials: kept in/);
    expect(second.output()).not.toContain(secretKey!);
    expect(await second.stop()).toBe(0);

    const given = await start({ dataDir: dir, env: { ...env, AUDITLAKE_EMBEDDED_S3_ACCESS_KEY: 'ALFROMENV00000000001', AUDITLAKE_EMBEDDED_S3_SECRET_KEY: 'from-env-secret' }, args: ['--embedded-s3', '--embedded-s3-port', '0', '--embedded-s3-public-read'] });
    await expect.poll(() => given.output()).toMatch(/embedded S3 credentials: access key ALFROMENV00000000001 \(given by/);
    expect(given.output()).not.toContain('from-env-secret');
    expect(given.output()).toContain('unsigned GET/HEAD of objects too');
  });

  it('never logs a credential: not a bare token sent as Authorization, not ?token= or ?access_token= in a URL (debug request lines)', async () => {
    const dir = await dataDir();
    const node = await start({ dataDir: dir, env: { AUDITLAKE_ADMIN_TOKEN: 'adm-secret-0001' }, args: ['--log-level', 'debug'] });
    expect((await fetch(`${node.url}/admin/audit?token=url-secret-0002&limit=1`)).status).toBe(401);
    expect((await fetch(`${node.url}/admin/audit?access_token=adm-secret-0001`)).status).toBe(401);
    const bare = await fetch(`${node.url}/admin/audit`, { headers: { authorization: 'bare-secret-0003' } });
    expect(bare.status).toBe(401);
    expect(await bare.text()).not.toContain('bare-secret-0003');
    await expect.poll(() => node.output()).toContain('access_token=[REDACTED]');
    expect(await node.stop()).toBe(0);
    for (const secret of ['adm-secret-0001', 'url-secret-0002', 'bare-secret-0003']) expect(node.output()).not.toContain(secret);
    expect(node.output()).toContain('/admin/audit?token=[REDACTED]&limit=1');
  });

  it('joins a coordinator that requires a password, given in AUDITLAKE_COORDINATOR: neither its command line nor its output holds the password', async () => {
    await using redis = await startRedis({ password: 'c00rd-s3cret' });
    const node = await start({ dataDir: await dataDir(), env: { AUDITLAKE_COORDINATOR: redis.url } });
    // It leads the cluster of one, so it reached the coordinator with the password.
    await expect.poll(async () => ((await (await fetch(`${node.url}/health`)).json()) as { role: string }).role, { timeout: 15_000 }).toBe('leader');
    expect(node.output()).toContain(`cluster via redis://:***@127.0.0.1:${redis.port}`);
    expect(node.output()).not.toContain('c00rd-s3cret');
    expect(await readFile(`/proc/${node.child.pid}/cmdline`, 'utf8')).not.toContain('c00rd-s3cret');
  });

  it('exits 0 on SIGTERM within 10 s, and the data is there after a restart', async () => {
    const dir = await dataDir();
    const env = { AUDITLAKE_ADMIN_TOKEN: 'adm', AUDITLAKE_INGEST_TOKEN: 'ing' };
    const node = await start({ dataDir: dir, env });
    expect((await post(node.url, 'ing', [{ source: 'trino', userId: 'a', action: 'data:Select', eventId: 'before-stop' }])).status).toBe(200);
    const stoppedAt = Date.now();
    expect(await node.stop()).toBe(0);
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    const again = await start({ dataDir: dir, env });
    expect((await allEvents(again.url, 'adm')).map((e) => e.eventId)).toEqual(['before-stop']);
  });

  it('keeps every acknowledged event through kill -9 (acknowledged means durable)', async () => {
    const dir = await dataDir();
    const env = { AUDITLAKE_ADMIN_TOKEN: 'adm', AUDITLAKE_INGEST_TOKEN: 'ing' };
    const node = await start({ dataDir: dir, env });
    const acked = new Set<string>();
    let stop = false;
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const batch = Array.from({ length: 25 }, (_, j) => ({ source: 'trino', userId: `u${w}`, action: 'data:Insert', eventId: `w${w}-${i}-${j}` }));
        try {
          const res = await post(node.url, 'ing', batch);
          if (res.status === 200) for (const e of batch) acked.add(e.eventId);
        } catch {
          return; // the process is gone
        }
      }
    });
    await expect.poll(() => acked.size, { timeout: 10_000 }).toBeGreaterThan(500);
    await node.kill(); // SIGKILL while requests are in flight
    stop = true;
    await Promise.all(writers);
    const restarted = await start({ dataDir: dir, env });
    const ids = (await allEvents(restarted.url, 'adm')).map((e) => e.eventId);
    expect(new Set(ids).size).toBe(ids.length);
    const missing = [...acked].filter((id) => !ids.includes(id));
    expect(missing).toEqual([]);
  });

  it('stops (exit 1, saying why) when its store fails a write, and keeps every acknowledged event through the restart', async () => {
    const dir = await dataDir();
    const env = { AUDITLAKE_ADMIN_TOKEN: 'adm', AUDITLAKE_INGEST_TOKEN: 'ing' };
    const node = await start({ dataDir: dir, env });
    // From now on no file of the process may pass 2 MB: the store's log soon reaches it, as on a full disk.
    execFileSync('prlimit', ['--pid', String(node.child.pid), '--fsize=2000000:unlimited']);
    const acked = new Set<string>();
    const statuses = new Set<number>();
    const writers = Array.from({ length: 2 }, async (_, w) => {
      for (let i = 0; ; i++) {
        const batch = Array.from({ length: 25 }, (_, j) => ({ source: 'trino', userId: `u${w}`, action: 'data:Insert', query: 'q'.repeat(1000), eventId: `w${w}-${i}-${j}` }));
        try {
          const res = await post(node.url, 'ing', batch);
          statuses.add(res.status);
          if (res.status === 200) for (const e of batch) acked.add(e.eventId);
        } catch {
          return; // the process is gone
        }
      }
    });
    await Promise.all(writers);
    expect(await node.stop()).toBe(1);
    expect(node.output()).toMatch(/auditlake: the local store failed a write; stopping \(restart the node once the disk is fixed\): IO error: .*File too large/);
    expect(node.output()).not.toContain('shutdown took longer');
    expect(statuses).toContain(503);
    expect(acked.size).toBeGreaterThan(0);
    const restarted = await start({ dataDir: dir, env });
    const ids = (await allEvents(restarted.url, 'adm')).map((e) => e.eventId);
    expect([...acked].filter((id) => !ids.includes(id))).toEqual([]);
  });

  it('stops on SIGTERM at once (exit 0) while clients post back to back, keeping every acknowledged event', async () => {
    const dir = await dataDir();
    const env = { AUDITLAKE_ADMIN_TOKEN: 'adm', AUDITLAKE_INGEST_TOKEN: 'ing' };
    const node = await start({ dataDir: dir, env });
    const acked = new Set<string>();
    const writers = Array.from({ length: 2 }, async (_, w) => {
      for (let i = 0; ; i++) {
        const batch = Array.from({ length: 25 }, (_, j) => ({ source: 'trino', userId: `u${w}`, action: 'data:Insert', eventId: `t${w}-${i}-${j}` }));
        try {
          const res = await post(node.url, 'ing', batch);
          if (res.status === 200) for (const e of batch) acked.add(e.eventId);
        } catch {
          return; // the node closed the connection
        }
      }
    });
    await expect.poll(() => acked.size, { timeout: 10_000 }).toBeGreaterThan(500);
    // Keep-alive connections busy to the end once held the close until the 10 s limit (exit 1).
    expect(await node.stop()).toBe(0);
    await Promise.all(writers);
    expect(node.output()).not.toContain('shutdown took longer');
    const restarted = await start({ dataDir: dir, env });
    const ids = (await allEvents(restarted.url, 'adm')).map((e) => e.eventId);
    expect([...acked].filter((id) => !ids.includes(id))).toEqual([]);
  });

  it('starts on a data dir whose first-start files are empty (a crash before an unsynced write reached the disk), making them anew', async () => {
    const dir = await dataDir();
    const files = ['node-id', 'admin-token', 'integrity-key.pem', 'embedded-s3-credentials'];
    for (const file of files) await writeFile(join(dir, file), '');
    const node = await start({ dataDir: dir, args: ['--embedded-s3', '--embedded-s3-port', '0'] });
    await expect.poll(() => node.output()).toMatch(/admin token \(generated now/);
    for (const file of files) expect((await readFile(join(dir, file), 'utf8')).length, file).toBeGreaterThan(0);
    expect((await stat(join(dir, 'admin-token'))).mode & 0o777).toBe(0o600);
    expect(await node.stop()).toBe(0);
  });

  it('a data dir another node holds: exits 1 naming why LevelDB could not open it (the lock), not only that it failed', async () => {
    const dir = await dataDir();
    await start({ dataDir: dir, env: { AUDITLAKE_ADMIN_TOKEN: 'adm' } });
    const second = await runToExit(['start', '--data-dir', dir, '--host', '127.0.0.1', '--port', String(await freePort())], { AUDITLAKE_ADMIN_TOKEN: 'adm' });
    expect(second.code).toBe(1);
    expect(second.output).toMatch(/^auditlake: Database failed to open: .*LOCK.*/m);
  });

  it('reads a properties file with --set overriding it, and env tokens', async () => {
    const dir = await dataDir();
    const config = join(dir, 'auditlake.properties');
    await writeFile(config, '# test config\nauditlake.audit.viewer.max.page = 2\nauditlake.auth.tokens=ops:admin:ops-token\n');
    const node = await start({ dataDir: join(dir, 'node'), args: ['--config', config, '--set', 'auditlake.audit.viewer.max.page=3'], env: { AUDITLAKE_INGEST_TOKEN: 'ing' } });
    await post(node.url, 'ing', Array.from({ length: 5 }, () => ({ source: 'spark', userId: 'b', action: 'data:Write' })));
    const res = await fetch(`${node.url}/admin/audit?limit=3`, { headers: { authorization: 'Token ops-token' } });
    expect(await res.json()).toMatchObject({ count: 3, truncated: true });
    // The cap is the --set value (3), not the file's (2): above it is refused, naming it.
    const over = await fetch(`${node.url}/admin/audit?limit=4`, { headers: { authorization: 'Token ops-token' } });
    expect(over.status).toBe(400);
    expect(((await over.json()) as { error: string }).error).toMatch(/^parameter limit must be at most 3 /);
    // An admin token was configured, so none was generated.
    expect(node.output()).not.toMatch(/admin token/);
  });

  it('refuses bad configuration with exit code 2 and a message naming the problem', async () => {
    const dir = await dataDir();
    const cases: Array<[string[], RegExp]> = [
      [['--set', 'auditlake.audit.tier.batch.size=zero'], /auditlake\.audit\.tier\.batch\.size must be a positive integer: zero/],
      [['--set', 'auditlake.audit.unknown.key=1'], /unknown configuration key: auditlake\.audit\.unknown\.key/],
      [['--port', 'http'], /--port must be a port number from 0 to 65535: http/],
      [['--config', join(dir, 'missing.properties')], /--config .*missing\.properties: ENOENT/],
      [['--bogus'], /Unknown option '--bogus'/],
    ];
    for (const [args, message] of cases) {
      const { code, output } = await runToExit(['start', '--data-dir', dir, ...args]);
      expect(code).toBe(2);
      expect(output).toMatch(message);
    }
  });

  it('npx auditlake runs the committed bin, which runs the built CLI: --version and --help describing every flag', async () => {
    const root = join(import.meta.dirname, '..');
    const version = (JSON.parse(await readFile(join(root, 'packages/cli/package.json'), 'utf8')) as { version: string }).version;
    // npm linked the bin at install time because its target is a committed file, not a build output.
    const linked = spawn('npx', ['--no-install', 'auditlake', '--version'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    linked.stdout.on('data', (c: Buffer) => (out += c.toString()));
    linked.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const [code] = (await once(linked, 'exit')) as [number | null];
    expect(out).toBe(`auditlake ${version}\n`);
    expect(code).toBe(0);
    const help = await runToExit(['start', '--help']);
    expect(help.code).toBe(0);
    for (const flag of ['--data-dir', '--host', '--port', '--config', '--set', '--node-id', '--advertise', '--coordinator', '--embedded-s3', '--embedded-s3-port', '--log-level']) {
      // Each flag on a line of its own with a description after it.
      expect(help.output).toMatch(new RegExp(`^  ${flag}( [A-Z=a-z]+)? +\\S.+$`, 'm'));
    }
    expect((await runToExit(['--help'])).output).toContain('--version');
  });

  it('a taken port is one line naming it and the option, not a stack trace', async () => {
    const port = await freePort();
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    const dir = await dataDir();
    const http = await runToExit(['start', '--data-dir', dir, '--port', String(port)]);
    expect(http.code).toBe(2);
    expect(http.output).toBe(`auditlake: cannot listen on 127.0.0.1:${port}: the port is already in use by another process; stop it or choose another port with --port\n`);
    const s3 = await runToExit(['start', '--data-dir', dir, '--port', '0', '--embedded-s3', '--embedded-s3-port', String(port)]);
    expect(s3.code).toBe(2);
    expect(s3.output).toBe(`auditlake: cannot listen on 127.0.0.1:${port}: the port is already in use by another process; stop it or choose another port with --embedded-s3-port\n`);
  });

  it('with the embedded S3 endpoint, the default Iceberg table is local.ops.audit_events, and tiering to it works as it is', async () => {
    const dir = await dataDir();
    const node = await start({ dataDir: dir, args: ['--embedded-s3', '--embedded-s3-port', '0', '--set', 'auditlake.audit.tier.interval.ms=100', '--set', 'auditlake.audit.tier.ingest.settle.ms=0'], env: { AUDITLAKE_ADMIN_TOKEN: 'adm' } });
    const settings = async () => (await (await fetch(`${node.url}/admin/audit/settings`, { headers: { authorization: 'Token adm' } })).json()) as Record<string, unknown> & { tierStatus: { lastSuccessMs: number; backlog: number } };
    expect(await settings()).toMatchObject({ 'audit.tier.iceberg.table': 'local.ops.audit_events' });
    expect((await post(node.url, 'adm', [{ source: 'trino', userId: 'a', action: 'data:Select' }])).status).toBe(200);
    const switched = await fetch(`${node.url}/admin/audit/settings`, { method: 'POST', headers: { authorization: 'Token adm', 'content-type': 'application/json' }, body: JSON.stringify({ 'audit.tier.mode': 'iceberg' }) });
    expect(switched.status).toBe(200);
    await expect.poll(async () => (await settings()).tierStatus.backlog, { timeout: 30_000 }).toBe(0);
    // One log line per successful sweep, and one per settings change.
    await expect.poll(() => node.output()).toMatch(/Audit tiering sweep: \d+ events? in \d+ files? to local\.ops\.audit_events \(\d+ ms\)/);
    expect(node.output()).toMatch(/Settings changed: audit\.tier\.mode: none → iceberg/);
    // Requests are logged at debug only: nothing per request at the default level.
    expect(node.output()).not.toMatch(/incoming request|request completed/);
  });
});
