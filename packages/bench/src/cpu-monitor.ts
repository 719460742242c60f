import { readdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** CPU use over a measured interval, in cores (1.0 = one core fully busy). */
export interface CpuShare {
  /** This process: every thread, the client worker and LevelDB's threads included. */
  ownCores: number;
  /**
   * Everything else on the machine (Linux only, from /proc/stat; undefined elsewhere). Other
   * work on a 2-core machine slows a benchmark down, so a figure measured beside it says so.
   */
  otherCores: number | undefined;
}

/** Busy and total jiffies over all CPUs, from the first line of /proc/stat. */
function machineJiffies(): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    const fields = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal …: idle and iowait are not busy.
    const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    return Number.isFinite(total) && total > 0 ? { busy: total - idle, total } : undefined;
  } catch {
    return undefined;
  }
}

/** Starts measuring; call the returned function at the end of the interval. */
export function startCpuMonitor(): () => CpuShare {
  const wallStart = performance.now();
  const ownStart = process.cpuUsage();
  const machineStart = machineJiffies();
  return () => {
    const wallMs = performance.now() - wallStart;
    const own = process.cpuUsage(ownStart);
    const ownCores = (own.user + own.system) / 1000 / wallMs;
    const machineEnd = machineJiffies();
    let otherCores: number | undefined;
    if (machineStart && machineEnd && machineEnd.total > machineStart.total) {
      const busyCores = ((machineEnd.busy - machineStart.busy) / (machineEnd.total - machineStart.total)) * cpus().length;
      otherCores = Math.max(0, busyCores - ownCores);
    }
    return { ownCores, otherCores };
  };
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on every common Linux). */
const USER_HZ = 100;

/** CPU seconds (user + system) a process has used so far, or undefined (gone, or not Linux). */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; the fields after its closing ')' do not.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return Number.isFinite(utime) && Number.isFinite(stime) ? (utime + stime) / USER_HZ : undefined;
  } catch {
    return undefined;
  }
}

/** The pid of a running process whose command line contains `needle` (Linux), or undefined. */
export function findPid(needle: string): number | undefined {
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
        if (cmdline.includes(needle)) return Number(entry);
      } catch {
        // exited meanwhile
      }
    }
  } catch {
    // no /proc
  }
  return undefined;
}

/** CPU over an interval, split by process: this one, each named child, and everything else. */
export interface ProcessCpuShare extends CpuShare {
  /** Cores used by each named process (undefined when it could not be read, e.g. it died). */
  processes: Record<string, number | undefined>;
}

/**
 * Like startCpuMonitor, but also measures the named processes (real node processes, Redis),
 * and counts them out of "other": other is then only work that is not part of the benchmark.
 */
export function startProcessCpuMonitor(processes: Record<string, number>): () => ProcessCpuShare {
  const wallStart = performance.now();
  const stopOwn = startCpuMonitor();
  const start = Object.fromEntries(Object.entries(processes).map(([name, pid]) => [name, processCpuSeconds(pid)]));
  return () => {
    const wallS = (performance.now() - wallStart) / 1000;
    const own = stopOwn();
    const used: Record<string, number | undefined> = {};
    let sum = 0;
    for (const [name, pid] of Object.entries(processes)) {
      const before = start[name];
      const after = processCpuSeconds(pid);
      const cores = before === undefined || after === undefined ? undefined : (after - before) / wallS;
      used[name] = cores;
      sum += cores ?? 0;
    }
    return { ownCores: own.ownCores, otherCores: own.otherCores === undefined ? undefined : Math.max(0, own.otherCores - sum), processes: used };
  };
}

export interface QuietWait {
  /** How long the wait took. */
  waitedMs: number;
  /** False when the machine was still busy at the timeout (then the figures after it say so). */
  quiet: boolean;
  /** The machine's busy cores over the last window looked at. */
  busyCores: number | undefined;
}

/**
 * Waits until the whole machine (Linux, /proc/stat) is quiet: at most `busyCoresMax` cores
 * busy over a window of `windowMs`, or `timeoutMs` has passed. For figures that compare two
 * systems at rest: after a bulk load both still work in the background (LevelDB compacts,
 * PostgreSQL's autovacuum and checkpointer run), and what runs then slows whichever system is
 * measured beside it. The caller must itself be idle meanwhile. Elsewhere it returns at once.
 */
export async function waitForQuietMachine(options: { busyCoresMax: number; windowMs: number; timeoutMs: number }): Promise<QuietWait> {
  const started = performance.now();
  let busyCores: number | undefined;
  for (;;) {
    const before = machineJiffies();
    if (before === undefined) return { waitedMs: 0, quiet: true, busyCores: undefined };
    await new Promise((resolve) => setTimeout(resolve, options.windowMs));
    const after = machineJiffies();
    if (after === undefined || after.total <= before.total) return { waitedMs: performance.now() - started, quiet: true, busyCores: undefined };
    busyCores = ((after.busy - before.busy) / (after.total - before.total)) * cpus().length;
    const waitedMs = performance.now() - started;
    if (busyCores <= options.busyCoresMax) return { waitedMs, quiet: true, busyCores };
    if (waitedMs >= options.timeoutMs) return { waitedMs, quiet: false, busyCores };
  }
}
