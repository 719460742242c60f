import { onTestFinished } from 'vitest';
import { TierSweeper, type TierSweeperOptions } from '../src/index.js';

const HOUR_MS = 3_600_000;

/**
 * A sweeper that only sweeps when the test calls `sweep()` (an hour between scheduled sweeps
 * and retries), leads in term 1 unless told otherwise, tiers events as soon as they are stored,
 * logs nothing, and is closed when the test finishes.
 */
export function testSweeper(options: Pick<TierSweeperOptions, 'store' | 'connections' | 'catalogs' | 'settings'> & Partial<TierSweeperOptions>): TierSweeper {
  const sweeper = new TierSweeper({
    isLeader: () => true,
    term: () => 1,
    intervalMs: HOUR_MS,
    batchSizeMax: 100,
    settleMs: 0,
    backoffInitialMs: HOUR_MS,
    backoffMaxMs: HOUR_MS,
    log: { info: () => undefined, warn: () => undefined },
    ...options,
  });
  onTestFinished(() => sweeper.close());
  return sweeper;
}
