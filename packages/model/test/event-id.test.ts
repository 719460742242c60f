// Goal: assigned event ids are RFC 9562 UUIDv7s that carry their creation ms and sort by it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newEventId } from '../src/event-id.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const msOf = (id: string): number => parseInt(id.replace(/-/g, '').slice(0, 12), 16);

describe('newEventId', () => {
  it('has the UUIDv7 shape, version 7 and variant 10', () => {
    expect(newEventId(0)).toMatch(UUID_V7);
    expect(newEventId(0).startsWith('00000000-0000-7')).toBe(true);
    expect(newEventId(1_792_288_263_000)).toMatch(UUID_V7);
  });

  it('property: encodes the ms in the first 48 bits, so ids of later ms sort later', () => {
    const ms48 = fc.integer({ min: 0, max: 2 ** 48 - 1 });
    fc.assert(
      fc.property(ms48, ms48, (a, b) => {
        const idA = newEventId(a);
        const idB = newEventId(b);
        expect(idA).toMatch(UUID_V7);
        expect(msOf(idA)).toBe(a);
        expect(msOf(idB)).toBe(b);
        // Back to the first ms after another one: the time part is never a stale one.
        expect(msOf(newEventId(a))).toBe(a);
        if (a < b) expect(idA < idB).toBe(true);
        if (a > b) expect(idA > idB).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('is unique within one millisecond', () => {
    const ids = Array.from({ length: 10_000 }, () => newEventId(5));
    expect(new Set(ids).size).toBe(10_000);
  });
});
