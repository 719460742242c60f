/** Summary of a set of durations, in milliseconds. */
export interface LatencyStats {
  count: number;
  minMs: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
}

/** Nearest-rank percentile of an ascending array (p in (0, 100]). */
function percentile(sorted: readonly number[], p: number): number {
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] ?? Number.NaN;
}

export function latencyStats(durationsMs: readonly number[]): LatencyStats {
  if (durationsMs.length === 0) throw new TypeError('latencyStats needs at least one duration');
  const sorted = [...durationsMs].sort((a, b) => a - b);
  return {
    count: sorted.length,
    minMs: sorted[0] ?? Number.NaN,
    p50Ms: percentile(sorted, 50),
    p95Ms: percentile(sorted, 95),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted[sorted.length - 1] ?? Number.NaN,
    meanMs: sorted.reduce((a, b) => a + b, 0) / sorted.length,
  };
}
