import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { freePort } from './free-port.js';

const require = createRequire(import.meta.url);

/** Path of the built `auditlake` bin (packages/cli/dist/bin.js). */
export function auditlakeBin(): string {
  return join(dirname(require.resolve('@auditlake/cli/package.json')), 'dist', 'bin.js');
}

export interface NodeProcessOptions {
  dataDir: string;
  port?: number;
  /** Extra arguments after `start`, e.g. ['--set', 'auditlake.audit.retention.interval.ms=100']. */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  /** Options for node itself, before the script, e.g. ['--cpu-prof'] (not all are allowed in NODE_OPTIONS). */
  nodeArgs?: string[];
  /** How long to wait for `/health`; default 30 s. */
  startTimeoutMs?: number;
}

/** A real `auditlake start` child process. */
export interface NodeProcess extends AsyncDisposable {
  url: string;
  port: number;
  child: ChildProcess;
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  /** SIGTERM and wait; resolves with the exit code (null when killed by a signal). */
  stop(): Promise<number | null>;
  /** SIGKILL and wait: a crash. */
  kill(): Promise<void>;
  /** SIGSTOP: the process freezes (a long GC pause, a stalled VM). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
}

async function waitForHealth(url: string, child: ChildProcess, timeoutMs: number, output: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`auditlake exited with ${child.exitCode} before it was healthy:\n${output()}`);
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`auditlake at ${url} was not healthy within ${timeoutMs} ms:\n${output()}`);
}

/**
 * The environment README.md recommends for a node (and infra/Dockerfile sets): glibc keeps
 * 128 MiB of freed heap instead of handing it back at once. LevelDB batches and V8 buffers of
 * a megabyte or more are allocated and freed all the time; returned memory is page-faulted in
 * again on the next allocation, which on a VM is dear. On three nodes this cut CPU per event
 * by about a tenth. Nodes started here run as deployed; a caller's env still wins.
 */
export const RECOMMENDED_NODE_ENV: Readonly<Record<string, string>> = { MALLOC_TOP_PAD_: String(128 * 1024 * 1024) };

/** Starts `auditlake start` on 127.0.0.1 and waits until `/health` answers. */
export async function startNodeProcess(options: NodeProcessOptions): Promise<NodeProcess> {
  const port = options.port ?? (await freePort());
  const args = [auditlakeBin(), 'start', '--data-dir', options.dataDir, '--host', '127.0.0.1', '--port', String(port), ...(options.args ?? [])];
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...args], { env: { ...RECOMMENDED_NODE_ENV, ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const output = () => text;
  const url = `http://127.0.0.1:${port}`;
  const exited = once(child, 'exit').then(() => child.exitCode);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return exited;
  };
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  try {
    // Generous: a start is slow when the machine is loaded (CI runs beside other work), and
    // this is liveness only — what a test asserts about the node is checked after.
    await waitForHealth(url, child, options.startTimeoutMs ?? 30_000, output);
  } catch (err) {
    await kill();
    throw err;
  }
  const pause = () => {
    child.kill('SIGSTOP');
  };
  const resume = () => {
    child.kill('SIGCONT');
  };
  return { url, port, child, output, stop, kill, pause, resume, [Symbol.asyncDispose]: kill };
}
