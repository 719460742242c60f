// Goal: the files an import reads are listed from any directory, however many files a subdirectory holds.
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inputFiles } from '../src/input-files.js';
import { tempDir } from './import-node.js';

describe('input files', () => {
  it('lists a directory whose subdirectory holds more files than a call takes arguments (130,000)', async () => {
    const dir = await tempDir();
    const below = join(dir, 'logs', '2026');
    await mkdir(below, { recursive: true });
    const count = 130_000;
    for (let at = 0; at < count; at += 2_000) {
      await Promise.all(Array.from({ length: Math.min(2_000, count - at) }, (_, i) => writeFile(join(below, `f${String(at + i).padStart(6, '0')}.log`), '')));
    }
    const files = await inputFiles([join(dir, 'logs')]);
    expect(files).toHaveLength(count);
    expect(files[0]).toMatchObject({ kind: 'file', path: join(below, 'f000000.log') });
    expect(files.at(-1)).toMatchObject({ kind: 'file', path: join(below, 'f129999.log') });
  }, 120_000);

  it('follows symbolic links to files and directories (as Kubernetes keeps container logs), and stops at a link loop', async () => {
    const dir = await tempDir();
    const real = join(dir, 'real');
    const logs = join(dir, 'logs');
    await mkdir(join(real, 'pods'), { recursive: true });
    await mkdir(logs);
    await writeFile(join(real, 'pods', 'a.log'), 'x\n');
    await writeFile(join(real, 'b.log'), 'y\n');
    await symlink(join(real, 'b.log'), join(logs, 'b.log'));
    await symlink(join(real, 'pods'), join(logs, 'pods'));
    await symlink(logs, join(logs, 'loop'));
    await symlink(join(dir, 'nowhere'), join(logs, 'dangling.log'));
    const files = await inputFiles([logs]);
    expect(files.map((f) => f.path)).toEqual([join(logs, 'b.log'), join(logs, 'pods', 'a.log')]);
    expect(files[0]).toMatchObject({ kind: 'file', sizeBytes: 2 });
  });
});
