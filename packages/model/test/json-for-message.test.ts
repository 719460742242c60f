// Goal: a refusal can always quote the refused value: short, and without throwing for a value nested too deep to print.
import { describe, expect, it } from 'vitest';
import { jsonForMessage } from '../src/json-for-message.js';

describe('jsonForMessage', () => {
  it('quotes a value as JSON, cut at 200 characters', () => {
    expect(jsonForMessage({ a: [1, 'x'] })).toBe('{"a":[1,"x"]}');
    expect(jsonForMessage('x'.repeat(500))).toBe(`"${'x'.repeat(199)}…`);
    expect(jsonForMessage(undefined)).toBe('undefined');
  });

  it('describes a value nested too deep for JSON.stringify instead of throwing', () => {
    const depth = 1_000_000;
    const deep = JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`) as unknown;
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(jsonForMessage(deep)).toBe('an array nested too deep to quote');
    expect(jsonForMessage({ a: deep })).toBe('an object nested too deep to quote');
  });
});
