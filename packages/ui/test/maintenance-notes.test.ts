// Goal: a maintenance run whose time budget ended compaction with small files left says so on
// the Maintenance page (compaction not keeping up shows there first); one that left none says nothing.
// A Parquet run's packed commit markers show with the loose copies it deleted; other runs show a dash.
import { describe, expect, it } from 'vitest';
import { markersPackedText, smallFilesNote } from '../src/maintenance-notes.js';

describe('smallFilesNote', () => {
  it('names the files left and the passes made, and nothing when none were left or the run did not compact', () => {
    expect(smallFilesNote({ smallFilesLeft: 1_234, compactionPasses: 7 })).toBe('1,234 small files left for the next run after 7 compaction passes');
    expect(smallFilesNote({ smallFilesLeft: 1, compactionPasses: 1 })).toBe('1 small file left for the next run after 1 compaction pass');
    expect(smallFilesNote({ smallFilesLeft: 0, compactionPasses: 3 })).toBeUndefined();
    expect(smallFilesNote({ smallFilesLeft: null, compactionPasses: 0 })).toBeUndefined();
    // A run recorded before passes existed.
    expect(smallFilesNote({})).toBeUndefined();
  });
});

describe('markersPackedText', () => {
  it('shows the markers packed and the loose copies deleted, and a dash for a run without the figures', () => {
    expect(markersPackedText({ markersPacked: 2_000, packedMarkersDeleted: 1_000 })).toBe('2,000 (1,000 loose deleted)');
    expect(markersPackedText({ markersPacked: 1_000, packedMarkersDeleted: 0 })).toBe('1,000');
    expect(markersPackedText({ markersPacked: 0, packedMarkersDeleted: 0 })).toBe('0');
    // An Iceberg table's run, a failed run, or one recorded before marker packing.
    expect(markersPackedText({})).toBe('—');
  });
});
