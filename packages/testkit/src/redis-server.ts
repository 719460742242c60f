import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
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
  running(): boolean;
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
 * Starts `redis-server` from PATH (Debian: apt-get install redis-server) with no persistence,
 * as a throwaway coordinator for one test.
 */
export async function startRedis(): Promise<RedisServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    if (child && child.exitCode === null && child.signalCode === null) return;
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
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
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    stop,
    running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
    [Symbol.asyncDispose]: stop,
  };
}
