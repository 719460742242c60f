// The S3 endpoint a node embeds (s3rver underneath), started in a temp dir once per test file:
// for the lake and tiering tests alike, through `@auditlake/lake/testing`.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3ConnectionConfig } from '@auditlake/model';
import { startS3Endpoint, type S3Endpoint } from '@auditlake/s3-endpoint';
import { afterAll, beforeAll } from 'vitest';
import { S3Connections } from '../s3-connections.js';

export interface EmbeddedS3 {
  /** The endpoint (set before the file's first test). */
  readonly server: S3Endpoint;
  /** Its temp dir (the objects are under `s3/`), removed after the file's last test. */
  readonly dir: string;
  /** Connection `s3` to it, with `credentials`. */
  readonly connections: S3Connections;
  /** A new map holding connection `s3`'s config, for a test's own S3Connections (a subclass that counts or fails requests, a client of its own). */
  connectionConfigs(): Map<string, S3ConnectionConfig>;
}

/** Starts the endpoint with `bucket` before the file's tests and stops it (and removes its dir) after them. */
export function useEmbeddedS3(prefix: string, bucket: string, credentials: { accessKeyId: string; secretAccessKey: string }): EmbeddedS3 {
  const fixture = {
    connectionConfigs: (): Map<string, S3ConnectionConfig> => new Map([['s3', { id: 's3', endpoint: fixture.server.url, region: 'us-east-1', ...credentials, forcePathStyle: true }]]),
  } as { server: S3Endpoint; dir: string; connections: S3Connections; connectionConfigs(): Map<string, S3ConnectionConfig> };
  beforeAll(async () => {
    fixture.dir = await mkdtemp(join(tmpdir(), prefix));
    fixture.server = await startS3Endpoint({ directory: join(fixture.dir, 's3'), host: '127.0.0.1', port: 0, buckets: [bucket], credentials });
    fixture.connections = new S3Connections(fixture.connectionConfigs());
  });
  afterAll(async () => {
    fixture.connections?.close();
    await fixture.server?.close();
    if (fixture.dir !== undefined) await rm(fixture.dir, { recursive: true, force: true });
  });
  return fixture;
}
