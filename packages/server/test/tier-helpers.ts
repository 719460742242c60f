// Shared setup for tiering tests: a real S3 endpoint over HTTP (signed requests only), DuckDB as the independent reader.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { S3Connections } from '@auditlake/lake';
import { startS3Endpoint, type S3Endpoint } from '@auditlake/s3-endpoint';
import { expect, onTestFinished } from 'vitest';
import type { TestNode } from './test-node.js';

/** Fast tiering for tests: sweeps every 100 ms, no settle window, short backoff. */
export const FAST_TIERING = {
  'auditlake.audit.tier.interval.ms': '100',
  'auditlake.audit.tier.ingest.settle.ms': '0',
  'auditlake.audit.tier.backoff.initial.ms': '200',
  'auditlake.audit.tier.backoff.max.ms': '800',
};

export interface ExternalS3 {
  endpoint: string;
  port: number;
  props(id: string): Record<string, string>;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** The key pair the external endpoint requires (every request signed with it). */
export const EXTERNAL_S3_CREDENTIALS = { accessKeyId: 'ALEXTERNALTEST000001', secretAccessKey: 'external-test-secret-0123456789abcdefgh' };

/** An S3 endpoint the test can stop and start again on the same port and directory (an S3 outage). */
export async function externalS3(bucket = 'ext'): Promise<ExternalS3> {
  const directory = await mkdtemp(join(tmpdir(), 'auditlake-s3-'));
  onTestFinished(() => rm(directory, { recursive: true, force: true }));
  let server: S3Endpoint | undefined;
  let port = 0;
  const start = async () => {
    server = await startS3Endpoint({ directory, host: '127.0.0.1', port, buckets: [bucket], credentials: EXTERNAL_S3_CREDENTIALS });
    port = server.port;
  };
  const stop = async () => {
    await server?.close();
    server = undefined;
  };
  await start();
  onTestFinished(stop);
  return {
    get endpoint() {
      return `http://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    props: (id) => ({
      [`auditlake.s3.connections.${id}.endpoint`]: `http://127.0.0.1:${port}`,
      [`auditlake.s3.connections.${id}.region`]: 'us-east-1',
      [`auditlake.s3.connections.${id}.accessKeyId`]: EXTERNAL_S3_CREDENTIALS.accessKeyId,
      [`auditlake.s3.connections.${id}.secretAccessKey`]: EXTERNAL_S3_CREDENTIALS.secretAccessKey,
      [`auditlake.s3.connections.${id}.forcePathStyle`]: 'true',
    }),
    stop,
    start,
  };
}

export async function postSettings(t: TestNode, body: Record<string, unknown>) {
  const res = await t.request('/admin/audit/settings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> & { tierStatus: TierStatusJson; error?: string } };
}

export interface TierStatusJson {
  mode: string;
  lastSuccessMs: number;
  lastFailureMs: number;
  lastError: string | null;
  retainLocalDays: number;
  watermark: { ingestTs: number; seq: number };
  backlog: number;
  deferred: number;
  erasureHoldSeq: number | null;
  retentionHeldByTerm: { throughSeq: number; watermarkSeq: number } | null;
  nextAttemptMs: number;
  consecutiveFailures: number;
  lastBatch: { count: number; bytes: number; ms: number } | null;
}

export async function tierStatus(t: TestNode): Promise<TierStatusJson> {
  const res = await t.request('/admin/audit/settings');
  return ((await res.json()) as { tierStatus: TierStatusJson }).tierStatus;
}

/** Waits until every stored event is tiered (backlog 0, watermark at the log's end). */
export async function waitUntilTiered(t: TestNode, timeoutMs = 20_000): Promise<TierStatusJson> {
  let status: TierStatusJson | undefined;
  await expect
    .poll(
      async () => {
        status = await tierStatus(t);
        return status.backlog === 0 && status.watermark.seq === t.node.store.position.lastSeq && t.node.store.position.lastSeq > 0;
      },
      { timeout: timeoutMs, interval: 100 },
    )
    .toBe(true);
  return status!;
}

/**
 * Downloads every object under `s3://bucket/prefix` over S3 HTTP into a temp dir (keys kept),
 * so DuckDB — a reader we did not write — can read the files as they are in S3.
 */
export async function downloadPrefix(connectionProps: Record<string, string>, id: string, bucket: string, prefix: string): Promise<string> {
  const { resolveConfig } = await import('@auditlake/model');
  const config = resolveConfig(new Map(Object.entries(connectionProps)));
  const connections = new S3Connections(config.s3Connections);
  onTestFinished(() => connections.close());
  const objects = connections.bucket(id, bucket);
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-download-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  for (const key of await objects.list(prefix)) {
    const path = join(dir, key);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, await objects.get(key));
  }
  return dir;
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
