import { open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Writes `text` to `path` so that a crash leaves either what was there or the whole new file:
 * written and synced under a temporary name, renamed over `path`, then the directory synced so
 * the rename survives too. The files a node makes at its first start (its id, admin token,
 * signing key) were written without syncing, and after a crash soon after were found empty:
 * the node could not start again.
 */
export async function writeFileDurably(path: string, text: string, mode = 0o644): Promise<void> {
  const temporary = `${path}.tmp`;
  const file = await open(temporary, 'w', mode);
  try {
    await file.writeFile(text);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temporary, path);
  const directory = await open(dirname(path), 'r');
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}
