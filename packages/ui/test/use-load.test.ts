// Goal: a page never shows figures loaded for another window, nor any once loading its own failed.
import { describe, expect, it } from 'vitest';
import { loadKey, shownOutcome } from '../src/use-load.js';

describe('shownOutcome', () => {
  const lastHour = loadKey(['1h||400']);
  const refused = loadKey(['custom|2026-11-02T10:00|2026-11-01T10:00|400']);

  it('shows a value only under the deps it was loaded for', () => {
    expect(shownOutcome({ key: lastHour, value: 42, error: '' }, lastHour)).toEqual({ value: 42, error: '' });
    // The window changed: the last hour's figures are not the new window's, loading or not.
    expect(shownOutcome({ key: lastHour, value: 42, error: '' }, refused)).toEqual({ value: undefined, error: '' });
  });

  it('shows the failure, and no value, once a load for these deps failed', () => {
    expect(shownOutcome({ key: refused, value: undefined, error: 'From must not be after To' }, refused)).toEqual({ value: undefined, error: 'From must not be after To' });
    // A failure of another window is not this one's either.
    expect(shownOutcome({ key: refused, value: undefined, error: 'From must not be after To' }, lastHour)).toEqual({ value: undefined, error: '' });
  });
});
