// Goal: the Tier health panel's Completeness line says what the ledger misses, and keeps saying
// it for sources retired as idle (retiring one must not read as its events having arrived).
import { describe, expect, it } from 'vitest';
import { completenessText, somethingMissing } from '../src/completeness-text.js';

describe('completeness in words', () => {
  it('names the missing events and the sources with holes, tracked and retired', () => {
    expect(completenessText({ sources: 0, sourcesWithGaps: 0, missing: 0 })).toBe('no source counts its events (sourceSeq)');
    expect(completenessText({ sources: 1, sourcesWithGaps: 0, missing: 0 })).toBe('nothing missing from 1 source');
    expect(completenessText({ sources: 12, sourcesWithGaps: 2, missing: 1 })).toBe('1 event missing from 2 of 12 sources');
    expect(completenessText({ sources: 12, sourcesWithGaps: 0, missing: 0, sourcesRetired: 9001, retiredMissing: 3 })).toBe('nothing missing from 12 sources; 9,001 idle sources retired, 3 events missing from them');
    expect(completenessText({ sources: 0, sourcesWithGaps: 0, missing: 0, sourcesRetired: 1, retiredMissing: 0 })).toBe('nothing missing from 0 sources; 1 idle source retired, nothing missing from them');
  });

  it('is highlighted while anything is missing, from a retired source too', () => {
    expect(somethingMissing({ sources: 3, sourcesWithGaps: 0, missing: 0 })).toBe(false);
    expect(somethingMissing({ sources: 3, sourcesWithGaps: 1, missing: 2 })).toBe(true);
    expect(somethingMissing({ sources: 3, sourcesWithGaps: 0, missing: 0, sourcesRetired: 4, retiredMissing: 1 })).toBe(true);
    expect(somethingMissing({ sources: 3, sourcesWithGaps: 0, missing: 0, sourcesRetired: 4, retiredMissing: 0 })).toBe(false);
  });
});
