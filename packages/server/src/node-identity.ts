import { randomBytes, randomUUID } from 'node:crypto';
import { createFileDurably } from '@auditlake/integrity';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

async function readTrimmed(path: string): Promise<string | undefined> {
  try {
    const text = (await readFile(path, 'utf8')).trim();
    return text === '' ? undefined : text;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** This node's stable id, kept in `<dataDir>/node-id` (created on first start). */
export async function loadNodeId(dataDir: string): Promise<string> {
  const path = join(dataDir, 'node-id');
  const existing = await readTrimmed(path);
  if (existing) return existing;
  const nodeId = `node-${randomUUID().slice(0, 8)}`;
  await mkdir(dataDir, { recursive: true });
  // An empty file (a crash before an older version's unsynced write reached the disk) is
  // replaced; one another process starting at once made first holds.
  return (await createFileDurably(path, nodeId + '\n')).trim();
}

export interface AdminToken {
  token: string;
  /** True when this start generated it (the CLI prints it once, then). */
  generated: boolean;
  path: string;
}

/**
 * A new admin token: 256 random bits as 64 lower-case hex digits. Never starts with `-` (a
 * base64url token did, 1 time in 64, and then `--token "$TOKEN"` read it as an option) and
 * needs no quoting in a shell, a URL or a header.
 */
export function newAdminToken(): string {
  return randomBytes(32).toString('hex');
}

/** The generated admin token, kept in `<dataDir>/admin-token` readable only by its owner. */
export async function loadOrCreateAdminToken(dataDir: string): Promise<AdminToken> {
  const path = join(dataDir, 'admin-token');
  const existing = await readTrimmed(path);
  if (existing) return { token: existing, generated: false, path };
  const token = newAdminToken();
  await mkdir(dataDir, { recursive: true });
  const held = (await createFileDurably(path, token + '\n', 0o600)).trim();
  return { token: held, generated: held === token, path };
}
