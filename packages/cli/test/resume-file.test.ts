// Goal: the resume file is written at most once an interval while a run goes on, and whole when it stops: rewriting it after every batch and file made an import of many files quadratic. A file removed while the run goes on (a rotation) is neither recorded nor fatal, and a resume file that cannot be written is refused before anything is sent. One run at a time holds a resume file; a killed run's lock is taken over.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
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
    await resume.close();
    const again = await ResumeFile.open(path, 'lho', () => now);
    expect(await again.startFor(files[1]!)).toEqual({ skip: true });
    await again.close();
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
    await resume.close();
    const next = await ResumeFile.open(path, 'lho', () => 0);
    expect(await next.startFor({ ...kept, sizeBytes: 5 })).toMatchObject({ skip: false, line: 0 });
    await next.close();
  });

  it('refuses a resume file in a directory that does not exist when opened, naming it', async () => {
    const dir = await tempDir();
    const path = join(dir, 'no-such-dir', 'progress.json');
    await expect(ResumeFile.open(path, 'lho')).rejects.toThrow(`cannot write the resume file ${path} (its lock ${path}.lock): ENOENT`);
  });
});

/** The id of a process that ran and has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await once(child, 'exit');
  return child.pid!;
}

describe('resume file lock', () => {
  it('is held by one run at a time: a second open is refused naming the holder, and works once the first closes', async () => {
    const dir = await tempDir();
    const path = join(dir, 'progress.json');
    const first = await ResumeFile.open(path, 'lho');
    expect(JSON.parse(await readFile(`${path}.lock`, 'utf8'))).toMatchObject({ pid: process.pid });
    await expect(ResumeFile.open(path, 'lho')).rejects.toThrow(`the resume file ${path} is in use by another import (process ${process.pid}, holding ${path}.lock)`);
    await first.close();
    await first.close();
    await expect(stat(`${path}.lock`)).rejects.toThrow(/ENOENT/);
    const second = await ResumeFile.open(path, 'lho');
    await second.close();
  });

  it('refuses while another running process holds it, and takes over the lock of one that no longer runs', async () => {
    const dir = await tempDir();
    const path = join(dir, 'progress.json');
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    try {
      await writeFile(`${path}.lock`, `${JSON.stringify({ pid: sleeper.pid, token: 'a' })}\n`);
      await expect(ResumeFile.open(path, 'lho')).rejects.toThrow(`in use by another import (process ${sleeper.pid}`);
      // Refused: the other's lock is left as it was.
      expect(JSON.parse(await readFile(`${path}.lock`, 'utf8'))).toMatchObject({ pid: sleeper.pid });
    } finally {
      sleeper.kill('SIGKILL');
    }
    await once(sleeper, 'exit').catch(() => undefined);
    const dead = await deadPid();
    await writeFile(`${path}.lock`, `${JSON.stringify({ pid: dead, token: 'b' })}\n`);
    const resume = await ResumeFile.open(path, 'lho');
    expect(JSON.parse(await readFile(`${path}.lock`, 'utf8'))).toMatchObject({ pid: process.pid });
    await resume.close();
    // Nothing of the takeover stays beside it.
    expect((await readdir(dir)).sort()).toEqual([]);
  });

  it('takes over a lock that names no process (empty, not JSON) and releases it when the resume file is refused', async () => {
    const dir = await tempDir();
    const path = join(dir, 'progress.json');
    await writeFile(`${path}.lock`, '');
    await writeFile(path, 'not json');
    await expect(ResumeFile.open(path, 'lho')).rejects.toThrow('is not one this command wrote (not JSON)');
    expect((await readdir(dir)).sort()).toEqual(['progress.json']);
  });

  it('does not remove a lock that another run holds now, on release', async () => {
    const dir = await tempDir();
    const path = join(dir, 'progress.json');
    const resume = await ResumeFile.open(path, 'lho');
    // Its lock taken away and another's in its place (an operator removed it, another run started).
    await rm(`${path}.lock`);
    await writeFile(`${path}.lock`, `${JSON.stringify({ pid: process.pid, token: 'other' })}\n`);
    await resume.close();
    expect(JSON.parse(await readFile(`${path}.lock`, 'utf8'))).toEqual({ pid: process.pid, token: 'other' });
  });
});
