import { readdir, realpath, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { AuditError, AuditErrorCode } from '@auditlake/model';

/** One input: a file (by absolute path) or standard input. */
export type InputFile = { kind: 'file'; path: string; sizeBytes: number; mtimeMs: number } | { kind: 'stdin'; path: '-' };

/**
 * The files PATH arguments name, in order: a file as given, a directory as every regular file
 * below it, symbolic links followed (sorted by path, hidden entries skipped), `-` as standard input. Each file once,
 * even when named twice. A missing path is a usage error naming it.
 */
export async function inputFiles(paths: readonly string[]): Promise<InputFile[]> {
  const files: InputFile[] = [];
  const seen = new Set<string>();
  const add = (file: InputFile) => {
    if (seen.has(file.path)) return;
    seen.add(file.path);
    files.push(file);
  };
  for (const path of paths) {
    if (path === '-') {
      add({ kind: 'stdin', path: '-' });
      continue;
    }
    const absolute = resolve(path);
    let info;
    try {
      info = await stat(absolute);
    } catch (err) {
      throw new AuditError(AuditErrorCode.BAD_REQUEST, `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
    }
    if (info.isDirectory()) for (const file of await filesBelow(absolute, new Set([await realpath(absolute)]))) add(file);
    else add({ kind: 'file', path: absolute, sizeBytes: info.size, mtimeMs: info.mtimeMs });
  }
  return files;
}

/**
 * The regular files below `dir`. A symbolic link counts as what it points to (Kubernetes's
 * /var/log/containers/*.log are links to the files: they were skipped without a word; review);
 * a directory already on the way down (`visited`, by real path) is not entered again, so a link
 * loop ends; a link to nothing is left out.
 */
async function filesBelow(dir: string, visited: ReadonlySet<string>): Promise<InputFile[]> {
  const entries = (await readdir(dir, { withFileTypes: true })).filter((e) => !e.name.startsWith('.')).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const files: InputFile[] = [];
  for (const entry of entries) {
    const path = join(dir, entry.name);
    let info;
    if (entry.isSymbolicLink()) {
      info = await stat(path).catch(() => undefined);
      if (info === undefined) continue;
    }
    if (entry.isDirectory() || info?.isDirectory() === true) {
      const real = await realpath(path);
      if (visited.has(real)) continue;
      // One by one, not push(...): a directory of 200,000 files is more arguments than a call takes (review).
      for (const below of await filesBelow(path, new Set([...visited, real]))) files.push(below);
    } else if (entry.isFile() || info?.isFile() === true) {
      info ??= await stat(path);
      files.push({ kind: 'file', path, sizeBytes: info.size, mtimeMs: info.mtimeMs });
    }
  }
  return files;
}
