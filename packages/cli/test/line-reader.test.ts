// Goal: import reads lines in time linear in the input: a line spanning many chunks is searched once, not once per chunk, and comes out whole; a line with bytes that are not UTF-8 is marked with where they are, never decoded with U+FFFD as if it were fine, while a character split between chunks is read whole.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { LineSplitter, OVERLONG_LINE, readLines } from '../src/line-reader.js';
import { tempDir } from './import-node.js';

describe('line splitting', () => {
  it('searches every character once, however many chunks a line spans', () => {
    const splitter = new LineSplitter();
    const chunk = 'x'.repeat(1000);
    let input = 0;
    const lines: Array<string | typeof OVERLONG_LINE> = [];
    for (let i = 0; i < 2000; i++) {
      lines.push(...splitter.push(chunk));
      input += chunk.length;
    }
    lines.push(...splitter.push('\r\nshort\n\nlast'));
    input += '\r\nshort\n\nlast'.length;
    expect(lines.map((l) => (l === OVERLONG_LINE ? -1 : l.length))).toEqual([2_000_001, 5, 0]);
    expect(lines[0]).toBe('x'.repeat(2_000_000) + '\r');
    expect(splitter.rest()).toBe('last');
    // Adding each chunk to the unfinished line and splitting it again searched ~2 billion characters here.
    expect(splitter.scanned).toBe(input);
  });

  it('splits many short lines in one chunk, and lines cut at any point between chunks', () => {
    const text = 'a\nbb\r\n\nccc\nd';
    for (let size = 1; size <= text.length; size++) {
      const splitter = new LineSplitter();
      const lines: Array<string | typeof OVERLONG_LINE> = [];
      for (let at = 0; at < text.length; at += size) lines.push(...splitter.push(text.slice(at, at + size)));
      expect([...lines, splitter.rest()], `chunks of ${size}`).toEqual(['a', 'bb\r', '', 'ccc', 'd']);
      expect(splitter.scanned).toBe(text.length);
    }
  });

  it('drops a line past its limit as it arrives (kept in no memory), says so, and goes on with the next line', () => {
    const splitter = new LineSplitter(10);
    const lines: Array<string | typeof OVERLONG_LINE> = [];
    lines.push(...splitter.push('short\n0123456'));
    lines.push(...splitter.push('789ab'));
    lines.push(...splitter.push('cdef'.repeat(1000)));
    lines.push(...splitter.push('\nnext\n0123456789\n0123456789x'));
    expect(lines).toEqual(['short', OVERLONG_LINE, 'next', '0123456789']);
    expect(splitter.rest()).toBe(OVERLONG_LINE);
    expect(splitter.rest()).toBe('');
  });

  it('reads a file with a line far longer than a read chunk, whole, between short ones', async () => {
    const dir = await tempDir();
    const file = join(dir, 'long.log');
    const long = JSON.stringify({ details: 'é'.repeat(3_000_000) });
    await writeFile(file, `\uFEFFfirst\r\n${long}\nlast\n`);
    const lines = [];
    for await (const line of readLines({ kind: 'file', path: file, sizeBytes: 0, mtimeMs: 0 })) lines.push(line);
    expect(lines.map((l) => l.number)).toEqual([1, 2, 3]);
    expect(lines[0]?.text).toBe('first');
    expect(lines[1]?.text).toBe(long);
    expect(lines[2]?.text).toBe('last');
  });

  it('reads characters split between read chunks whole, plain and gzip-compressed, and marks no line', async () => {
    const dir = await tempDir();
    // 3- and 4-byte characters after a 1-byte prefix: the 64 KiB read chunks (16 KiB once gunzipped) end inside many of them.
    const text = `a${'€'.repeat(50_000)}\nb${'😀'.repeat(40_000)}\nc\n`;
    for (const [name, bytes] of [
      ['split.log', Buffer.from(text)],
      ['split.log.gz', gzipSync(text)],
    ] as const) {
      const file = join(dir, name);
      await writeFile(file, bytes);
      const lines = [];
      for await (const line of readLines({ kind: 'file', path: file, sizeBytes: 0, mtimeMs: 0 })) lines.push(line);
      expect(lines.map((l) => l.text), name).toEqual(text.split('\n').slice(0, 3));
      expect(lines.filter((l) => l.invalidUtf8 !== undefined), name).toEqual([]);
    }
  });

  it('marks each line holding bytes that are not UTF-8 with the first one (in the line and in the input), and only those lines', async () => {
    const dir = await tempDir();
    const file = join(dir, 'latin1.log');
    const long = 'x'.repeat(200_000);
    // Line 2 is Latin-1 (José), line 4 spans read chunks with its bad byte past the first, line 6 is cut inside a character.
    const bytes = Buffer.concat([
      Buffer.from('\uFEFFfirst\n'),
      Buffer.from('{"userName":"Jos\xe9"}\n', 'latin1'),
      Buffer.from('Josè\n'),
      Buffer.concat([Buffer.from(long), Buffer.from([0xc3, 0x28]), Buffer.from('y\n')]),
      Buffer.from('fine\n'),
      Buffer.from([0x7a, 0xe2, 0x82]),
    ]);
    await writeFile(file, bytes);
    const lines = [];
    let unterminated;
    for await (const line of readLines({ kind: 'file', path: file, sizeBytes: 0, mtimeMs: 0 }, undefined, (line) => (unterminated = line))) lines.push(line);
    expect(lines.map((l) => [l.number, l.invalidUtf8])).toEqual([
      [1, undefined],
      [2, { inputByte: 9 + 16, lineByte: 16 }],
      [3, undefined],
      [4, { inputByte: bytes.indexOf(Buffer.from([0xc3, 0x28])), lineByte: 200_000 }],
      [5, undefined],
    ]);
    expect(lines[2]?.text).toBe('Josè');
    expect(lines[4]?.text).toBe('fine');
    // The text of a marked line is only for framing: the bad byte shows as U+FFFD.
    expect(lines[1]?.text).toBe('{"userName":"Jos\uFFFD"}');
    expect(unterminated).toMatchObject({ number: 6, invalidUtf8: { inputByte: bytes.length - 2, lineByte: 1 } });
  });
});
