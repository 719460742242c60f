// Shared by the real-process tiering tests: S3 access and the readers we did not write.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { resolveConfig } from '@auditlake/model';
import { ParquetTierSource, S3Connections, type ObjectStore } from '@auditlake/lake';
import type { S3Credentials } from '@auditlake/s3-endpoint';
import { routeAwsS3To as routeRequestsTo } from '@auditlake/lake/testing';
import { expect, onTestFinished } from 'vitest';

/** A bucket on a local S3 endpoint, every request signed with `credentials`; closed when the test ends. */
export function s3Bucket(endpoint: string, bucket: string, credentials: S3Credentials): ObjectStore {
  const config = resolveConfig(
    new Map([
      ['auditlake.s3.connections.t.endpoint', endpoint],
      ['auditlake.s3.connections.t.accessKeyId', credentials.accessKeyId],
      ['auditlake.s3.connections.t.secretAccessKey', credentials.secretAccessKey],
    ]),
  );
  const connections = new S3Connections(config.s3Connections);
  onTestFinished(() => connections.close());
  return connections.bucket('t', bucket);
}

/** Copies every object under `prefix` into a temp dir (keys kept), for DuckDB to read. */
export async function downloadPrefix(objects: ObjectStore, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-download-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  for (const key of await objects.list(prefix)) {
    await mkdir(dirname(join(dir, key)), { recursive: true });
    await writeFile(join(dir, key), await objects.get(key));
  }
  return dir;
}

/** Copies the objects `keys` into a temp dir (keys kept); answers the dir. */
export async function downloadKeys(objects: ObjectStore, keys: readonly string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-download-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  for (const key of keys) {
    await mkdir(dirname(join(dir, key)), { recursive: true });
    await writeFile(join(dir, key), await objects.get(key));
  }
  return dir;
}

/**
 * The files a Parquet tier location's readers read — those its commit markers list, compactions
 * applied — copied into a temp dir: a DuckDB `read_parquet` list (files of a crashed or losing
 * attempt are in the bucket too, unreferenced, until orphan cleanup removes them).
 */
export async function downloadCommittedParquet(endpoint: string, path: string, credentials: S3Credentials): Promise<string> {
  const connections = new S3Connections(
    resolveConfig(
      new Map([
        ['auditlake.s3.connections.t.endpoint', endpoint],
        ['auditlake.s3.connections.t.accessKeyId', credentials.accessKeyId],
        ['auditlake.s3.connections.t.secretAccessKey', credentials.secretAccessKey],
      ]),
    ).s3Connections,
  );
  const source = new ParquetTierSource(connections, { mode: 'parquet', path, connectionId: 't' });
  onTestFinished(async () => {
    await source.close();
    connections.close();
  });
  const bucket = new URL(path).host;
  return downloadKeys(connections.bucket('t', bucket), (await source.listFiles()).map((file) => file.key));
}

/** Runs SQL in a fresh in-memory DuckDB. */
export async function duckdb(sql: string): Promise<Record<string, unknown>[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    return (await connection.runAndReadAll(sql)).getRowObjectsJson();
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** icebird's requests to AWS S3 hosts go to the local endpoint, signed, for the rest of the test. */
export function routeAwsS3To(endpoint: string, credentials: S3Credentials): void {
  onTestFinished(routeRequestsTo(endpoint, credentials));
}

/** Waits until the node's tierStatus says nothing is left to tier. */
export async function waitUntilTiered(url: string, adminToken: string, isDone: (status: { backlog: number; watermark: { seq: number } }) => boolean | Promise<boolean> = (s) => s.backlog === 0 && s.watermark.seq > 0): Promise<void> {
  await expect
    .poll(
      async () => {
        const res = await fetch(`${url}/admin/audit/settings`, { headers: { authorization: `Token ${adminToken}` } });
        return isDone(((await res.json()) as { tierStatus: { backlog: number; watermark: { seq: number } } }).tierStatus);
      },
      { timeout: 20_000, interval: 100 },
    )
    .toBe(true);
}
