import { MAX_EVENTS, TIME_RANGES, type TimeRangeValue } from '../time-range.js';
import type { WindowState } from '../page-location.js';

/**
 * The window every page summarises or searches: a time range (with From/To pickers in the
 * browser's local time, to the minute, for a custom one) and a maximum number of events.
 */
export function WindowControls({ state, onChange }: { state: WindowState; onChange: (next: WindowState) => void }) {
  const { window, max } = state;
  const set = (patch: Partial<WindowState['window']>) => onChange({ max, window: { ...window, ...patch } });
  return (
    <>
      <label>
        Time range
        <select name="range" value={window.range} onChange={(e) => set({ range: e.currentTarget.value as TimeRangeValue })}>
          {TIME_RANGES.map((r) => (
            <option key={r.value} value={r.value}>
              {r.label}
            </option>
          ))}
        </select>
      </label>
      {window.range === 'custom' && (
        <>
          <label>
            From
            <input name="from" type="datetime-local" step={60} value={window.from} onChange={(e) => set({ from: e.currentTarget.value })} />
          </label>
          <label>
            To
            <input name="to" type="datetime-local" step={60} value={window.to} onChange={(e) => set({ to: e.currentTarget.value })} />
          </label>
        </>
      )}
      <label>
        Max events
        <select name="max" value={String(max)} onChange={(e) => onChange({ window, max: Number(e.currentTarget.value) })}>
          {MAX_EVENTS.map((n) => (
            <option key={n} value={String(n)}>
              {n}
            </option>
          ))}
        </select>
      </label>
    </>
  );
}

/** Said whenever an answer was cut at the maximum, so a truncated view is never taken for everything. */
export function TruncationNote({ shown }: { shown: number }) {
  return (
    <p class="note truncation" role="status">
      Showing the newest {shown} matching events — narrow the time range or filters to see older ones
    </p>
  );
}
