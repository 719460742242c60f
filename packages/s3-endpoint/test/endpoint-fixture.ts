// Shared by the endpoint's tests: a real endpoint in a temp dir, an AWS SDK client for it, and a look at every file on disk.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { onTestFinished } from 'vitest';
import { startS3Endpoint, type S3Credentials, type S3Endpoint, type S3EndpointOptions } from '../src/index.js';

export const BUCKET = 'auditlake';
export const CREDENTIALS: S3Credentials = { accessKeyId: 'ALTESTKEY000000000001', secretAccessKey: 'test-secret-key-0123456789abcdefghijklmn' };

export interface Fixture {
  /** The parent of the endpoint's directory: nothing may ever be written here but that directory. */
  root: string;
  directory: string;
  endpoint: S3Endpoint;
  client(credentials?: S3Credentials): S3Client;
  /** Every file under `root`, relative to it, sorted. */
  files(): Promise<string[]>;
}

export async function startFixture(options: Partial<S3EndpointOptions> = {}): Promise<Fixture> {
  const root = await mkdtemp(join(tmpdir(), 's3-endpoint-'));
  onTestFinished(() => rm(root, { recursive: true, force: true }));
  const directory = join(root, 's3');
  const endpoint = await startS3Endpoint({ directory, host: '127.0.0.1', port: 0, buckets: [BUCKET], credentials: CREDENTIALS, ...options });
  onTestFinished(() => endpoint.close());
  const client = (credentials: S3Credentials = CREDENTIALS) => {
    const c = new S3Client({ region: 'us-east-1', endpoint: endpoint.url, forcePathStyle: true, credentials, maxAttempts: 1 });
    onTestFinished(() => c.destroy());
    return c;
  };
  const files = async () => {
    const entries = await readdir(root, { recursive: true, withFileTypes: true });
    return entries
      .filter((e) => e.isFile())
      .map((e) => relative(root, join(e.parentPath, e.name)))
      .sort();
  };
  return { root, directory, endpoint, client, files };
}

/** The S3 error code in an XML error body. */
export function errorCode(xml: string): string | undefined {
  return /<Code>([^<]*)<\/Code>/.exec(xml)?.[1];
}
