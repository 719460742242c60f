import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'node:net';
import { freePort } from './free-port.js';

/** A real `redis-server` on 127.0.0.1 that a test can stop and start again on the same port. */
export interface RedisServer extends AsyncDisposable {
  url: string;
  port: number;
  /** Starts it (again); resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it (SIGKILL: an outage, not a graceful shutdown). */
  stop(): Promise<void>;
  /** Deletes what it persisted (only with `persistent`; stop it first): the next start is empty. */
  wipe(): Promise<void>;
  running(): boolean;
}

export interface RedisOptions {
  /**
   * Keep data across a kill -9 (append-only file, fsync on every write) in a temp dir that
   * stop() leaves and dispose removes. Default: no persistence, every start is empty.
   */
  persistent?: boolean;
  /** `requirepass`: clients must AUTH with it; `url` then carries it (redis://:PASSWORD@…). */
  password?: string;
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.end();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Starts `redis-server` from PATH (Debian: apt-get install redis-server) as a throwaway
 * coordinator for one test: without persistence, or (`persistent`) with an append-only file.
 */
export async function startRedis(options: RedisOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = options.persistent ? await mkdtemp(join(tmpdir(), 'auditlake-redis-')) : undefined;
  const persistence = dir === undefined ? ['--save', '', '--appendonly', 'no'] : ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir];
  let child: ChildProcess | undefined;
  const start = async () => {
    if (child && child.exitCode === null && child.signalCode === null) return;
    const auth = options.password === undefined ? [] : ['--requirepass', options.password];
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', ...persistence, ...auth], { stdio: 'ignore' });
    proc.on('error', () => undefined);
    child = proc;
    await Promise.race([
      waitForPort(port, 10_000),
      once(proc, 'error').then(([err]) => {
        throw new Error(`could not start redis-server (is it installed? apt-get install redis-server): ${String(err)}`);
      }),
    ]);
  };
  const stop = async () => {
    const proc = child;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = once(proc, 'exit');
    proc.kill('SIGKILL');
    await exited;
  };
  const wipe = async () => {
    if (dir === undefined) return;
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
  };
  await start();
  return {
    url: options.password === undefined ? `redis://127.0.0.1:${port}` : `redis://:${encodeURIComponent(options.password)}@127.0.0.1:${port}`,
    port,
    start,
    stop,
    wipe,
    running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
    [Symbol.asyncDispose]: async () => {
      await stop();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    },
  };
}
