import { readFileSync } from 'node:fs';
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
