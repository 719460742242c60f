import type { AuditStats } from '@auditlake/model';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { DECISION_COLORS } from '../engine-colors.js';
import { useWidth } from '../use-width.js';

const NONE_COLOR = '#94a3b8';

/**
 * The window's events over time, ALLOW and DENY (and events without a decision) stacked, drawn
 * by uPlot. uPlot draws series over each other, so each series holds the running total and
 * the smallest is drawn last; the legend shows each series' own count.
 */
export function DecisionHistogram({ histogram }: { histogram: AuditStats['histogram'] }) {
  const { ref, width } = useWidth<HTMLDivElement>();
  const plotRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = plotRef.current;
    if (!el) return;
    const { buckets, bucketMs } = histogram;
    const xs = buckets.map((b) => (b.startMs + bucketMs / 2) / 1000);
    const allow = buckets.map((b) => b.allow);
    const deny = buckets.map((b) => b.deny);
    const none = buckets.map((b) => b.none);
    const own = [allow, deny, none];
    const stacked = [buckets.map((b) => b.allow + b.deny + b.none), buckets.map((b) => b.allow + b.deny), allow];
    const bars = uPlot.paths.bars?.({ size: [0.9, 40] });
    const style = getComputedStyle(el);
    const axisColor = style.getPropertyValue('--muted').trim() || '#64748b';
    const gridColor = style.getPropertyValue('--grid').trim() || '#e2e8f0';
    const series = (label: string, color: string, ownIndex: number): uPlot.Series => ({
      label,
      fill: color,
      stroke: color,
      width: 0,
      ...(bars ? { paths: bars } : {}),
      points: { show: false },
      value: (_u, _v, _si, i) => (i === null ? '–' : String(own[ownIndex]?.[i] ?? 0)),
    });
    const plot = new uPlot(
      {
        width,
        height: 180,
        legend: { show: true },
        cursor: { points: { show: false } },
        scales: { x: { time: true, range: [xs[0]! - bucketMs / 2000, xs.at(-1)! + bucketMs / 2000] }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [
          { stroke: axisColor, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor } },
          { stroke: axisColor, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor }, size: 40 },
        ],
        series: [{ label: 'Time' }, series('no decision', NONE_COLOR, 2), series('DENY', DECISION_COLORS.DENY, 1), series('ALLOW', DECISION_COLORS.ALLOW, 0)],
      },
      [xs, ...stacked],
      el,
    );
    return () => plot.destroy();
  }, [histogram, width]);
  return (
    <div ref={ref} class="histogram" aria-label="Events over time, ALLOW and DENY stacked" role="img">
      <div ref={plotRef} />
    </div>
  );
}
