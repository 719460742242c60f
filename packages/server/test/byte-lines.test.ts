// Goal: lines sent as slices are byte for byte the newline-joined message, and lines that sit
// one newline apart in the same memory are sent as one slice of it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { joinLines, lineRuns, splitLines } from '../src/byte-lines.js';

/** The message the slices must add up to, built the plain way. */
function joined(lines: readonly Uint8Array[]): Buffer {
  return Buffer.from(lines.map((line) => Buffer.from(line).toString('latin1')).join('\n'), 'latin1');
}

describe('lineRuns', () => {
  it('property: the slices add up to the newline-joined lines, however the lines lie in memory', () => {
    // Each line: its own buffer, or carved out of one shared buffer with some byte after it
    // (a newline, as the log tail keeps entries, or anything else).
    const piece = fc.record({
      text: fc.string({ unit: 'binary-ascii', maxLength: 8 }).filter((t) => !t.includes('\n')),
      shared: fc.boolean(),
      after: fc.constantFrom(0x0a, 0x0a, 0x20, 0x7d),
    });
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
        const memory = Buffer.alloc(pieces.reduce((n, p) => n + p.text.length + 1, 0));
        let offset = 0;
        const lines = pieces.map((p) => {
          if (!p.shared) return Buffer.from(p.text, 'latin1');
          memory.write(p.text, offset, 'latin1');
          const line = memory.subarray(offset, offset + p.text.length);
          memory[offset + p.text.length] = p.after;
          offset += p.text.length + 1;
          return line;
        });
        expect(Buffer.concat(lineRuns(lines)).equals(joined(lines))).toBe(true);
        expect(joinLines(lines).equals(joined(lines))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('sends lines kept one newline apart as one slice of their memory, not a copy', () => {
    const memory = Buffer.from('{"a":1}\n{"b":2}\n{"c":3}\n');
    const lines = splitLines(memory);
    const header = Buffer.from('{"h":1}');
    const runs = lineRuns([header, ...lines]);
    expect(runs).toHaveLength(3);
    expect(runs[2]?.buffer).toBe(memory.buffer);
    expect(Buffer.from(runs[2] as Uint8Array).toString()).toBe('{"a":1}\n{"b":2}\n{"c":3}');
    // Separate buffers cannot be merged: a slice each, a newline between.
    expect(lineRuns([Buffer.from('x'), Buffer.from('y')]).map((r) => Buffer.from(r).toString())).toEqual(['x', '\n', 'y']);
    expect(lineRuns([])).toEqual([]);
  });
});
