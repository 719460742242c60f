// Goal: a node's first-start file is created whole or not at all, an empty one (left by a crash) is replaced, one already made is kept, and concurrent makers agree on one content, leaving no temporary file behind.
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createFileDurably } from '../src/index.js';

async function dir(): Promise<string> {
  const path = await mkdtemp(join(tmpdir(), 'auditlake-durable-'));
  onTestFinished(() => rm(path, { recursive: true, force: true }));
  return path;
}

describe('createFileDurably', () => {
  it('creates the file with its mode, answers its text, and leaves nothing else', async () => {
    const d = await dir();
    expect(await createFileDurably(join(d, 'token'), 'secret\n', 0o600)).toBe('secret\n');
    expect(await readFile(join(d, 'token'), 'utf8')).toBe('secret\n');
    expect((await stat(join(d, 'token'))).mode & 0o777).toBe(0o600);
    expect(await readdir(d)).toEqual(['token']);
  });

  it('keeps a file already made, answering what it holds; replaces an empty one', async () => {
    const d = await dir();
    await writeFile(join(d, 'node-id'), 'node-first\n');
    expect(await createFileDurably(join(d, 'node-id'), 'node-second\n')).toBe('node-first\n');
    expect(await readFile(join(d, 'node-id'), 'utf8')).toBe('node-first\n');
    await writeFile(join(d, 'empty'), '');
    expect(await createFileDurably(join(d, 'empty'), 'made\n')).toBe('made\n');
    expect(await readFile(join(d, 'empty'), 'utf8')).toBe('made\n');
    expect((await readdir(d)).sort()).toEqual(['empty', 'node-id']);
  });

  it('makers at once all answer the one content the file holds', async () => {
    const d = await dir();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => createFileDurably(join(d, 'node-id'), `node-${i}\n`)));
    const held = await readFile(join(d, 'node-id'), 'utf8');
    expect(new Set(answers)).toEqual(new Set([held]));
    expect(await readdir(d)).toEqual(['node-id']);
  });
});
