import { randomBytes } from 'node:crypto';
import { link, open, readFile, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';

async function syncDirectoryOf(path: string): Promise<void> {
  const directory = await open(dirname(path), 'r');
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}

/**
 * Creates `path` holding `text`, unless a non-empty file is there already, and answers what the
 * file then holds (`text`, or what another process put there first): the files a node makes at
 * its first start (its id, admin token, signing key) are read back by it, so two processes
 * started at once on one data dir agree on them. A crash leaves no file, an empty one (made by a
 * version that did not sync it: it is replaced) or the whole text: it is written and synced
 * under a name of its own, linked into place (which fails if the name is taken) or renamed over
 * an empty file, and the directory synced so the new name survives too. Written without that,
 * these files were found empty after a crash soon after the first start, and the node could
 * not start again.
 */
export async function createFileDurably(path: string, text: string, mode = 0o644): Promise<string> {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const file = await open(temporary, 'wx', mode);
  try {
    await file.writeFile(text);
    await file.sync();
  } finally {
    await file.close();
  }
  try {
    await link(temporary, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      await unlink(temporary).catch(() => undefined);
      throw err;
    }
    const existing = await readFile(path, 'utf8');
    if (existing.trim() !== '') {
      await unlink(temporary);
      return existing;
    }
    await rename(temporary, path);
    await syncDirectoryOf(path);
    return text;
  }
  await unlink(temporary);
  await syncDirectoryOf(path);
  return text;
}
