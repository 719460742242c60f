// Goal: the resume file is written at most once an interval while a run goes on, and whole when it stops: rewriting it after every batch and file made an import of many files quadratic. A file removed while the run goes on (a rotation) is neither recorded nor fatal, and a resume file that cannot be written is refused before anything is sent.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { InputFile } from '../src/input-files.js';
import { ResumeFile, WRITE_INTERVAL_MS } from '../src/resume-file.js';
import { tempDir } from './import-node.js';

async function linesOf(path: string): Promise<Record<string, number>> {
  const state = JSON.parse(await readFile(path, 'utf8')) as { files: Record<string, { line: number }> };
  const lines: Record<string, number> = {};
  for (const [name, progress] of Object.entries(state.files)) lines[name.split('/').at(-1) as string] = progress.line;
  return lines;
}

describe('resume file writes', () => {
  it('records every file but writes at most once an interval, then all of it on flush or finish', async () => {
    const dir = await tempDir();
    const files: InputFile[] = [];
    for (let i = 0; i < 3; i++) {
      const path = join(dir, `f${i}.log`);
      await writeFile(path, 'x\n');
      files.push({ kind: 'file', path, sizeBytes: 2, mtimeMs: 1 });
    }
    let now = 0;
    const path = join(dir, 'progress.json');
    const resume = await ResumeFile.open(path, 'lho', () => now);
    await resume.record(files[0]!, 1, true, 0);
    // Within the interval: kept, not written.
    now += WRITE_INTERVAL_MS - 1;
    await resume.record(files[1]!, 1, true, 0);
    expect(await linesOf(path)).toEqual({ 'f0.log': 1 });
    // Past it: written with everything recorded.
    now += 1;
    await resume.record(files[2]!, 1, false, 0);
    expect(await linesOf(path)).toEqual({ 'f0.log': 1, 'f1.log': 1, 'f2.log': 1 });
    await resume.record(files[2]!, 2, true, 0);
    expect((await linesOf(path))['f2.log']).toBe(1);
    await resume.flush();
    expect((await linesOf(path))['f2.log']).toBe(2);
    // A resumed run reads what was written.
    const again = await ResumeFile.open(path, 'lho', () => now);
    expect(await again.startFor(files[1]!)).toEqual({ skip: true });
  });
});

describe('resume file and files that go away', () => {
  it('records nothing for a file removed since it was listed, without failing, and reads a recorded one that is gone as new', async () => {
    const dir = await tempDir();
    const kept: InputFile = { kind: 'file', path: join(dir, 'kept.log'), sizeBytes: 2, mtimeMs: 1 };
    const gone: InputFile = { kind: 'file', path: join(dir, 'gone.log'), sizeBytes: 2, mtimeMs: 1 };
    await writeFile(kept.path, 'x\n');
    const path = join(dir, 'progress.json');
    const resume = await ResumeFile.open(path, 'lho', () => 0);
    await resume.record(gone, 1, false, 0);
    await resume.record(kept, 1, true, 0);
    await resume.flush();
    expect(await linesOf(path)).toEqual({ 'kept.log': 1 });
    // Recorded, then removed before the next run reads it: from the start.
    await rm(kept.path);
    const next = await ResumeFile.open(path, 'lho', () => 0);
    expect(await next.startFor({ ...kept, sizeBytes: 5 })).toMatchObject({ skip: false, line: 0 });
  });

  it('refuses a resume file in a directory that does not exist when opened, naming it', async () => {
    const dir = await tempDir();
    const path = join(dir, 'no-such-dir', 'progress.json');
    await expect(ResumeFile.open(path, 'lho')).rejects.toThrow(`cannot write the resume file ${path} (its temporary copy ${path}.tmp): ENOENT`);
  });
});
