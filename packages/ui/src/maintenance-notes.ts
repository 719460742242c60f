import type { MaintenanceRunView } from './api.js';

/**
 * What a run says when its time budget ended compaction with small files left: compaction is
 * not keeping up when every run says so, and the tier then gains files every search, listing
 * and verify pays for. Undefined when it left none (or did not compact).
 */
export function smallFilesNote(run: Pick<MaintenanceRunView, 'smallFilesLeft' | 'compactionPasses'>): string | undefined {
  const left = run.smallFilesLeft ?? 0;
  if (left === 0) return undefined;
  const passes = run.compactionPasses ?? 1;
  return `${left.toLocaleString('en-US')} small ${left === 1 ? 'file' : 'files'} left for the next run after ${passes} compaction ${passes === 1 ? 'pass' : 'passes'}`;
}
