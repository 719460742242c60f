// Goal: read sampling drops only allowed data:Select events, at the configured rate, replayably from a seed.
import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../src/event.js';
import { keepUnderSampling } from '../src/read-sampler.js';
import { seededRandom } from '../src/seeded-random.js';


function event(extra: Partial<AuditEvent> = {}): AuditEvent {
  return {
    eventId: 'e', userId: 'alice', source: 'trino', action: 'data:Select', resource: 'hive.sales.orders', decision: 'ALLOW',
    tables: ['hive.sales.orders'], query: 'SELECT 1', details: '', timestamp: 1, ...extra,
  };
}

const NEVER = (): number => {
  throw new Error('random must not be consulted');
};

describe('keepUnderSampling', () => {
  it('never samples a DENY, even with reads disabled or rate 0', () => {
    const deny = event({ decision: 'DENY' });
    expect(keepUnderSampling(deny, { readEnabled: false, readSampleRate: 1 }, NEVER)).toBe(true);
    expect(keepUnderSampling(deny, { readEnabled: true, readSampleRate: 0 }, NEVER)).toBe(true);
  });

  it('never samples an action other than data:Select', () => {
    for (const action of ['data:Insert', 'data:CreateTable', 'data:Write', 'iam:Grant']) {
      expect(keepUnderSampling(event({ action }), { readEnabled: false, readSampleRate: 0 }, NEVER)).toBe(true);
    }
  });

  it('read.enabled=false drops allowed selects and selects without a decision', () => {
    expect(keepUnderSampling(event(), { readEnabled: false, readSampleRate: 1 }, () => 0)).toBe(false);
    expect(keepUnderSampling(event({ decision: '' }), { readEnabled: false, readSampleRate: 1 }, () => 0)).toBe(false);
  });

  it('rate 1 keeps every select; rate 0 drops every select', () => {
    const random = seededRandom(1);
    for (let i = 0; i < 1000; i++) {
      expect(keepUnderSampling(event(), { readEnabled: true, readSampleRate: 1 }, random)).toBe(true);
      expect(keepUnderSampling(event(), { readEnabled: true, readSampleRate: 0 }, random)).toBe(false);
    }
    // Even the smallest draw is not below rate 0.
    expect(keepUnderSampling(event(), { readEnabled: true, readSampleRate: 0 }, () => 0)).toBe(false);
    expect(keepUnderSampling(event(), { readEnabled: true, readSampleRate: 1 }, () => 0.999999)).toBe(true);
  });

  it('rate 0.5 keeps a draw below the rate and drops one at or above it', () => {
    const sampling = { readEnabled: true, readSampleRate: 0.5 };
    expect(keepUnderSampling(event(), sampling, () => 0.4999)).toBe(true);
    expect(keepUnderSampling(event(), sampling, () => 0.5)).toBe(false);
    expect(keepUnderSampling(event(), sampling, () => 0.9)).toBe(false);
  });

  it('rate 0.5 with a seeded random keeps about half, and the same seed replays the same choices', () => {
    const seed = 0x5eed;
    const sampling = { readEnabled: true, readSampleRate: 0.5 };
    const run = (s: number): boolean[] => {
      const random = seededRandom(s);
      return Array.from({ length: 10_000 }, () => keepUnderSampling(event(), sampling, random));
    };
    const first = run(seed);
    expect(run(seed)).toEqual(first);
    const kept = first.filter(Boolean).length;
    // 10,000 fair draws: 4,800..5,200 is more than 4 standard deviations wide.
    expect(kept, `seed ${seed}`).toBeGreaterThan(4800);
    expect(kept, `seed ${seed}`).toBeLessThan(5200);
    // The choices are exactly "draw < rate" on the seeded sequence.
    const replay = seededRandom(seed);
    expect(first).toEqual(Array.from({ length: 10_000 }, () => replay() < 0.5));
  });
});
