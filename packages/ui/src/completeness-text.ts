import type { LedgerSummary } from './api.js';

/** Whether the ledger knows of events a source counted that never arrived, retired sources' included. */
export function somethingMissing(ledger: LedgerSummary): boolean {
  return ledger.missing > 0 || (ledger.retiredMissing ?? 0) > 0;
}

function events(n: number): string {
  return `${n.toLocaleString()} ${n === 1 ? 'event' : 'events'}`;
}

/**
 * The completeness ledger in words: do the sources that count their events miss any? Holes of
 * sources retired as idle are named apart: retiring a source must not read as its missing
 * events having arrived.
 */
export function completenessText(ledger: LedgerSummary): string {
  const retired = ledger.sourcesRetired ?? 0;
  const retiredMissing = ledger.retiredMissing ?? 0;
  const sources = `${ledger.sources.toLocaleString()} ${ledger.sources === 1 ? 'source' : 'sources'}`;
  if (ledger.sources === 0 && retired === 0) return 'no source counts its events (sourceSeq)';
  const text = ledger.missing === 0 ? `nothing missing from ${sources}` : `${events(ledger.missing)} missing from ${ledger.sourcesWithGaps.toLocaleString()} of ${sources}`;
  if (retired === 0) return text;
  const idle = `${retired.toLocaleString()} idle ${retired === 1 ? 'source' : 'sources'} retired`;
  return retiredMissing === 0 ? `${text}; ${idle}, nothing missing from them` : `${text}; ${idle}, ${events(retiredMissing)} missing from them`;
}
