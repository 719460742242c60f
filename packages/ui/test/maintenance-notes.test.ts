// Goal: a maintenance run whose time budget ended compaction with small files left says so on
// the Maintenance page (compaction not keeping up shows there first); one that left none says nothing.
import { describe, expect, it } from 'vitest';
import { smallFilesNote } from '../src/maintenance-notes.js';

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
