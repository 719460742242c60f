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

/**
 * The "Markers packed" cell: a Parquet location's commit markers moved into packs, and the loose
 * copies deleted once their pack was old enough (docs/iceberg-layout.md §8). A dash for a run
 * that has no such figures: an Iceberg table's, a failed run's, or one recorded before packing.
 */
export function markersPackedText(run: Pick<MaintenanceRunView, 'markersPacked' | 'packedMarkersDeleted'>): string {
  if (run.markersPacked === undefined) return '—';
  const deleted = run.packedMarkersDeleted ?? 0;
  return deleted === 0 ? run.markersPacked.toLocaleString('en-US') : `${run.markersPacked.toLocaleString('en-US')} (${deleted.toLocaleString('en-US')} loose deleted)`;
}
