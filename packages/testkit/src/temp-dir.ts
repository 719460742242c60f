import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TempDir extends AsyncDisposable {
  path: string;
  remove(): Promise<void>;
}

/** A fresh directory under the OS temp dir, removed by `remove()` / `await using`. */
export async function tempDir(prefix = 'auditlake-'): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  const remove = () => rm(path, { recursive: true, force: true, maxRetries: 3 });
  return { path, remove, [Symbol.asyncDispose]: remove };
}
