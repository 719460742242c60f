import { randomBytes } from 'node:crypto';
import { link, open, readFile, rename, unlink } from 'node:fs/promises';
import { AuditError, AuditErrorCode } from '@auditlake/model';

/**
 * `F.lock` beside a resume file `F`, held by one import at a time. Two runs sharing a resume file
 * each kept the whole state in memory and wrote it over the other's, so one run's progress was
 * lost, and both wrote through the same temporary copy, so one could rename the other's
 * half-written bytes into place (review). The lock is a file created exclusively holding the
 * holder's process id and a token of its own; a lock whose process no longer runs (an import
 * killed) is taken over, so resuming after a crash needs nothing removed by hand.
 */
export class ResumeLock {
  readonly path: string;
  readonly #text: string;
  #released = false;

  private constructor(path: string, text: string) {
    this.path = path;
    this.#text = text;
  }

  /** Takes the lock of `resumePath`, or refuses (BAD_REQUEST) naming the import that holds it. */
  static async take(resumePath: string): Promise<ResumeLock> {
    const path = `${resumePath}.lock`;
    const text = `${JSON.stringify({ pid: process.pid, token: randomBytes(8).toString('hex') })}\n`;
    // Twice at most: once, and once more after taking a dead holder's lock away.
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await createWhole(path, text);
        return new ResumeLock(path, text);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
          throw new AuditError(AuditErrorCode.BAD_REQUEST, `cannot write the resume file ${resumePath} (its lock ${path}): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
        }
      }
      const held = await readFile(path, 'utf8').catch(() => undefined);
      // Gone meanwhile (its holder finished): try again.
      if (held === undefined) continue;
      const pid = holderPid(held);
      if (pid !== undefined && isRunning(pid)) {
        throw new AuditError(
          AuditErrorCode.BAD_REQUEST,
          `the resume file ${resumePath} is in use by another import (process ${pid}, holding ${path}); wait for it to finish, or, if process ${pid} is not an import, remove ${path}`,
        );
      }
      await takeAwayStale(path, held);
    }
    throw new AuditError(AuditErrorCode.BAD_REQUEST, `the resume file ${resumePath} is in use by another import that started at the same time (it holds ${path}); run one import per resume file`);
  }

  /** Removes the lock if it is still this run's. Idempotent. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    const held = await readFile(this.path, 'utf8').catch(() => undefined);
    if (held === this.#text) await unlink(this.path).catch(() => undefined);
  }
}

/**
 * Moves a dead holder's lock out of the way. Moved first and read after, so a lock another run
 * created meanwhile (it saw the same dead holder and was quicker) is not deleted: that one is
 * put back, where it was unless a third run took the name in between.
 */
async function takeAwayStale(path: string, staleText: string): Promise<void> {
  const moved = `${path}.${randomBytes(6).toString('hex')}.stale`;
  try {
    await rename(path, moved);
  } catch {
    return; // gone already: the name is free to try
  }
  const text = await readFile(moved, 'utf8').catch(() => undefined);
  if (text !== staleText) await link(moved, path).catch(() => undefined);
  await unlink(moved).catch(() => undefined);
}

/**
 * Creates `path` holding `text` in one step (EEXIST when the name is taken): written under a
 * name of its own and linked into place, so no reader ever sees the lock empty — an empty lock
 * read as a dead holder's would be taken away from the run that was just writing it.
 */
async function createWhole(path: string, text: string): Promise<void> {
  const temporary = `${path}.${randomBytes(6).toString('hex')}.new`;
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(text);
  } finally {
    await handle.close();
  }
  try {
    await link(temporary, path);
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
}

function holderPid(text: string): number | undefined {
  try {
    const pid = (JSON.parse(text) as { pid?: unknown }).pid;
    return typeof pid === 'number' && Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process of this id runs (one of another user's answers EPERM: it runs). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
