import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chown, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from '@auditlake/testkit';
import pg from 'pg';
import { processCpuSeconds } from './cpu-monitor.js';
import { scratchDir, type ScratchDir } from './scratch-dir.js';

/** Where the Debian package puts PostgreSQL 15's server binaries; BENCH_PG_BIN overrides it. */
export const DEFAULT_POSTGRES_BIN = '/usr/lib/postgresql/15/bin';

const START_TIMEOUT_MS = 60_000;

/** A throwaway PostgreSQL server: its own cluster in a temp dir, on a free loopback port. */
export interface PostgresServer extends AsyncDisposable {
  port: number;
  version: string;
  /** A client pool of `size` connections to the bench database. */
  pool(size: number): pg.Pool;
  /** CPU seconds used so far by the postmaster and every process it started. */
  cpuSeconds(): number;
  close(): Promise<void>;
}

/** The binaries directory when PostgreSQL is installed there, else undefined (the bench says so). */
export function findPostgres(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const bin = env['BENCH_PG_BIN'] || DEFAULT_POSTGRES_BIN;
  return existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'postgres')) ? bin : undefined;
}

/** PostgreSQL refuses to run as root: as root, its files and processes belong to this user. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const fields = line?.split(':');
  if (fields === undefined) throw new Error('running as root, and there is no postgres user to run PostgreSQL as');
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

async function run(command: string, args: string[], user: { uid: number; gid: number } | undefined): Promise<string> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(user ?? {}) });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${code}:\n${output}`);
  return output;
}

/** The postmaster and its children (backends, WAL writer, checkpointer …), by /proc parent ids. */
function serverPids(postmasterPid: number): number[] {
  const pids = [postmasterPid];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === postmasterPid) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/**
 * Starts PostgreSQL from `bin`: initdb into a scratch dir, then the server with durability as a
 * careful operator sets it (`fsync=on`, `synchronous_commit=on`, full page writes), listening on
 * 127.0.0.1 only, its socket in the scratch dir. Otherwise the package's defaults.
 */
export async function startPostgres(bin: string): Promise<PostgresServer> {
  const dir: ScratchDir = await scratchDir('postgres');
  const user = serverUser();
  const dataDir = join(dir.path, 'data');
  const socketDir = join(dir.path, 'socket');
  await mkdir(socketDir);
  if (user) {
    await chown(dir.path, user.uid, user.gid);
    await chown(socketDir, user.uid, user.gid);
  }
  await run(join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync'], user);
  const version = (await run(join(bin, 'postgres'), ['--version'], user)).trim();
  const port = await freePort();
  const settings = ['fsync=on', 'synchronous_commit=on', 'full_page_writes=on', 'listen_addresses=127.0.0.1', `port=${port}`, `unix_socket_directories=${socketDir}`];
  const child: ChildProcess = spawn(join(bin, 'postgres'), ['-D', dataDir, ...settings.flatMap((s) => ['-c', s])], { stdio: ['ignore', 'pipe', 'pipe'], ...(user ?? {}) });
  let output = '';
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  const exited = once(child, 'exit');
  const connection = { host: '127.0.0.1', port, user: 'postgres', database: 'postgres' };
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`postgres exited with ${child.exitCode} while starting:\n${output}`);
    const probe = new pg.Client(connection);
    try {
      await probe.connect();
      await probe.end();
      break;
    } catch (err) {
      await probe.end().catch(() => undefined);
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`postgres did not accept connections within ${START_TIMEOUT_MS} ms: ${String(err)}\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const pools: pg.Pool[] = [];
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
      // SIGINT: fast shutdown (abort sessions, checkpoint, exit).
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      await exited;
      await dir[Symbol.asyncDispose]();
    })());
  const pid = child.pid as number;
  return {
    port,
    version,
    pool: (size) => {
      const pool = new pg.Pool({ ...connection, max: size });
      // An idle client whose backend ends (the server's shutdown in close(), which can come
      // before the pool has let go of every socket) is reported as the pool's 'error' event,
      // which unhandled ends the process: a run crashed so after its last search. A query on a
      // dead server still fails on its own.
      pool.on('error', () => undefined);
      pools.push(pool);
      return pool;
    },
    cpuSeconds: () => serverPids(pid).reduce((sum, p) => sum + (processCpuSeconds(p) ?? 0), 0),
    close,
    [Symbol.asyncDispose]: close,
  };
}
