// Goal: the Tier health panel says when local retention is held back by an erasure a tier location has not applied, and says nothing otherwise.
import { describe, expect, it } from 'vitest';
import { erasureHoldText } from '../src/tier-hold.js';

describe('erasure hold in words', () => {
  it('names the held seq, and is absent when nothing is held', () => {
    expect(erasureHoldText(1234)).toBe('from seq 1234: an erasure not yet applied to every tier location (retention keeps it and what follows)');
    expect(erasureHoldText(null)).toBeUndefined();
    expect(erasureHoldText(undefined)).toBeUndefined();
  });
});
