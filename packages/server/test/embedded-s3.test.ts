// Goal: a node's embedded S3 endpoint serves tiered history only to requests signed with the node's own key pair (kept 0600 in the data dir), public read opens object GETs and nothing else (and only under a Host the node is reached by, not to a page through DNS rebinding), no request writes outside the data dir, and its connections are capped as the API's are (its thread shares the node's file descriptors).
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { generateSecretAccessKey } from '../src/embedded-s3-credentials.js';
import { startEmbeddedS3 } from '../src/embedded-s3.js';
import { rawGet } from './raw-get.js';
import { FAST_TIERING, postSettings, waitUntilTiered } from './tier-helpers.js';
import { event, startTestNode, type TestNode } from './test-node.js';

/** The node's default connection caps (auditlake.http.connections.*), for endpoints started without a node. */
const CONNECTION_LIMITS = { max: 4096, perClientMax: 1024 };

const PARQUET = { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://auditlake/audit', 'audit.tier.connectionId': 'local' };

/** Every file under `root`, relative to it. */
async function files(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
}

/** A node with the embedded endpoint, in a data dir inside `root`, so writes beside the data dir show. */
async function embeddedNode(options: { publicRead?: boolean; props?: Record<string, string> } = {}): Promise<{ t: TestNode; root: string }> {
  const root = await mkdtemp(join(tmpdir(), 'auditlake-embedded-'));
  onTestFinished(() => rm(root, { recursive: true, force: true }));
  const t = await startTestNode({ dataDir: join(root, 'data'), props: { ...FAST_TIERING, ...options.props }, node: { embeddedS3Port: 0, embeddedS3PublicRead: options.publicRead ?? false } });
  return { t, root };
}

function s3Client(t: TestNode): S3Client {
  const embedded = t.node.embeddedS3!;
  const client = new S3Client({ region: 'us-east-1', endpoint: embedded.endpoint.url, forcePathStyle: true, credentials: embedded.credentials, maxAttempts: 1 });
  onTestFinished(() => client.destroy());
  return client;
}

async function tierSomething(t: TestNode): Promise<string[]> {
  expect((await t.ingest([event({ eventId: 'e1' }), event({ eventId: 'e2', decision: 'DENY' })])).status).toBe(200);
  expect((await postSettings(t, PARQUET)).status).toBe(200);
  await waitUntilTiered(t);
  const listed = await s3Client(t).send(new ListObjectsV2Command({ Bucket: 'auditlake', Prefix: 'audit/' }));
  const keys = (listed.Contents ?? []).map((c) => c.Key!);
  expect(keys.some((k) => k.endsWith('.parquet'))).toBe(true);
  return keys;
}

describe('the embedded S3 endpoint of a node', () => {
  it('generates its key pair into the data dir (0600) at first start and keeps it', async () => {
    const { t } = await embeddedNode();
    const credentials = t.node.embeddedS3!.credentials;
    expect(credentials.origin).toBe('generated');
    expect(credentials.accessKeyId).toMatch(/^AL[A-Z2-7]{18}$/);
    expect(credentials.secretAccessKey).toMatch(/^[A-Za-z0-9]{40}$/);
    expect((await stat(join(t.dataDir, 'embedded-s3-credentials'))).mode & 0o777).toBe(0o600);
    expect(t.node.embeddedS3!.endpoint.host).toBe('127.0.0.1');
    await t.node.close();
    const again = await startTestNode({ dataDir: t.dataDir, node: { embeddedS3Port: 0 } });
    expect(again.node.embeddedS3!.credentials).toMatchObject({ origin: 'data-dir', accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey });
  });

  it('generates secrets that a command line takes as they are: 40 letters and digits, never a leading dash', () => {
    // A base64url secret began with '-' one time in 64, and `auditlake verify
    // --secret-access-key <it>` was refused as an ambiguous option (seen in CI).
    const secrets = Array.from({ length: 5_000 }, generateSecretAccessKey);
    for (const secret of secrets) expect(secret).toMatch(/^[A-Za-z0-9]{40}$/);
    expect(new Set(secrets).size).toBe(secrets.length);
    // Every character turns up as the first: no part of the alphabet is left out.
    expect(new Set(secrets.map((secret) => secret[0])).size).toBe(62);
  });

  it('takes its key pair from the configuration instead, writing none', async () => {
    const { t } = await embeddedNode({ props: { 'auditlake.embedded.s3.access.key': 'ALCONFIGURED00000001', 'auditlake.embedded.s3.secret.key': 'configured-secret-0123456789' } });
    expect(t.node.embeddedS3!.credentials).toMatchObject({ origin: 'given', accessKeyId: 'ALCONFIGURED00000001' });
    await expect(stat(join(t.dataDir, 'embedded-s3-credentials'))).rejects.toMatchObject({ code: 'ENOENT' });
    // Connection `local` signs with them: tiering works.
    await tierSomething(t);
  });

  it('tiers through connection local, and refuses every unsigned request: no read, list, write, delete or traversal', async () => {
    const { t, root } = await embeddedNode();
    const keys = await tierSomething(t);
    const url = t.node.embeddedS3!.endpoint.url;
    const before = await files(root);
    const parquet = keys.find((k) => k.endsWith('.parquet'))!;
    const unsigned: Array<[string, string, string?]> = [
      ['GET', `/auditlake/${parquet}`],
      ['HEAD', `/auditlake/${parquet}`],
      ['GET', '/auditlake?list-type=2'],
      ['DELETE', `/auditlake/${parquet}`],
      ['PUT', `/auditlake/${parquet}`, 'forged history'],
      ['PUT', '/auditlake/..%2F..%2F..%2Fx.txt', 'outside'],
    ];
    for (const [method, path, body] of unsigned) {
      const res = await fetch(url + path, { method, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${path}`).toBe(403);
    }
    expect(await files(root)).toEqual(before);
    // History is intact: the viewer still finds both events, and the signed reader the file.
    expect((await t.search()).json.events.map((e) => e.eventId).filter((id) => id.startsWith('e')).sort()).toEqual(['e1', 'e2']);
    const res = await s3Client(t).send(new GetObjectCommand({ Bucket: 'auditlake', Key: parquet }));
    expect((await res.Body!.transformToByteArray()).byteLength).toBeGreaterThan(0);
  });

  it('refuses tier locations that would leave the bucket prefix (400 naming the problem), saving nothing and writing nothing anywhere', async () => {
    const { t, root } = await embeddedNode();
    expect((await t.ingest([event({ eventId: 'e1' })])).status).toBe(200);
    const before = await files(root);
    const settingsNow = async () => {
      const { tierStatus: _status, ...stored } = (await (await t.request('/admin/audit/settings')).json()) as Record<string, unknown>;
      return stored;
    };
    const settingsBefore = await settingsNow();
    const refused: Array<[Record<string, string>, RegExp]> = [
      [{ ...PARQUET, 'audit.tier.parquet.path': 's3://auditlake/../../../../tmp/x' }, /^audit\.tier\.parquet\.path must be s3:\/\/bucket\/prefix: .*: the key prefix has a '\.\.' segment$/],
      [{ ...PARQUET, 'audit.tier.parquet.path': 's3://auditlake/audit/../../x' }, /the key prefix has a '\.\.' segment$/],
      [{ 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'local.a/b.c' }, /^audit tier target local\.a\/b\.c is not usable: .*\(the schema name 'a\/b' may hold only letters, digits and '_', and must not start with a digit\)$/],
      [{ 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'local.ops.x/../../y' }, /^audit tier target local\.ops\.x\/\.\.\/\.\.\/y is not usable: audit tier iceberg table must be catalog\.schema\.table/],
    ];
    for (const [body, message] of refused) {
      const res = await postSettings(t, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error).toMatch(message);
    }
    // Nothing saved (mode still none, no settings event), so no sweep has a target; nothing was written.
    expect(await settingsNow()).toEqual(settingsBefore);
    expect(settingsBefore['audit.tier.mode']).toBe('none');
    expect((await t.stored()).filter((e) => e.action === 'audit:UpdateSettings')).toEqual([]);
    expect(await files(root)).toEqual(before);
  });

  it('with --embedded-s3-public-read: unsigned GET/HEAD of an object work, listing, writing and deleting still do not', async () => {
    const { t, root } = await embeddedNode({ publicRead: true });
    const keys = await tierSomething(t);
    const url = t.node.embeddedS3!.endpoint.url;
    const parquet = keys.find((k) => k.endsWith('.parquet'))!;
    const before = await files(root);
    const got = await fetch(`${url}/auditlake/${parquet}`);
    expect(got.status).toBe(200);
    expect((await got.arrayBuffer()).byteLength).toBeGreaterThan(0);
    expect((await fetch(`${url}/auditlake/${parquet}`, { method: 'HEAD' })).status).toBe(200);
    for (const [method, path] of [
      ['GET', '/auditlake?list-type=2'],
      ['DELETE', `/auditlake/${parquet}`],
      ['PUT', `/auditlake/${parquet}`],
      ['PUT', '/auditlake/..%2F..%2F..%2Fx.txt'],
    ] as const) {
      expect((await fetch(url + path, { method, ...(method === 'PUT' ? { body: 'x' } : {}) })).status, `${method} ${path}`).toBe(403);
    }
    expect(await files(root)).toEqual(before);

    // A web page reaching the endpoint through DNS rebinding sends its own name as Host: its
    // unsigned reads are refused; a name configured in auditlake.http.allowed.hosts is answered.
    const port = t.node.embeddedS3!.endpoint.port;
    const rebound = await unsignedGet(port, `/auditlake/${parquet}`, `rebind.attacker.example:${port}`);
    expect(rebound.status).toBe(403);
    expect(rebound.body).toContain('<Code>AccessDenied</Code>');
    expect(rebound.body).toContain('DNS rebinding');
    expect(rebound.body).not.toContain('PAR1');
    expect((await unsignedGet(port, `/auditlake/${parquet}`, `localhost:${port}`)).status).toBe(200);
  });

  it('answers unsigned reads under a name in auditlake.http.allowed.hosts', async () => {
    const { t } = await embeddedNode({ publicRead: true, props: { 'auditlake.http.allowed.hosts': 's3.example.internal' } });
    const parquet = (await tierSomething(t)).find((k) => k.endsWith('.parquet'))!;
    const port = t.node.embeddedS3!.endpoint.port;
    expect((await unsignedGet(port, `/auditlake/${parquet}`, `s3.example.internal:${port}`)).status).toBe(200);
    expect((await unsignedGet(port, `/auditlake/${parquet}`, `s3.example.internal.attacker.example:${port}`)).status).toBe(403);
  });
});

describe("the embedded S3 endpoint's connections", () => {
  /** An idle connection from `localAddress` to `port` (it sends nothing); `closed()` says whether the endpoint closed it within 300 ms. */
  const idleConnection = async (port: number, localAddress: string, opened: Socket[]) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    opened.push(socket);
    socket.on('error', () => undefined);
    const closed = once(socket, 'close').then(() => true);
    await once(socket, 'connect');
    return { closed: () => Promise.race([closed, new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 300))]) };
  };

  it('are capped by auditlake.http.connections.*, as the API\'s are: idle connections cannot take the file descriptors the node shares with it', async () => {
    // Before, a local process with no key held ~20,000 idle connections to :7071, and the node
    // answered nothing more (every descriptor taken) until they closed.
    const { t } = await embeddedNode({ props: { 'auditlake.http.connections.max': '8', 'auditlake.http.connections.per.client.max': '4' } });
    const port = t.node.embeddedS3!.endpoint.port;
    const opened: Socket[] = [];
    onTestFinished(() => opened.forEach((socket) => socket.destroy()));
    // Per client: a fifth idle connection from one address is closed as it arrives.
    const first = [];
    for (let i = 0; i < 5; i++) first.push(await idleConnection(port, '127.0.0.21', opened));
    expect(await first[4]!.closed()).toBe(true);
    expect(await first[0]!.closed()).toBe(false);
    // All together: past eight, a new connection takes the place of the oldest idle one.
    const second = [];
    for (let i = 0; i < 4; i++) second.push(await idleConnection(port, '127.0.0.22', opened));
    const third = await idleConnection(port, '127.0.0.23', opened);
    expect(await first[0]!.closed()).toBe(true);
    expect(await third.closed()).toBe(false);
    // The node's own signed requests still get through (tiering writes through connection local).
    expect((await tierSomething(t)).some((key) => key.endsWith('.parquet'))).toBe(true);
  });
});

describe('the embedded S3 endpoint runs on a thread of its own', () => {
  it('answers while the node\'s event loop is busy', async () => {
    const { t } = await embeddedNode();
    const url = `${t.node.embeddedS3!.endpoint.url}/auditlake/any-key`;
    // A client in another process asks every 50 ms and prints when each answer came (an
    // unsigned request is refused, 403: an answer the endpoint itself composes).
    const client = spawn(process.execPath, ['-e', `(async () => { for (let i = 0; i < 60; i++) { const res = await fetch(${JSON.stringify(url)}); await res.arrayBuffer(); console.log(res.status + ' ' + Date.now()); await new Promise((r) => setTimeout(r, 50)); } })()`]);
    onTestFinished(() => void client.kill());
    let output = '';
    client.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise((resolve) => client.once('exit', resolve));
    await expect.poll(() => output.includes('403 '), { timeout: 10_000 }).toBe(true);
    // This thread — the node's event loop — does nothing else for 1.5 s.
    const busyFrom = Date.now();
    while (Date.now() - busyFrom < 1_500);
    const busyTo = Date.now();
    await exited;
    const answeredAt = output.trim().split('\n').map((line) => {
      const [status, at] = line.split(' ');
      expect(status).toBe('403');
      return Number(at);
    });
    // Answers kept coming inside the busy time (an endpoint on this loop answers none there).
    expect(answeredAt.filter((at) => at > busyFrom + 300 && at < busyTo - 300).length).toBeGreaterThan(3);
  });

  it('is started again on the same port when its thread dies, and the node goes on tiering through it', async () => {
    const { t } = await embeddedNode();
    const before = (await tierSomething(t)).filter((key) => key.endsWith('.parquet'));
    const embedded = t.node.embeddedS3!;
    const url = embedded.endpoint.url;
    await embedded.crashThreadForTest();
    // Down now: nothing listens there.
    await expect(fetch(`${url}/auditlake/any-key`)).rejects.toThrow();
    // Ingest goes on meanwhile; the sweep fails until the endpoint is back (after 1 s), then tiers.
    expect((await t.ingest([event({ eventId: 'e3' })])).status).toBe(200);
    await waitUntilTiered(t);
    expect(embedded.endpoint.url).toBe(url);
    const listed = await s3Client(t).send(new ListObjectsV2Command({ Bucket: 'auditlake', Prefix: 'audit/' }));
    const after = (listed.Contents ?? []).map((c) => c.Key!).filter((key) => key.endsWith('.parquet'));
    expect(after.length).toBeGreaterThan(before.length);
  });

  it('closes: the port is free afterwards and close() can be called again', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'auditlake-embedded-'));
    onTestFinished(() => rm(dataDir, { recursive: true, force: true }));
    const errors: unknown[] = [];
    const embedded = await startEmbeddedS3({ dataDir, host: '127.0.0.1', port: 0, publicRead: false, connectionLimits: CONNECTION_LIMITS, onInternalError: (err) => errors.push(err), onThreadProblem: (err) => errors.push(err) });
    const { port } = embedded.endpoint;
    expect((await fetch(`${embedded.endpoint.url}/auditlake/x`)).status).toBe(403);
    await embedded.close();
    await embedded.close();
    await expect(fetch(`${embedded.endpoint.url}/auditlake/x`)).rejects.toThrow();
    // The port is free: this process can listen on it again.
    const again = await startEmbeddedS3({ dataDir, host: '127.0.0.1', port, publicRead: false, connectionLimits: CONNECTION_LIMITS, onInternalError: (err) => errors.push(err), onThreadProblem: (err) => errors.push(err) });
    onTestFinished(() => again.close());
    expect(again.endpoint.port).toBe(port);
    expect((await fetch(`${again.endpoint.url}/auditlake/x`)).status).toBe(403);
    // Closing is not a failure of the endpoint.
    expect(errors).toEqual([]);
  });

  it('says so when another process took its port while its thread was down, and comes back once the port is free', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'auditlake-embedded-'));
    onTestFinished(() => rm(dataDir, { recursive: true, force: true }));
    const problems: Error[] = [];
    const embedded = await startEmbeddedS3({ dataDir, host: '127.0.0.1', port: 0, publicRead: false, connectionLimits: CONNECTION_LIMITS, onInternalError: (err) => problems.push(err as Error), onThreadProblem: (err) => problems.push(err) });
    onTestFinished(() => embedded.close());
    const { port, url } = embedded.endpoint;
    // Just started, so not yet a healthy run: the restart waits (1 s), and another process binds the port meanwhile.
    await embedded.crashThreadForTest();
    const squatter: Server = createServer();
    await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
    await expect.poll(() => problems.length, { timeout: 10_000 }).toBe(2);
    expect(problems[0]!.message).toBe(`the thread stopped (exit code 1); starting it again on port ${port} in 1000 ms`);
    expect(problems[1]!.message).toMatch(
      new RegExp(`^starting the thread again on port ${port} failed: listen EADDRINUSE: address already in use 127\\.0\\.0\\.1:${port}; trying again in 2000 ms; until it is back, requests to connection local may be answered by the process that holds the port$`),
    );
    expect(problems[1]!.cause).toMatchObject({ code: 'EADDRINUSE' });
    await new Promise<void>((resolve) => squatter.close(() => resolve()));
    await expect.poll(async () => (await fetch(`${url}/auditlake/x`).catch(() => undefined))?.status, { timeout: 10_000, interval: 200 }).toBe(403);
  });

  it('stops a thread that does not listen within its start timeout: the start fails with that reason and nothing listens on the port later', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'auditlake-embedded-'));
    onTestFinished(() => rm(dataDir, { recursive: true, force: true }));
    // A port free now, to see whether the stopped thread listens there after all.
    const probe: Server = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const errors: unknown[] = [];
    // No thread listens within 1 ms (starting one takes tens of ms).
    await expect(startEmbeddedS3({ dataDir, host: '127.0.0.1', port, publicRead: false, connectionLimits: CONNECTION_LIMITS, threadStartTimeoutMs: 1, onInternalError: (err) => errors.push(err), onThreadProblem: (err) => errors.push(err) })).rejects.toThrow(
      'the thread did not listen within 1 ms; it was stopped',
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    const taker: Server = createServer();
    await new Promise<void>((resolve, reject) => taker.once('error', reject).listen(port, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => taker.close(() => resolve()));
    expect(errors).toEqual([]);
  });

  it('fails to start with the listen error as it was (a taken port names its code, address and port), reporting no endpoint failure', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'auditlake-embedded-'));
    onTestFinished(() => rm(dataDir, { recursive: true, force: true }));
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    const port = (holder.address() as { port: number }).port;
    const errors: unknown[] = [];
    await expect(startEmbeddedS3({ dataDir, host: '127.0.0.1', port, publicRead: false, connectionLimits: CONNECTION_LIMITS, onInternalError: (err) => errors.push(err), onThreadProblem: (err) => errors.push(err) })).rejects.toMatchObject({ code: 'EADDRINUSE', address: '127.0.0.1', port, syscall: 'listen' });
    await expect(startEmbeddedS3({ dataDir, host: '127.0.0.1', port: 0, publicRead: false, connectionLimits: CONNECTION_LIMITS, credentials: { accessKeyId: '', secretAccessKey: 'x' }, onInternalError: (err) => errors.push(err), onThreadProblem: (err) => errors.push(err) })).rejects.toThrow(new TypeError('the endpoint needs a non-empty access key id and secret key'));
    expect(errors).toEqual([]);
  });
});

/** An unsigned GET to 127.0.0.1:port carrying the given Host header. */
async function unsignedGet(port: number, path: string, host: string): Promise<{ status: number; body: string }> {
  const { status, body } = await rawGet(port, path, { host });
  return { status, body: body.toString('latin1') };
}
