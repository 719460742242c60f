// Goal: the Maintenance page's sizes and durations read as people write them, at every unit boundary.
import { describe, expect, it } from 'vitest';
import { formatBytes, formatDuration } from '../src/format-figures.js';

describe('figures', () => {
  it('formats bytes in binary units', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1.00 KiB');
    expect(formatBytes(14.2 * 1024)).toBe('14.2 KiB');
    expect(formatBytes(3 * 1024 ** 2)).toBe('3.00 MiB');
    expect(formatBytes(1.25 * 1024 ** 3)).toBe('1.25 GiB');
    expect(formatBytes(5000 * 1024 ** 4)).toBe('5000.0 TiB');
  });

  it('formats durations', () => {
    expect(formatDuration(840)).toBe('840 ms');
    expect(formatDuration(2_400)).toBe('2.4 s');
    expect(formatDuration(185_000)).toBe('3 min 5 s');
  });
});
