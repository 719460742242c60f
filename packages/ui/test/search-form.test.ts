// Goal: the search form shows what the URL's filters ask for, a decision in any case included.
import { describe, expect, it } from 'vitest';
import { readFilters } from '../src/search-form.js';

describe('readFilters', () => {
  it('reads every field, missing ones empty', () => {
    expect(readFilters(new URLSearchParams('q=x&user=ana&table=s.orders&action=read'))).toEqual({ q: 'x', user: 'ana', engine: '', table: 's.orders', action: 'read', decision: '' });
  });

  it('takes a decision in any case as the option the select shows', () => {
    for (const [asked, shown] of [['deny', 'DENY'], ['Allow', 'ALLOW'], ['DENY', 'DENY'], ['NONE', 'none'], ['none', 'none']]) {
      expect(readFilters(new URLSearchParams({ decision: asked! })).decision).toBe(shown);
    }
  });

  it('keeps a decision the API refuses as it is, for the refusal to name', () => {
    expect(readFilters(new URLSearchParams('decision=maybe')).decision).toBe('maybe');
  });
});
