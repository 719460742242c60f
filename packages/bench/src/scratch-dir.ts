import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trackDir, untrackDir } from './process-cleanup.js';

/** A fresh directory under the OS temp dir for one benchmark's data, removed by `await using`. */
export interface ScratchDir extends AsyncDisposable {
  path: string;
}

/**
 * Also removed if the bench is interrupted (Ctrl-C, SIGTERM) before `await using` can run:
 * process-cleanup removes every scratch dir still in use on the way out.
 */
export async function scratchDir(prefix: string): Promise<ScratchDir> {
  const path = await mkdtemp(join(tmpdir(), `auditlake-bench-${prefix}-`));
  trackDir(path);
  return {
    path,
    [Symbol.asyncDispose]: async () => {
      await rm(path, { recursive: true, force: true, maxRetries: 3 });
      untrackDir(path);
    },
  };
}
