// Goal: a generated admin token never starts with `-` (it would be read as an option by `--token "$TOKEN"`) and keeps at least 192 random bits.
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';

/** Bytes the mocked randomBytes returns instead of random ones, when set. */
const fixed = vi.hoisted(() => ({ byte: undefined as number | undefined }));
vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof import('node:crypto')>();
  return { ...crypto, randomBytes: (size: number) => (fixed.byte === undefined ? crypto.randomBytes(size) : Buffer.alloc(size, fixed.byte)) };
});

const { loadOrCreateAdminToken, newAdminToken } = await import('../src/node-identity.js');

describe('generated admin token', () => {
  afterEach(() => {
    fixed.byte = undefined;
  });

  it('does not start with - even when the random bytes would make a base64url token start with it', async () => {
    // 0xf8 = 0b111110_00: base64url's 62nd character, '-', first.
    fixed.byte = 0xf8;
    expect(Buffer.alloc(24, 0xf8).toString('base64url')[0]).toBe('-');
    const dir = await mkdtemp(join(tmpdir(), 'auditlake-token-'));
    try {
      const { token, generated, path } = await loadOrCreateAdminToken(dir);
      expect(generated).toBe(true);
      expect(token.startsWith('-')).toBe(false);
      expect(await readFile(path, 'utf8')).toBe(`${token}\n`);
      expect((await stat(path)).mode & 0o777).toBe(0o600);
      // Kept: the next start reads the same one back.
      expect(await loadOrCreateAdminToken(dir)).toEqual({ token, generated: false, path });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('is 64 hex digits (256 random bits), and none of many starts with -', () => {
    const tokens = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const token = newAdminToken();
      expect(token).toMatch(/^[0-9a-f]{64}$/);
      tokens.add(token);
    }
    expect(tokens.size).toBe(5000);
  });
});
