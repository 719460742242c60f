// Goal: stored events read in bulk are parsed in order, missing values left out, with a turn of the event loop after every PARSE_TURN_EVENTS parsed (so a sweep's batch read never holds the loop for all of its parsing).
import { describe, expect, it } from 'vitest';
import { PARSE_TURN_EVENTS, parseBytesInTurns, parseInTurns } from '../src/parse-in-turns.js';

describe('parseInTurns', () => {
  it('parses every value in order, skips missing ones, and takes a turn after each PARSE_TURN_EVENTS parsed', async () => {
    const count = PARSE_TURN_EVENTS * 2 + 500;
    const values = Array.from({ length: count }, (_, i) => (i === 7 ? undefined : JSON.stringify({ seq: i })));
    let turns = 0;
    const result = await parseInTurns<{ seq: number }>(values, () => Promise.resolve(turns++));
    expect(result.map((e) => e.seq)).toEqual(Array.from({ length: count }, (_, i) => i).filter((i) => i !== 7));
    // 2,499 parsed: a turn after the first 1,000 and after the second, none at the end.
    expect(turns).toBe(2);
  });

  it('takes no turn for a read of at most PARSE_TURN_EVENTS', async () => {
    let turns = 0;
    const result = await parseInTurns<number>(Array.from({ length: PARSE_TURN_EVENTS }, (_, i) => String(i)), () => Promise.resolve(turns++));
    expect(result).toHaveLength(PARSE_TURN_EVENTS);
    expect(turns).toBe(0);
  });

  it('decodes UTF-8 bytes (the log tail\'s entries) within the same turns, views into one buffer included', async () => {
    const count = PARSE_TURN_EVENTS + 10;
    const texts = Array.from({ length: count }, (_, i) => JSON.stringify({ seq: i, q: 'ü→' }));
    const whole = Buffer.from(texts.join('\n'), 'utf8');
    const views: Uint8Array[] = [];
    let at = 0;
    for (const text of texts) {
      const length = Buffer.byteLength(text, 'utf8');
      views.push(whole.subarray(at, at + length));
      at += length + 1;
    }
    let turns = 0;
    const result = await parseBytesInTurns<{ seq: number; q: string }>(views, () => Promise.resolve(turns++));
    expect(result).toEqual(texts.map((t) => JSON.parse(t) as { seq: number; q: string }));
    expect(turns).toBe(1);
  });
});
