import { mkdir, stat } from 'node:fs/promises';

/** Permission bits a data directory is created with: its owner only. */
export const DATA_DIR_MODE = 0o700;

/**
 * Creates the node's data directory readable by its owner only, before anything is written in
 * it: it holds every event (secrets a masking rule missed among them), the LevelDB files,
 * the embedded S3 endpoint's objects, the node's signing key and tokens. LevelDB and the S3
 * endpoint create their files with the process umask (0644 under the usual 022), so the
 * directory is what keeps other local users out. An existing directory is left as the
 * operator made it (a backup agent may read it by group), and a warning says when others can
 * reach it.
 */
export async function prepareDataDir(dataDir: string, warn: (message: string) => void): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: DATA_DIR_MODE });
  const mode = (await stat(dataDir)).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    warn(`the data directory ${dataDir} can be read by other users (mode ${mode.toString(8).padStart(4, '0')}): it holds every stored event and the node's keys; chmod 700 it unless something else must read it`);
  }
}
