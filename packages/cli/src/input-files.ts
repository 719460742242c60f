import { readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { AuditError, AuditErrorCode } from '@auditlake/model';

/** One input: a file (by absolute path) or standard input. */
export type InputFile = { kind: 'file'; path: string; sizeBytes: number; mtimeMs: number } | { kind: 'stdin'; path: '-' };

/**
 * The files PATH arguments name, in order: a file as given, a directory as every regular file
 * below it (sorted by path, hidden entries skipped), `-` as standard input. Each file once,
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
    if (info.isDirectory()) for (const file of await filesBelow(absolute)) add(file);
    else add({ kind: 'file', path: absolute, sizeBytes: info.size, mtimeMs: info.mtimeMs });
  }
  return files;
}

async function filesBelow(dir: string): Promise<InputFile[]> {
  const entries = (await readdir(dir, { withFileTypes: true })).filter((e) => !e.name.startsWith('.')).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const files: InputFile[] = [];
  for (const entry of entries) {
    const path = join(dir, entry.name);
    // One by one, not push(...): a directory of 200,000 files is more arguments than a call takes (review).
    if (entry.isDirectory()) for (const below of await filesBelow(path)) files.push(below);
    else if (entry.isFile()) {
      const info = await stat(path);
      files.push({ kind: 'file', path, sizeBytes: info.size, mtimeMs: info.mtimeMs });
    }
  }
  return files;
}
