import { rmSync } from 'node:fs';

/**
 * The last line of cleanup. Every benchmark stops what it started in `finally` blocks; this
 * covers what those cannot: the bench process itself being interrupted (Ctrl-C, SIGTERM) or
 * exiting with work still running. Tracked child processes get SIGKILL and tracked scratch
 * directories are removed, synchronously, before the process goes.
 */
const pids = new Map<number, string>();
const dirs = new Set<string>();
let installed = false;

function cleanUpNow(): void {
  for (const pid of pids.keys()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  pids.clear();
  for (const dir of dirs) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // best effort on the way out
    }
  }
  dirs.clear();
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', cleanUpNow);
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}, stopping ${pids.size} child process(es) and removing ${dirs.size} scratch dir(s)\n`);
      cleanUpNow();
      process.exit(code);
    });
  }
}

/** Kill `pid` if this process goes away before `untrackPid(pid)`. */
export function trackPid(pid: number, what: string): void {
  install();
  pids.set(pid, what);
}

export function untrackPid(pid: number): void {
  pids.delete(pid);
}

/** Remove `dir` if this process goes away before `untrackDir(dir)`. */
export function trackDir(dir: string): void {
  install();
  dirs.add(dir);
}

export function untrackDir(dir: string): void {
  dirs.delete(dir);
}
