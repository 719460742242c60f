import { randomBytes } from 'node:crypto';
import { createFileDurably } from '@auditlake/integrity';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { S3Credentials } from '@auditlake/s3-endpoint';

export const ACCESS_KEY_ENV = 'AUDITLAKE_EMBEDDED_S3_ACCESS_KEY';
export const SECRET_KEY_ENV = 'AUDITLAKE_EMBEDDED_S3_SECRET_KEY';
const FILE_NAME = 'embedded-s3-credentials';
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export interface EmbeddedS3Credentials extends S3Credentials {
  /** Where they came from: generated this start, read from the data dir, or given (env/config). */
  origin: 'generated' | 'data-dir' | 'given';
  /** The data-dir file, for the first two origins. */
  path?: string;
}

function accessKeyId(): string {
  // AWS-shaped: 20 upper-case characters, here `AL` and 18 random base-32 characters.
  return 'AL' + [...randomBytes(18)].map((b) => BASE32[b % 32]).join('');
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * A secret key of 40 letters and digits (about 238 bits), AWS-sized. Not base64url: a secret
 * that begins with '-' (one in 64 of those) is taken for an option on a command line
 * (`auditlake verify --secret-access-key -…` is refused as ambiguous).
 */
export function generateSecretAccessKey(): string {
  let secret = '';
  while (secret.length < 40) {
    for (const byte of randomBytes(48)) {
      // Bytes at or above 248 (= 4 × 62) are dropped, so every character is equally likely.
      if (byte < 248 && secret.length < 40) secret += ALPHANUMERIC[byte % 62];
    }
  }
  return secret;
}

function parseFile(text: string, path: string): S3Credentials {
  const values = new Map<string, string>();
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) values.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
  }
  const id = values.get(ACCESS_KEY_ENV);
  const secret = values.get(SECRET_KEY_ENV);
  if (!id || !secret) throw new Error(`${path} must hold ${ACCESS_KEY_ENV}=… and ${SECRET_KEY_ENV}=… lines; delete it to generate new credentials`);
  return { accessKeyId: id, secretAccessKey: secret };
}

/**
 * The embedded endpoint's key pair, kept in `<dataDir>/embedded-s3-credentials` (mode 0600,
 * like the admin token) as `NAME=value` lines a shell can source. Generated at first start.
 */
export async function loadOrCreateEmbeddedS3Credentials(dataDir: string): Promise<EmbeddedS3Credentials> {
  const path = join(dataDir, FILE_NAME);
  let text = '';
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  // Empty: an older version's unsynced write lost to a crash. Made anew, like a missing file.
  if (text.trim() !== '') return { ...parseFile(text, path), origin: 'data-dir', path };
  const credentials = { accessKeyId: accessKeyId(), secretAccessKey: generateSecretAccessKey() };
  await mkdir(dataDir, { recursive: true });
  const written = `${ACCESS_KEY_ENV}=${credentials.accessKeyId}\n${SECRET_KEY_ENV}=${credentials.secretAccessKey}\n`;
  const held = await createFileDurably(path, written, 0o600);
  // Another process starting on this data dir at once made them first: theirs hold.
  if (held !== written) return { ...parseFile(held, path), origin: 'data-dir', path };
  return { ...credentials, origin: 'generated', path };
}
