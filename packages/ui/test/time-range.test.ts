// Goal: the toolbar offers exactly the reference's time ranges and max events, and turns them into the right API bounds.
import { describe, expect, it } from 'vitest';
import { readWindowState, writeWindowState } from '../src/page-location.js';
import { DEFAULT_MAX_EVENTS, MAX_EVENTS, TIME_RANGES, localMinuteMs, toLocalMinute, windowBounds } from '../src/time-range.js';

const NOW = Date.UTC(2026, 10, 1, 12, 0, 0);

describe('time ranges', () => {
  it('are exactly Any time, Last hour, Last 24h, Last 7 days, Last 30 days and Custom range…', () => {
    expect(TIME_RANGES.map((r) => r.label)).toEqual(['Any time', 'Last hour', 'Last 24h', 'Last 7 days', 'Last 30 days', 'Custom range…']);
    expect(MAX_EVENTS).toEqual([100, 400, 1000, 5000]);
    expect(DEFAULT_MAX_EVENTS).toBe(400);
  });

  it('relative ranges end now, asked as `to` (events dated ahead of now do not fill them); any time has no bounds', () => {
    expect(windowBounds({ range: 'any', from: '', to: '' }, NOW)).toEqual({});
    expect(windowBounds({ range: '1h', from: '', to: '' }, NOW)).toEqual({ fromMs: NOW - 3_600_000, toMs: NOW });
    expect(windowBounds({ range: '24h', from: '', to: '' }, NOW)).toEqual({ fromMs: NOW - 86_400_000, toMs: NOW });
    expect(windowBounds({ range: '7d', from: '', to: '' }, NOW)).toEqual({ fromMs: NOW - 7 * 86_400_000, toMs: NOW });
    expect(windowBounds({ range: '30d', from: '', to: '' }, NOW)).toEqual({ fromMs: NOW - 30 * 86_400_000, toMs: NOW });
  });

  it('a custom range is local time to the minute, with the whole To minute included', () => {
    const from = localMinuteMs('2026-11-01T10:00')!;
    expect(from).toBe(new Date(2026, 10, 1, 10, 0).getTime());
    expect(windowBounds({ range: 'custom', from: '2026-11-01T10:00', to: '2026-11-01T10:30' }, NOW)).toEqual({ fromMs: from, toMs: new Date(2026, 10, 1, 10, 30, 59, 999).getTime() });
    expect(windowBounds({ range: 'custom', from: '', to: '2026-11-01T10:30' }, NOW)).toEqual({ toMs: new Date(2026, 10, 1, 10, 30, 59, 999).getTime() });
    expect(windowBounds({ range: 'custom', from: '2026-11-01T11:00', to: '2026-11-01T10:30' }, NOW)).toEqual({ error: 'From must not be after To' });
    expect(windowBounds({ range: 'custom', from: 'soon', to: '' }, NOW)).toEqual({ error: 'From is not a date and time: soon' });
    expect(toLocalMinute(from)).toBe('2026-11-01T10:00');
  });

  it('keeps the window in the query string, leaving defaults out', () => {
    const state = { window: { range: 'custom' as const, from: '2026-11-01T10:00', to: '2026-11-01T11:00' }, max: 1000 };
    const params = writeWindowState(new URLSearchParams('q=x'), state);
    expect(params.toString()).toBe('q=x&range=custom&from=2026-11-01T10%3A00&to=2026-11-01T11%3A00&max=1000');
    expect(readWindowState(params)).toEqual(state);
    expect(writeWindowState(new URLSearchParams(), { window: { range: 'any', from: 'x', to: 'y' }, max: 400 }).toString()).toBe('');
    // Anything unknown falls back to the defaults.
    expect(readWindowState(new URLSearchParams('range=forever&max=7'))).toEqual({ window: { range: 'any', from: '', to: '' }, max: 400 });
  });
});
