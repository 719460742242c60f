import { expect } from 'vitest';
import { isSmallFile } from '../compaction-passes.js';

/**
 * Asserts that no day (a key's `event_time_day=` or `event_date=` directory) holds two small
 * files: nothing a compaction would still merge (a day may keep one remainder).
 */
export function expectNoneLeftToMerge(live: ReadonlyArray<{ key: string; bytes: number }>, targetFileSizeBytes: number): void {
  const smallPerDay = new Map<string, number>();
  for (const file of live) {
    if (!isSmallFile(file.bytes, targetFileSizeBytes)) continue;
    const day = /(?:event_time_day|event_date)=([0-9-]+)\//.exec(file.key)?.[1] ?? file.key;
    smallPerDay.set(day, (smallPerDay.get(day) ?? 0) + 1);
  }
  expect([...smallPerDay.values()].every((n) => n <= 1), JSON.stringify([...smallPerDay])).toBe(true);
}
