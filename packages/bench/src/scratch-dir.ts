import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh directory under the OS temp dir for one benchmark's data, removed by `await using`. */
export interface ScratchDir extends AsyncDisposable {
  path: string;
}

export async function scratchDir(prefix: string): Promise<ScratchDir> {
  const path = await mkdtemp(join(tmpdir(), `auditlake-bench-${prefix}-`));
  return { path, [Symbol.asyncDispose]: () => rm(path, { recursive: true, force: true, maxRetries: 3 }) };
}
