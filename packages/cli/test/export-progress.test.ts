// Goal: export progress says how far back the export has reached, a line every few seconds off a terminal, a bar on one, never flooding.
import { describe, expect, it } from 'vitest';
import { ExportProgress } from '../src/export/export-progress.js';

function output(isTTY: boolean): { text: () => string; write(t: string): void; isTTY: boolean } {
  let text = '';
  return { text: () => text, write: (t: string) => void (text += t), isTTY };
}

const DAY_MS = 86_400_000;
const NEWEST = Date.UTC(2026, 10, 11);

describe('export progress', () => {
  it('off a terminal: one line per interval, with the share of the from…newest range done', () => {
    const out = output(false);
    let now = 0;
    const progress = new ExportProgress({ out, fromMs: NEWEST - 10 * DAY_MS, lineIntervalMs: 5_000, now: () => now });
    progress.page(1_000, NEWEST - DAY_MS, NEWEST);
    now = 4_999;
    progress.page(1_000, NEWEST - 2 * DAY_MS, NEWEST - DAY_MS);
    expect(out.text()).toBe('');
    now = 5_000;
    progress.page(1_000, NEWEST - 3 * DAY_MS, NEWEST - 2 * DAY_MS);
    expect(out.text()).toBe('export: 3,000 events written (30% of the time range), back to 2026-11-08T00:00:00.000Z\n');
    now = 6_000;
    progress.page(500, NEWEST - 4 * DAY_MS, NEWEST - 3 * DAY_MS);
    expect(out.text().split('\n')).toHaveLength(2);
  });

  it('without from: events and how far back, no percentage', () => {
    const out = output(false);
    let now = 0;
    const progress = new ExportProgress({ out, fromMs: undefined, lineIntervalMs: 1_000, now: () => now });
    now = 1_000;
    progress.page(200, NEWEST - DAY_MS, NEWEST);
    expect(out.text()).toBe('export: 200 events written, back to 2026-11-10T00:00:00.000Z\n');
  });

  it('on a terminal: a bar redrawn in place, cleared by notes and at the end', () => {
    const out = output(true);
    let now = 0;
    const progress = new ExportProgress({ out, fromMs: NEWEST - 4 * DAY_MS, now: () => now });
    now = 1_000;
    progress.page(10, NEWEST - 2 * DAY_MS, NEWEST);
    expect(out.text()).toBe(`\r\x1b[K[${'#'.repeat(15)}${'.'.repeat(15)}]  50% 10 events back to 2026-11-09T00:00:00.000Z`);
    progress.note('retrying');
    expect(out.text()).toContain('\r\x1b[Kretrying\n\r\x1b[K[');
    progress.finish();
    expect(out.text().endsWith('\r\x1b[K')).toBe(true);
  });
});
